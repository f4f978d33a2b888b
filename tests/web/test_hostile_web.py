"""Issue 23: hostile web clients against the club page and the live page (real servers).

Each client here is what anyone on a club's network can be: many requests,
slow ones, a guessed token, a forged Host.  The page's server must hold
bounded resources, answer each bad request with its own refusal (logged
with its address), and never let one client delay another's command.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from club_util import command, good_state, page_url, publisher, running_broker, send, wait_for
from web_util import Daemon

from firmware_host.live.referee_token import RefereeToken
from firmware_host.mqtt.publisher import TablePublisher
from firmware_host.mqtt.spool import Spool
from firmware_host.mqtt.topics import broker_url
from firmware_host.pipeline import check_press
from firmware_host.web.process import PAGE_NICE
from firmware_host.web.server import MAX_STREAMS

pytestmark = pytest.mark.wall_s(65)  # alone, on an idle core: run first (conftest.py)

TOKEN = "tok-live-secret"


@pytest.fixture
def broker(tmp_path):
    yield from running_broker(tmp_path)


def post(url: str, path: str, body: bytes, source: str = "127.0.0.1", **headers: str):
    """POST from ``source`` (any 127/8 address is this machine: another client to the
    server); (status, JSON answer, seconds)."""
    host, port = url.split("//")[1].strip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120, source_address=(source, 0))
    started = time.monotonic()
    try:
        conn.request("POST", path, body, {"Content-Type": "application/json", **headers})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"{}"), time.monotonic() - started
    finally:
        conn.close()


def get_json(url: str, path: str) -> dict:
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=30) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as refused:  # 503: degraded, still the facts
        return json.load(refused)


@pytest.fixture
def club_with_a_live_and_a_dead_table(broker, tmp_path):
    """The club page; table 'live' answers commands with its token, 'dead' never does."""
    pressed: list[tuple] = []
    live = TablePublisher(
        broker_url(broker.url), "live", Spool(tmp_path / "q.sqlite"),
        press=lambda key, arg=0, *, source: pressed.append(check_press(key, arg)),
        token=RefereeToken(TOKEN),
    ).start()  # fmt: skip
    hostile = publisher(broker)
    send(hostile, "club/dead/state", good_state(1).replace('"t1"', '"dead"'), retain=True)
    live.line(
        {"kind": "verdict", "shot": 1, "verdict": "legal", "rules": [], "satisfied": "9",
         "reason": "x", "t_us": 1},
        None, None,
    )  # fmt: skip
    club = command("club", "--mqtt", broker.url, "--web", "127.0.0.1:0", "--client-id", "pg")
    log: list[str] = []
    try:
        url = page_url(club)
        threading.Thread(target=lambda: log.extend(club.stderr), daemon=True).start()
        wait_for(lambda: get_json(url, "/healthz")["tables"] == ["dead", "live"], 30, "tables")
        yield url, pressed, log
    finally:
        club.terminate()
        club.wait(10)
        live.close(1.0)
        hostile.loop_stop()


def control(table: str, token: str, key: str = "referee_foul", arg: int = 16) -> bytes:
    return json.dumps({"table": table, "key": key, "arg": arg, "token": token}).encode()


def test_a_table_that_never_answers_delays_no_other_command(club_with_a_live_and_a_dead_table):
    """60 anonymous commands to a table that never answers blocked a referee's command on
    the club page for 49 s (each held one of the executor's 6 threads for 5 s)."""
    url, pressed, _ = club_with_a_live_and_a_dead_table

    def anonymous() -> None:  # its answer is not the test's: the club may close it at teardown
        with contextlib.suppress(OSError, http.client.HTTPException):
            post(url, "/command", control("dead", "guess"))

    flood = [threading.Thread(target=anonymous) for _ in range(60)]
    for thread in flood:
        thread.start()
    time.sleep(0.5)  # all 60 are in
    status, answer, took = post(url, "/command", control("live", TOKEN), source="127.0.0.2")
    for thread in flood:
        thread.join(30)
    assert (status, answer["ok"]) == (200, True), answer
    assert took < 2.0, f"the referee's command took {took:.1f} s"
    assert pressed == [("referee_foul", 16)]


def test_wrong_tokens_through_the_club_page_are_limited_per_address(
    club_with_a_live_and_a_dead_table,
):
    """A guesser's wrong tokens (the table says they are wrong) end in 429, every refusal
    logged with its address; the referee, from another address, still gets through."""
    url, pressed, log = club_with_a_live_and_a_dead_table
    guesses = [post(url, "/command", control("live", f"guess-{n}"), "127.0.0.3") for n in range(15)]
    assert [status for status, _, _ in guesses] == [403] * 10 + [429] * 5
    status, answer, _ = post(url, "/command", control("live", TOKEN), source="127.0.0.2")
    assert (status, answer["ok"]) == (200, True), answer
    assert pressed == [("referee_foul", 16)]
    wait_for(lambda: sum("127.0.0.3" in line for line in log) >= 5, 10, "the refusals logged")


ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "bench" / "hostile_clients.py"
FD_LIMIT = 256  # the issue's: 400 slow connections took them all


class LivePage(Daemon):
    """``run --web`` on the virtual table at real time, its lines and log read, its status
    file written, its URL known once it is made."""

    def __init__(self, tmp_path: Path, *options: str, fd_limit: int | None = None) -> None:
        def limit() -> None:
            if fd_limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

        self.status = tmp_path / "status.json"
        super().__init__("--status", str(self.status), "--referee-token", TOKEN, *options,
                         preexec_fn=limit)  # fmt: skip
        self.wait_url()

    def status_age(self) -> float:
        try:
            return time.time() - json.loads(self.status.read_text())["written_unix"]
        except (OSError, ValueError):
            return 0.0  # being replaced this instant


def read_page(url: str, got: list[dict]) -> None:
    """A well-behaved page on ``/events``: every message it is sent, in order."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/events", timeout=300) as stream:
            for raw in stream:
                if raw.startswith(b"data: "):
                    got.append(json.loads(raw[6:]))
    except OSError:
        got.append({"ended": True})


LATE_ON_A_BUSY_MACHINE = 3
ATTEMPTS = 3  # runs of the flood a busy machine gets to show the late events are not theirs
MATCH = ("--minutes", "0.5", "--speed", "1")  # the load test's match, at real time


def _late(end: str, record: Path) -> tuple[int, Any]:
    """Events the live pipeline dropped as late that the same recorded bytes, replayed at
    leisure, keep (the machine's load or the clients made the pipeline wait), and that
    replay."""
    from firmware_host.pipeline import Pipeline, replay

    recorded = b"".join(p.read_bytes() for p in sorted(record.glob("*.bin")))
    pipe = Pipeline(None)
    again = replay(recorded, pipe=pipe)
    said = re.search(r"'late': (\d+)", end)
    return (int(said.group(1)) if said else 0) - pipe.events.losses().get("late", 0), again


def _late_alone(tmp_path: Path) -> int:
    """The same match with no client, right after: the late events this machine's load
    alone costs now (a busy machine can make a real-time pipeline drop some with no client
    at all; bench/hostile_load.py compares the lag with and without the clients)."""
    tmp_path.mkdir()
    record = tmp_path / "rec"
    page = LivePage(tmp_path, *MATCH, "--record", str(record), fd_limit=FD_LIMIT)
    try:
        page.proc.wait(180)
    finally:
        page.close()
    end = next(line for line in page.err if "end of match" in line)
    return _late(end, record)[0]


def _in_order_within(part: list, whole: list) -> bool:
    """Every item of ``part`` is in ``whole``, in the same order."""
    rest = iter(whole)
    return all(item in rest for item in part)


def test_1000_streams_and_200_slow_connections_cost_no_event_and_no_byte(tmp_path):
    """The load test: 1 000 event-stream clients and 200 slow connections against ``run
    --web`` (a 256-fd limit, where 400 slow connections once stopped its recording and
    left its status file stale for 50 s) through a real-time match.  Clients over the cap
    are refused with 503, the slow ones closed; no event is late (the timing core drops
    none live that it keeps replaying the same bytes) or lost (the live events are the
    recording's, replayed); the recording is
    complete; a page that was open before the flood got every verdict; the status file
    never goes stale.  bench/hostile_load.py times the release lag with and without them.
    When the late count is over what the same match alone costs right after, the pair is
    played again, up to ATTEMPTS times (stress-ng once made 4 late against 0 alone): the
    clients' cost shows every time, the machine's moments do not; everything else must
    hold in every run."""
    missed = []
    for attempt in range(1, ATTEMPTS + 1):
        miss = _flood_run(tmp_path / f"run{attempt}")
        if miss is None:
            return
        missed.append(f"run {attempt}: {miss}")
    raise AssertionError("\n".join(missed))


def _flood_run(folder: Path) -> str | None:
    """One match under the flood: asserts what must hold in every run, and says why the
    late count was over the same match's alone (None: it was not)."""
    from firmware_host.live.release_lag import SENSED

    folder.mkdir()
    record = folder / "rec"
    page = LivePage(folder, *MATCH, "--record", str(record), "--events", fd_limit=FD_LIMIT)
    seen: list[dict] = []
    reader = threading.Thread(target=read_page, args=(page.url, seen), daemon=True)
    reader.start()
    wait_for(lambda: seen or page.proc.poll() is not None, 30, "the well-behaved page")
    clients = subprocess.Popen(
        [sys.executable, str(CLIENTS), page.url, "--streams", "1000", "--slow", "200",
         "--seconds", "25", "--trickle-s", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    # the clients stand for other machines (phones, a hostile laptop): here their CPU is this
    # machine's, so they run at the page process's niceness and never take the daemon's turn
    os.setpriority(os.PRIO_PROCESS, clients.pid, PAGE_NICE)
    ages = []
    try:
        while clients.poll() is None:
            ages.append(page.status_age())
            time.sleep(0.5)
        summary = json.loads(clients.stdout.read())
        page.proc.wait(180)
    finally:
        clients.kill()
        page.close()
    log = "".join(page.err)
    assert page.proc.returncode == 0, log
    end = next(line for line in page.err if "end of match" in line)
    assert "not recorded" not in end, end
    assert "Too many open files" not in log and "Traceback" not in log, log
    assert max(ages) < 3.0, f"the status file went {max(ages):.0f} s without a write"
    assert summary["most_streams_open"] <= MAX_STREAMS
    assert summary.get("stream refused 503", 0) > 0  # over the cap: told so
    assert summary.get("slow closed by the server", 0) + summary.get("slow refused 503", 0) > 0
    assert "too many" in log  # the refusals, logged with their addresses

    printed = page.lines
    live = [(e["type"], e["t_us"]) for e in printed if e.get("type") in SENSED]
    verdicts = [line for line in printed if line.get("kind") == "verdict"]
    late, again = _late(end, record)
    replayed = [(e["type"], e["t_us"]) for e in again.events if e["type"] in SENSED]
    assert late >= 0, end
    # A late frame costs at most the event it makes, which may then come from other frames
    # as another (stress-ng: 105 events live, 104 replayed, 5 frames late), or none (a
    # tracker frame between two that say the same); every other event is there, in order.
    missing, extra = Counter(replayed) - Counter(live), Counter(live) - Counter(replayed)
    assert live and missing.total() <= late and extra.total() <= late, (missing, extra, end)
    assert _in_order_within([e for e in live if e not in extra], replayed)
    assert verdicts and verdicts == [line for line in again.lines if line["kind"] == "verdict"]
    shown = list(seen[0]["verdicts"])  # its snapshot, then the stream
    shown += [m["line"] for m in seen[1:] if (m.get("line") or {}).get("kind") == "verdict"]
    assert shown == verdicts, "the page open before the flood missed a verdict"
    if late <= LATE_ON_A_BUSY_MACHINE:
        return None
    alone = _late_alone(folder / "alone")  # the clients', or the machine's? the match alone
    return None if late <= alone + LATE_ON_A_BUSY_MACHINE else f"{end} (alone: {alone} late)"


def test_the_live_page_refuses_a_forged_host_a_huge_shot_and_a_guesser(tmp_path):
    """DNS rebinding (a Host that is not this machine) read /events; /shot/<5000 digits>.svg
    was a 500 with a traceback; token guessing ran at 1 300/s with no lockout."""
    page = LivePage(tmp_path, "--minutes", "0.5", "--speed", "3")
    try:
        url = page.url.rstrip("/")
        plain = urllib.request.Request(url + "/events", headers={"Host": "rebound.example:80"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(plain, timeout=10)
        assert refused.value.code == 421
        for host in ("localhost", "127.0.0.1", f"localhost:{url.rsplit(':', 1)[1]}"):
            ok = urllib.request.Request(url + "/healthz", headers={"Host": host})
            wait_for(lambda r=ok: get_status(r) in (200, 503), 10, f"Host {host}")
        huge = urllib.request.Request(url + "/shot/" + "9" * 5000 + ".svg")
        assert get_status(huge) == 404
        guesses = [
            post(page.url, "/control", b'{"key": "accept"}', "127.0.0.4",
                 Authorization=f"Bearer guess-{n}")[0]
            for n in range(12)
        ]  # fmt: skip
        assert guesses == [403] * 10 + [429] * 2
        status, _, _ = post(
            page.url, "/control", b'{"key": "new_frame"}', "127.0.0.2",
            Authorization=f"Bearer {TOKEN}",
        )  # fmt: skip
        assert status == 202  # the referee, elsewhere, is not locked out
        for bad in (
            b"[" * 100_000 + b"]" * 100_000,
            b'{"key": NaN}',
            b'{"key": "accept", "arg": [1]}',
        ):
            status, answer, _ = post(
                page.url, "/control", bad, "127.0.0.2", Authorization=f"Bearer {TOKEN}"
            )
            assert status == 400, answer
    finally:
        page.close()
    log = "".join(page.err)
    assert "Traceback" not in log
    assert "refused from 127.0.0.1: Host 'rebound.example:80'" in log
    assert "refused from 127.0.0.4: referee control: wrong token" in log


def get_status(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_every_refusals_address_is_logged_after_the_first_five(caplog):
    """After 5 refusals a minute the journal's rate limit (lograte) dropped the rest, with
    their addresses: now the rest are summed per address at the window's end."""
    import logging

    from firmware_host.lograte import RateLimit
    from firmware_host.untrusted import Refusals

    now = [0.0]
    logger = logging.getLogger("test.refusals")
    refusals = Refusals(logger, "referee control", clock=lambda: now[0])
    handler = logging.Handler()
    seen: list[str] = []
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    handler.addFilter(RateLimit(clock=lambda: now[0]))  # one clock, as in the daemon
    logger.addHandler(handler)
    try:
        for n in range(300):
            refusals.add(f"10.0.0.{n % 7}", "wrong token")
        now[0] = 61.0
        refusals.add("10.0.0.99", "wrong token")  # a new window: the last one is summed
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 7  # 5 alone, the sum, the new window's first
    summary = seen[5]
    assert "295 more refused" in summary
    assert all(f"10.0.0.{n}: wrong token x" in summary for n in range(7))
    assert "10.0.0.99" in seen[6]
