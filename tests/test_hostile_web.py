"""Issue 23: hostile web clients against the club page and the live page (real servers).

Each client here is what anyone on a club's network can be: many requests,
slow ones, a guessed token, a forged Host.  The page's server must hold
bounded resources, answer each bad request with its own refusal (logged
with its address), and never let one client delay another's command.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from club_util import running_broker, wait_for
from test_club_page import command, page_url
from test_hostile_club import good_state, publisher, send

from firmware_host.mqtt.publisher import TablePublisher
from firmware_host.mqtt.spool import Spool
from firmware_host.mqtt.topics import broker_url
from firmware_host.pipeline import check_press
from firmware_host.referee_token import RefereeToken

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
    flood = [
        threading.Thread(target=post, args=(url, "/command", control("dead", "guess")))
        for _ in range(60)
    ]
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
