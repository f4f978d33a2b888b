"""`run --web`: the live page, opened in a real headless Chromium while the daemon referees."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from test_report import chromium

ROOT = Path(__file__).resolve().parents[1]
DOCS_SHOT = ROOT / "docs" / "pictures" / "live-page.png"


class Daemon:
    """``firmware-host run --web 127.0.0.1:0 --json`` on the virtual table; its lines read."""

    def __init__(self, *options: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "firmware_host", "run", "--web", "127.0.0.1:0", "--json"]
            + list(options),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.lines: list[dict] = []
        self.err: list[str] = []
        self.url: str | None = None
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)
            if "live page: " in line:
                self.url = line.split("live page: ")[1].split()[0]

    def wait_url(self, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        while self.url is None and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.1)
        assert self.url is not None, "".join(self.err)
        return self.url

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def test_the_page_shows_the_daemons_verdicts_lamp_state_and_health():
    from selenium.webdriver.common.by import By

    daemon = Daemon("--seed", "3", "--minutes", "1", "--speed", "3")
    browser = None
    try:
        url = daemon.wait_url()
        browser = chromium()
        browser.set_window_size(1100, 800)
        browser.get(url)
        shown: list[dict] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            items = browser.find_elements(By.CSS_SELECTOR, "#verdicts li[data-line]")
            shown = [json.loads(li.get_attribute("data-line")) for li in items]
            final = [v for v in daemon.lines if v.get("kind") == "verdict"]
            if any(v in final for v in shown) and len(final) >= 2:
                break
            time.sleep(0.2)
        printed = [v for v in daemon.lines if v.get("kind") == "verdict"]
        assert shown and all(v in printed for v in shown), (shown, printed)
        lamp = browser.find_element(By.ID, "lamp")
        assert lamp.get_attribute("class") in ("legal", "foul", "referee", "warning")
        assert "player" in browser.find_element(By.ID, "state").text
        assert "link up" in browser.find_element(By.ID, "health").text
        with urllib.request.urlopen(url + "healthz", timeout=10) as answer:
            health = json.load(answer)
        assert answer.status == 200 and health["link"] == "up" and health["problems"] == []
        browser.save_screenshot(str(DOCS_SHOT))
    finally:
        if browser is not None:
            browser.quit()
        daemon.close()


def test_a_port_in_use_is_one_line_and_status_2():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "firmware_host", "run", "--scenario", "push"]
            + ["--web", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert f"--web 127.0.0.1:{port}: cannot listen" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("text", ["eighty", "127.0.0.1:70000", "host:"])
def test_a_bad_web_address_is_refused(text):
    done = subprocess.run(
        [sys.executable, "-m", "firmware_host", "run", "--web", text],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and "--web" in done.stderr and done.stderr.count("\n") == 1
