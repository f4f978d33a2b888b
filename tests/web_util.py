"""The pages' tests' real parts: a headless Chromium, ``run --web`` as a user starts it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from outside_parts import require
from proc_util import forked

ROOT = Path(__file__).resolve().parents[1]


def chromium():
    """Debian's chromium and chromedriver (.ci/run installs them), driven by selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = require("chromium"), require("chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=options)


class Daemon:
    """``firmware-host run --web 127.0.0.1:0 --json`` on the virtual table; its lines read."""

    def __init__(self, *options: str, preexec_fn: Callable[[], None] | None = None) -> None:
        self.proc = forked.ForkedPopen(
            [sys.executable, "-m", "firmware_host", "run", "--web", "127.0.0.1:0", "--json"]
            + list(options),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=preexec_fn,
        )
        self.lines: list[dict] = []
        self.err: list[str] = []
        self.url: str | None = None
        self.readers = [threading.Thread(target=f, daemon=True) for f in (self._out, self._err)]
        for reader in self.readers:
            reader.start()

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
        """Ends the run and reads its output to the end: on a loaded machine the readers can
        be behind when it exits (stress-ng: a closing summary not yet read)."""
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for reader in self.readers:
            reader.join(30)


def wait_for(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not seen in {timeout_s} s: {what}")
