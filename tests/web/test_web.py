"""`run --web`: the live page, opened in a real headless Chromium while the daemon referees."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from proc_util import doc_picture, forked
from web_util import Daemon, chromium, wait_for

from firmware_host.web.process import PAGE_NICE

pytestmark = pytest.mark.wall_s(90)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]


TOKEN = "table-test-token"


def post_control(url: str, body: dict, token: str | None) -> tuple[int, dict]:
    """``POST /control`` as any client on the club's network would send it."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url + "control", json.dumps(body).encode(), headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def ball_positions(browser) -> dict[str, list[str]]:
    """Read in one script: the page redraws the balls 30 times a second."""
    return browser.execute_script(
        "const out = {};"
        "for (const c of document.querySelectorAll('#balls circle'))"
        "  out[c.dataset.ball] = [c.getAttribute('cx'), c.getAttribute('cy')];"
        "return out;"
    )


def test_the_page_shows_the_match_live_and_takes_the_referees_keys_with_the_token(tmp_path):
    from selenium.webdriver.common.by import By

    record = tmp_path / "rec"
    daemon = Daemon(
        "--seed", "3", "--minutes", "2", "--speed", "2", "--referee-token", TOKEN,
        "--record", str(record),
    )  # fmt: skip
    browser = None
    try:
        url = daemon.wait_url()
        browser = chromium()
        browser.set_window_size(1100, 900)
        browser.get(url)

        def shown_verdicts() -> list[dict]:
            shown = browser.execute_script(
                "return [...document.querySelectorAll('#verdicts li[data-line]')]"
                ".map((li) => JSON.parse(li.dataset.line));"
            )
            final = [v for v in daemon.lines if v.get("kind") == "verdict"]
            return shown if any(v in final for v in shown) and len(final) >= 2 else []

        shown = wait_for(shown_verdicts, 120, "a verdict equal to the daemon's own line")
        printed = [v for v in daemon.lines if v.get("kind") == "verdict"]
        assert all(v in printed for v in shown), (shown, printed)
        cited = browser.find_element(By.CSS_SELECTOR, "#verdicts li[data-line] .words").text
        assert len(cited) > 40  # the rule's own words, not only its number
        assert browser.find_element(By.ID, "lamp").get_attribute("class") in (
            "legal",
            "foul",
            "referee",
            "warning",
        )
        assert "link up" in browser.find_element(By.ID, "health").text
        with urllib.request.urlopen(url + "healthz", timeout=10) as answer:
            health = json.load(answer)
        assert answer.status == 200 and health["link"] == "up" and health["problems"] == []

        # the balls move on the page while a shot is played
        before = wait_for(lambda: ball_positions(browser), 30, "balls drawn")
        wait_for(
            lambda: any(
                ball_positions(browser).get(b) not in (None, xy) for b, xy in before.items()
            ),
            60,
            "a ball drawn somewhere else during a shot",
        )

        # read-only without the token: the API refuses and says why; the page says so too
        assert post_control(url, {"key": "new_frame"}, None)[0] == 401
        assert post_control(url, {"key": "new_frame"}, "not-the-token")[0] == 403
        assert post_control(url, {"key": "explode"}, TOKEN)[0] == 400
        browser.find_element(By.ID, "token").send_keys("not-the-token")
        browser.find_element(By.CSS_SELECTOR, "#unlock button").click()
        browser.find_element(By.CSS_SELECTOR, "#controls button[data-key=new_frame]").click()
        result = browser.find_element(By.ID, "control-result")
        wait_for(lambda: "refused (403)" in result.text, 10, "the page saying it was refused")
        assert not any(line.get("rules") == ["13"] for line in daemon.lines)

        # with the token: "new frame" reaches the referee as the keypad's key would
        frame = (
            wait_for(
                lambda: browser.find_element(By.ID, "state").text.startswith("frame"), 30, "state"
            )
            and browser.find_element(By.ID, "state").text.split(",")[0]
        )
        token = browser.find_element(By.ID, "token")
        token.clear()
        token.send_keys(TOKEN)
        browser.find_element(By.CSS_SELECTOR, "#unlock button").click()
        browser.find_element(By.CSS_SELECTOR, "#controls button[data-key=new_frame]").click()
        wait_for(
            lambda: browser.find_element(By.ID, "state").text.split(",")[0] != frame,
            15,
            "the match state after a new frame",
        )
        notices = [line for line in daemon.lines if line.get("rules") == ["13"]]
        assert len(notices) == 1 and notices[0]["reason"].startswith("frame 2:")
        refusals = [
            line for line in daemon.err if "refused from 127.0.0.1: referee control" in line
        ]
        assert len(refusals) == 3 and "no token" in refusals[0]
        browser.save_screenshot(str(doc_picture("live-page.png", tmp_path)))
        # a phone: one column, nothing wider than the screen, the table still drawn
        browser.set_window_size(390, 844)
        widths = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth,"
            " document.getElementById('cloth').getBoundingClientRect().width]"
        )
        assert widths[0] <= widths[1] and widths[2] > 300, widths
        browser.save_screenshot(str(doc_picture("live-page-phone.png", tmp_path)))
    finally:
        if browser is not None:
            browser.quit()
        daemon.close()
    # recorded with the match: a replay of the recording presses it where it was pressed
    (part,) = sorted(record.glob("capture-*.bin"))
    replayed = forked.run(
        [sys.executable, "-m", "firmware_host", "replay", str(part)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )  # fmt: skip
    lines = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert [line["reason"] for line in lines if line.get("rules") == ["13"]] == [
        notices[0]["reason"]
    ]


def test_a_port_in_use_is_one_line_and_status_2():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = forked.run(
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
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "run", "--web", text],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and "--web" in done.stderr and done.stderr.count("\n") == 1


class Listener(threading.Thread):
    """One page's event stream, read as fast as a browser reads it: its verdict lines kept.

    A browser runs on its own machine (the club's screen, a phone); here its reading
    takes this machine's CPU, so it runs at the page process's niceness: on a busy
    machine it must not take the daemon's turn, as no real browser could.
    """

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.verdicts: list[dict] = []
        self.connected = threading.Event()

    def run(self) -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), PAGE_NICE)  # this thread
        try:
            with urllib.request.urlopen(self.url + "events", timeout=120) as stream:
                self.connected.set()
                for raw in stream:
                    text = raw.decode()
                    if text.startswith("data: "):
                        line = json.loads(text[6:]).get("line")
                        if line and line.get("kind") == "verdict":
                            self.verdicts.append(line)
        except OSError:  # the daemon ended the match and closed the stream
            pass


SLACK = 1.5  # what pages may add to a busy machine's own lag before it counts as their cost
ATTEMPTS = 3  # pairs of matches (with pages, alone) a busy machine gets


def _release_lag(summary: str) -> tuple[float, float]:
    """The run's closing summary's release lag: p99 and max, ms."""
    p99, most = re.findall(r"p99 ([\d.]+) ms, max ([\d.]+) ms", summary)[0]
    return float(p99), float(most)


def _matches_with_and_without_pages(count: int) -> tuple[Daemon, list[Listener], Daemon]:
    """Two 45 s matches at real time in the same window, played out: one with ``count``
    pages on its event stream, one alone, whose lag is what the machine gave then."""
    daemons = [Daemon("--seed", "5", "--minutes", "0.75", "--speed", "1") for _ in range(2)]
    try:
        url = daemons[0].wait_url()
        daemons[1].wait_url()
        pages = [Listener(url) for _ in range(count)]
        for page in pages:
            page.start()
        assert all(page.connected.wait(30) for page in pages)
        for daemon in daemons:
            daemon.proc.wait(300)
    finally:
        for daemon in daemons:
            daemon.close()
    return daemons[0], pages, daemons[1]


def test_twenty_pages_do_not_delay_the_refereeing():
    """20 clients on the event stream through a match at real time: the daemon still releases
    what its kernels release (its own timing, p99 within the 50 ms live bound), and every page
    gets every verdict.

    A machine busy with other work can miss the live bound with no page at all, so the same
    match is played alone beside it, in the same window: the pages may not add more than
    SLACK to what the machine's own lag was then.  A busy machine's lag comes and goes (a
    match has about 70 events, so its p99 is one late event): a pair that misses both is
    played again, up to ATTEMPTS times; pages that do cost the refereeing miss every time.
    """
    measured = []
    for _ in range(ATTEMPTS):
        daemon, pages, control = _matches_with_and_without_pages(20)
        printed = [v for v in daemon.lines if v.get("kind") == "verdict"]
        assert printed
        for page in pages:
            page.join(10)
            assert page.verdicts == printed
        summary = next(line for line in daemon.err if "end of match" in line)
        p99, most = _release_lag(summary)
        bound_p99, bound_max = 50.0, 100.0  # a tick and a read at worst beside the kernels' 46 ms
        if p99 <= bound_p99 and most <= bound_max:
            return
        alone = _release_lag(next(line for line in control.err if "end of match" in line))
        measured.append(f"with 20 pages: {summary}alone: p99 {alone[0]} ms, max {alone[1]} ms")
        if p99 <= SLACK * alone[0] and most <= SLACK * alone[1]:  # a busy machine's own lag
            return
    raise AssertionError("\n".join(measured))
