"""A table on a real Mosquitto broker: nothing lost, nothing blocking, a kill survived.

The broker is Debian's ``mosquitto`` on a free 127.0.0.1 port (tests/club_util.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from club_util import Subscriber, running_broker, wait_for
from proc_util import forked

from firmware_host.jsonout import dumps
from firmware_host.live.daemon import Daemon
from firmware_host.live.listeners import Callbacks, Listener
from firmware_host.live.release_lag import SENSED
from firmware_host.mqtt.publisher import TablePublisher
from firmware_host.mqtt.spool import Spool
from firmware_host.mqtt.topics import broker_url
from firmware_host.pipeline import replay
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.peer import VirtualHub
from protocol.catalogue import INDICATOR_STATES

pytestmark = pytest.mark.wall_s(65)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
SPEED = 10.0
MINUTES = 7.0  # 42 s of play at 10x: the outage fits in its middle
OUTAGE_S = 30.0
WAITED_MS = 1000.0  # an event or a turn held this long waited on the network, not the CPU
SLACK = 1.5  # what a busy machine's own stalls may grow by before they count as the outage's
ATTEMPTS = 3  # runs of the outage match a busy machine gets to meet the lag bounds
RELEASE_MS = (
    50.0  # the live-release bound (tests/fusion/test_fusion_e2e.py): a frame waits no longer
)


@pytest.fixture
def broker(tmp_path):
    yield from running_broker(tmp_path)


def as_json(line: dict) -> dict:
    return json.loads(dumps(line))


class Turns(Listener):
    """The pipeline thread's turns: the longest wait a frame arriving could see."""

    name = "turns"

    def __init__(self) -> None:
        self.at: list[int] = []

    def on_turn(self, now_ns: int) -> None:
        self.at.append(now_ns)

    def gaps_ms(self, since_ns: int, until_ns: int) -> np.ndarray:
        at = np.array(self.at)
        at = at[(at >= since_ns) & (at <= until_ns)]
        return np.diff(at) / 1e6


class Stopwatch:
    """Told a line first and last of the sinks before the lamp: how long the sinks took."""

    def __init__(self) -> None:
        self.took_ns: list[int] = []
        self._t0 = 0

    def start(self, line: dict) -> None:
        self._t0 = time.perf_counter_ns()

    def stop(self, line: dict) -> None:
        self.took_ns.append(time.perf_counter_ns() - self._t0)


def test_a_30_s_outage_mid_match_loses_no_verdict_and_delays_no_lamp(broker, tmp_path):
    """A busy machine's stalls come and go, and the lag bounds below are judged against the
    calm before the outage in the same run: when a run misses them, the match is played
    again (on a table of another name), up to ATTEMPTS runs.  A refereeing that waits on
    the network misses them every time, and everything else must hold in every run."""
    missed = []
    for attempt in range(1, ATTEMPTS + 1):
        miss = _outage_run(broker, tmp_path / f"run{attempt}", f"t{attempt}")
        if miss is None:
            return
        missed.append(miss)
    raise AssertionError("\n".join(missed))


def _outage_run(broker, folder: Path, table: str) -> str | None:
    """One match through a 30 s outage; None, or why the lag bounds were missed."""
    folder.mkdir()
    match = scenarios.random_match(seed=11, minutes=MINUTES)
    wire = build_wire(match, HubConfig(sensors="full", seed=11))
    replay(b"".join(wire.chunks[:500]))  # load the kernels in this thread first
    subscriber = Subscriber(broker.url)
    hub = VirtualHub(wire, speed=SPEED)
    decided: list[tuple[int, dict]] = []
    daemon = Daemon(hub.device, on_line=lambda line: decided.append((time.monotonic_ns(), line)))
    turns = Turns()
    daemon.listen(turns)
    publisher = TablePublisher(broker_url(broker.url), table, Spool(folder / "q.sqlite"))
    publisher.start().attach(daemon)
    watch = Stopwatch()  # the broker's durable write and the decided list, per line
    daemon.listen(Callbacks(on_line=watch.start), first=True)
    daemon.listen(Callbacks(on_line=watch.stop))
    sink_ns = watch.took_ns
    lags: list[tuple[int, float]] = []  # (host ns, ms after its hub time) per sensed event

    def released(event: dict) -> None:  # the daemon's own measure (release_lag.py), timed
        now = time.monotonic_ns()
        if event["type"] in SENSED and daemon.pipeline is not None:
            hub_now = daemon.pipeline.hub_time_at(now)
            lags.append((now, (hub_now - event["t_us"]) / 1000))

    daemon.listen(Callbacks(on_event=released))
    stop = threading.Event()
    runner = threading.Thread(target=daemon.run, args=(stop,))
    try:
        runner.start()
        assert daemon.connected.wait(20), "the daemon never opened the port"
        hub.start()
        wait_for(lambda: publisher.connected and publisher.sent > 0, 20, "a first publish")
        calm_ns = time.monotonic_ns()  # from here to the outage: the machine's own stalls
        time.sleep(5.0)
        down_ns = time.monotonic_ns()
        broker.stop()
        wait_for(lambda: not publisher.connected, 10, "the publisher to see the broker go")
        time.sleep(OUTAGE_S)
        queued_in_outage = publisher.queued
        up_ns = time.monotonic_ns()
        broker.start()
        wait_for(lambda: hub.finished, 120, "the end of the match")
        time.sleep(0.3)
        lamp = hub.commands.indicator  # what the table's lamp shows at the end
    finally:
        stop.set()
        runner.join(20)
        hub.close()
    publisher.close()
    printed = [as_json(line) for _, line in decided]
    in_outage = [line for t, line in decided if down_ns <= t <= up_ns]
    got = subscriber.wait_lines(table, len(printed))
    subscriber.close()
    gaps = turns.gaps_ms(down_ns, up_ns)
    # at SPEED x, a host millisecond is SPEED hub milliseconds: the lag in host time
    lag = np.array([ms for t, ms in lags if down_ns <= t <= up_ns]) / SPEED
    before = np.array([ms for t, ms in lags if calm_ns <= t < down_ns]) / SPEED
    print(
        f"\n{len(printed)} lines, {len(in_outage)} decided in the {OUTAGE_S:g} s outage, "
        f"{queued_in_outage} messages queued then; {subscriber.club.duplicates} duplicates "
        f"dropped; pipeline turns in the outage p50 {np.median(gaps):.1f} ms, p99 "
        f"{np.percentile(gaps, 99):.1f} ms, max {gaps.max():.1f} ms; the broker sink "
        f"max {max(sink_ns) / 1e6:.2f} ms; {len(lag)} sensed events in the outage out "
        f"{np.median(lag):.1f} ms after their hub time (p50), p99 {np.percentile(lag, 99):.1f} "
        f"ms, max {lag.max():.1f} ms (host time; before the outage p50 {np.median(before):.1f}, "
        f"p99 {np.percentile(before, 99):.1f} ms)"
    )
    assert sum(line["kind"] == "verdict" for line in in_outage) >= 3, "no verdict in the outage"
    assert queued_in_outage > 0
    assert got == printed  # every line once (after de-dup), in order
    lamps = [m for t, kind, m in subscriber.messages if t == table and kind == "lamp"]
    assert INDICATOR_STATES[lamps[-1]["state"]] == lamp  # the lamp topic is the table's lamp
    # Refereeing and the lamp never waited on the network: every event released in the outage
    # left within the live bound of its hub time, and the pipeline thread (which takes the
    # frames and sends the lamp commands) kept turning (its longest pause is printed: on a
    # machine shared with other jobs the scheduler alone can stall a thread for tens of ms).
    # The bound is the live one, or on a machine busy with other work what the same run
    # showed before the outage (times SLACK): the outage may not add to it.  A wait on the
    # network would be seconds (a connect's timeout, the whole outage): no single event
    # may wait WAITED_MS, while one scheduler stall on a busy machine may pass the bound.
    calm = turns.gaps_ms(calm_ns, down_ns)
    assert len(lag) > 100 and len(before) > 20
    assert lag.max() < WAITED_MS and gaps.max() < WAITED_MS
    # the sink writes each line durably (the spool's commit) and never waits on the network
    assert np.median(sink_ns) / 1e6 < 10.0 and max(sink_ns) / 1e6 < WAITED_MS
    lag_bound = max(RELEASE_MS, SLACK * np.percentile(before, 99))
    turn_bound = max(RELEASE_MS, SLACK * np.percentile(calm, 99))
    if np.percentile(lag, 99) <= lag_bound and np.percentile(gaps, 99) <= turn_bound:
        return None
    return (
        f"{table}: p99 lag {np.percentile(lag, 99):.1f} ms (bound {lag_bound:.1f}), "
        f"p99 turn {np.percentile(gaps, 99):.1f} ms (bound {turn_bound:.1f})"
    )


def run_table(url: str, spool: Path, *options: str) -> subprocess.Popen[str]:
    return forked.ForkedPopen(
        [sys.executable, "-m", "firmware_host", "run", "--json", "--mqtt", url]
        + ["--table", "k1", "--mqtt-spool", str(spool), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_a_daemon_killed_while_the_broker_is_away_delivers_its_verdicts_after_a_restart(
    broker, tmp_path
):
    spool = tmp_path / "q.sqlite"
    broker.stop()  # the hall's network is down
    # a small queue: the oldest events must go to make room, never a verdict
    first = run_table(
        broker.url, spool, "--seed", "4", "--minutes", "2", "--speed", "10",
        "--mqtt-spool-max", "100",
    )  # fmt: skip
    printed: list[dict] = []
    try:
        assert first.stdout is not None
        for text in first.stdout:
            printed.append(json.loads(text))
            if sum(line["kind"] == "verdict" for line in printed) >= 4:
                break
        time.sleep(0.5)  # the publisher thread has spooled what was printed
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait()
    assert sum(line["kind"] == "verdict" for line in printed) >= 4, first.stderr.read()
    broker.start()
    subscriber = Subscriber(broker.url)
    second = run_table(
        broker.url, spool, "--scenario", "push", "--speed", "10", "--web", "127.0.0.1:0"
    )
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err
    assert "messages queued from before" in err
    again = [json.loads(text) for text in out.splitlines()]
    got = subscriber.wait_lines("k1", len(printed) + len(again))
    subscriber.close()
    assert got[: len(printed)] == printed  # the killed daemon's lines, first, once, in order
    assert got[len(printed) :] == again
    latest = subscriber.club.tables["k1"]  # every topic of the tree, the table's page linked
    assert {"verdict", "event", "lamp", "health", "state", "online"} <= set(latest)
    assert latest["state"]["web"].startswith("http://127.0.0.1:")
    assert latest["online"]["online"] is False  # the clean stop at the end of the match
    assert latest["health"]["mqtt"]["connected"] is True
    assert latest["health"]["mqtt"]["dropped_events"] > 0  # counted, and kept across the kill


def test_the_health_queued_while_the_broker_was_away_is_told_again_once_it_is_back(
    broker, tmp_path
):
    """A short match can end before the broker answers: its last health, queued meanwhile,
    said "not connected", and the club showed that after every verdict had arrived."""
    broker.stop()
    publisher = TablePublisher(broker_url(broker.url), "k1", Spool(tmp_path / "q.sqlite"))
    publisher.start()
    try:
        publisher.health({"state": "playing"}, [])  # the last health the daemon gives
        broker.start()
        subscriber = Subscriber(broker.url)
        club = subscriber.club
        wait_for(lambda: "health" in club.tables.get("k1", {}), 15, "the health")
        wait_for(lambda: club.tables["k1"]["health"]["mqtt"]["connected"], 5, "a fresh health")
        assert club.tables["k1"]["health"]["state"] == "playing"
        subscriber.close()
    finally:
        publisher.close(flush_s=1)
