"""The live page's own process (firmware_host/web/process.py): fed by the daemon without ever
blocking it, started again from what is kept when it falls behind, ended with the daemon."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

from web_util import Daemon, wait_for

from firmware_host.web.process import PageProcess


def verdict(shot: int) -> dict:
    return {"kind": "verdict", "shot": shot, "t_us": shot * 1000, "verdict": "legal"}


def data_lines(stream, count: int) -> list[dict]:
    """The next ``count`` messages of an event stream (a snapshot's or a change's)."""
    got = []
    while len(got) < count:
        line = stream.readline()
        assert line, "the stream ended"
        if line.startswith(b"data: "):
            got.append(json.loads(line[6:]))
    return got


def test_a_page_process_that_falls_behind_starts_again_from_what_is_kept():
    """The page process stopped (SIGSTOP: as starved of CPU) while the daemon goes on: the
    pipeline's side goes on (each call is an append; the socket full is the writer thread's
    wait), and past ``PENDING`` calls it drops them; once the page runs again, the open stream is ended
    and a new one's snapshot has every verdict kept, the one dropped in between included;
    then changes flow again."""
    page = PageProcess("127.0.0.1", 0).launch()
    page.line(verdict(1))  # before it listens: in its first snapshot
    port = page.start()
    assert page._proc is not None
    try:
        url = f"http://127.0.0.1:{port}/events"
        stream = urllib.request.urlopen(url, timeout=30)
        assert [v["shot"] for v in data_lines(stream, 1)[0]["verdicts"]] == [1]
        os.kill(page._proc.pid, signal.SIGSTOP)
        pad = "x" * 1000  # the socket's buffers fill: a blocking write would hang here
        deadline = time.monotonic() + 30
        while not page._lost and time.monotonic() < deadline:
            for n in range(500):
                page.event({"type": "contact", "shot": 2, "t_us": n, "pad": pad})
            time.sleep(0.02)
        assert page._lost, "the list never overflowed"
        page.line(verdict(2))  # dropped on its way, kept for the page's next start
        os.kill(page._proc.pid, signal.SIGCONT)
        wait_for(lambda: page.resets >= 1, 10, "the page process started again")
        stream.read()  # the old stream ends (its page reconnects)
        again = urllib.request.urlopen(url, timeout=30)
        snapshot = data_lines(again, 1)[0]
        assert [v["shot"] for v in snapshot["verdicts"]] == [1, 2]
        page.line(verdict(3))
        assert data_lines(again, 1)[0]["line"]["shot"] == 3
    finally:
        os.kill(page._proc.pid, signal.SIGCONT)
        page.stop()


def test_a_verdict_given_as_the_daemon_stops_reaches_every_open_page():
    """The match's last verdict comes a moment before ``run`` stops its page process: the
    page sends it to every browser, then ends their streams (under stress-ng a page missed
    the last verdict: the socket was shut with the verdict still waiting for the writer's
    next batch, and the page process ended before its browsers were sent what it had)."""
    page = PageProcess("127.0.0.1", 0).launch()
    port = page.start()
    streams = [urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=30)]
    streams.append(urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=30))
    try:
        for stream in streams:
            data_lines(stream, 1)  # the snapshot: the stream is open
        page.line(verdict(1))
        page.line(verdict(2))
    finally:
        page.stop()
    for stream in streams:
        told = [json.loads(line[6:]) for line in stream.read().splitlines()
                if line.startswith(b"data: ")]  # fmt: skip
        assert [m["line"]["shot"] for m in told if "line" in m] == [1, 2]


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def test_the_page_process_ends_with_a_killed_daemon():
    """SIGKILL to ``run --web``: its page process sees the socket close and ends (no orphan
    holding the port)."""
    daemon = Daemon("--speed", "1", "--minutes", "1")
    try:
        url = daemon.wait_url()
        with urllib.request.urlopen(url, timeout=30) as served:  # the page process serves
            assert served.status == 200
        pages = [p for p in children(daemon.proc.pid) if b"web.process" in _cmdline(p)]
        assert len(pages) == 1, children(daemon.proc.pid)
        os.kill(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(30)
        wait_for(lambda: not Path(f"/proc/{pages[0]}").exists() or _zombie(pages[0]), 10,
                 "the page process ended")  # fmt: skip
    finally:
        daemon.close()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True
