"""The daemon against the virtual table on a real pty: verdicts, lamp, faults survived."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time

import pytest
from live_util import SPEED, referee_live
from proc_util import forked

from firmware_host.link.acks import AckSniffer
from firmware_host.link.command_link import ACK_TIMEOUT_NS, MAX_RETRIES, LinkHealth
from firmware_host.live.daemon import Daemon
from firmware_host.live.engine import Compiled
from firmware_host.live.listeners import Listener
from firmware_host.pipeline import replay
from firmware_host.service.health import HealthMonitor, problems
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.peer import VirtualHub
from protocol.catalogue import INDICATOR_STATES
from rules import indicator_for

pytestmark = pytest.mark.wall_s(30)  # alone, on an idle core: run first (conftest.py)


def verdicts(lines):
    return [(v["shot"], v["verdict"], v["rules"]) for v in lines if v["kind"] == "verdict"]


@pytest.fixture(scope="module")
def two_shots():
    return scenarios.SCENARIOS["double_hit"]()


def test_live_verdicts_equal_a_replay_of_the_recording_and_drive_the_lamp(two_shots, tmp_path):
    daemon, lines, _, lamp, recorded = referee_live(
        build_wire(two_shots, HubConfig(seed=3)), tmp_path
    )
    assert verdicts(lines), "the daemon gave no verdict"
    assert daemon.stats.decoder["bad"] == {}
    assert verdicts(replay(recorded).lines) == verdicts(lines)
    last = [line for line in lines if indicator_for(line) is not None][-1]
    assert lamp == INDICATOR_STATES[indicator_for(last).state]
    # every lamp change was acknowledged (the REQUEST_HELLO sent before the
    # table booted may have gone unanswered: that one is reported, not fatal)
    assert daemon.stats.decoder["per_type"]["ACK"] >= len(verdicts(lines))
    # ... and the table's first HELLO re-probed the link: the status is healthy again
    assert daemon.indicator_ok and daemon.indicator_problem is None


def test_hub_reboot_and_garbage_are_reported_and_survived(two_shots, tmp_path):
    cfg = HubConfig(seed=4, faults=FaultPlan.parse("garbage@1,reboot@2"))
    daemon, lines, events, _, recorded = referee_live(build_wire(two_shots, cfg), tmp_path)
    assert sum(daemon.stats.decoder["bad"].values()) > 0
    assert verdicts(lines), "no verdict after the faults"
    # one boot event per boot, live as in a replay of the same bytes, and the daemon's
    # reboots are the fusion's boot events after the first
    boots = [e for e in events if e["type"] == "boot"]
    replayed = [e for e in replay(recorded).events if e["type"] == "boot"]
    assert len(boots) == len(replayed) == 2, (boots, replayed)
    assert daemon.stats.reboots == 1


class Broken(Listener):
    """A sink whose every call raises: a bug, or its outside world gone."""

    name = "broken"

    def on_event(self, event: dict) -> None:
        raise RuntimeError("a sink's bug")

    def on_line(self, line: dict, state: object) -> None:
        raise OSError("a sink's disk is full")

    def on_turn(self, now_ns: int) -> None:
        raise ValueError("a sink's clock")


def test_a_sink_that_raises_costs_only_itself(two_shots, tmp_path, caplog):
    """Told before every other sink, it stops none of them: the output, the recording and
    the lamp see every line; its failures are logged (the first with its traceback) and
    counted by its name."""
    daemon, lines, events, lamp, recorded = referee_live(
        build_wire(two_shots, HubConfig(seed=3)), tmp_path, sinks=[Broken()], first=True
    )
    assert verdicts(lines) and verdicts(replay(recorded).lines) == verdicts(lines)
    last = [line for line in lines if indicator_for(line) is not None][-1]
    assert lamp == INDICATOR_STATES[indicator_for(last).state]
    failed = daemon.stats.sink_failures["broken"]
    assert failed > len(events) + len(lines)  # every event, line and turn
    assert set(daemon.stats.sink_failures) == {"broken"}
    said = [r for r in caplog.records if "sink broken failed" in r.getMessage()]
    assert said[0].exc_info is not None and len(said) == failed


@pytest.mark.parametrize(
    "port, says",
    [("/dev/null", "not a tty"), ("bogus://x", "protocol 'bogus' not known")],
)
def test_run_with_a_bad_port_says_so_in_one_line_and_exits_2(port, says):
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "run", "--port", port],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"firmware-host run: --port {port}: ")
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_run_without_a_port_referees_the_virtual_table_to_its_intended_verdicts():
    """The README's main job: the daemon against the virtual table in its own process."""
    intended = [
        (v["shot"], v["verdict"], v["rules"])
        for v in scenarios.SCENARIOS["double_hit"]().verdicts
        if v.get("kind", "verdict") == "verdict"
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "firmware_host",
            "run",
            "--scenario",
            "double_hit",
            "--speed",
            "8",
            "--json",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [
        (v["shot"], v["verdict"], v["rules"])
        for v in lines
        if v["kind"] == "verdict" and not v.get("early")
    ] == intended
    assert "link lost" not in done.stderr  # the table says "match over" before it hangs up


class FirstFeedLoads(Compiled):
    """The compiled pipeline as a warm start has it: its first call loads the numba kernels
    from the cache, which holds the pipeline thread 0.3-2 s (measured: 2.0 s on a busy
    machine, while the hub's ACK to REQUEST_HELLO came 1.6 ms after the send)."""

    LOAD_S = 0.3  # above the command link's 200 ms for four transmissions

    def __init__(self) -> None:
        super().__init__()
        self.loaded = threading.Event()

    def feed(self, data: bytes, host_rx_ns: int):
        if not self.loaded.is_set():
            time.sleep(self.LOAD_S)
            self.loaded.set()
        return super().feed(data, host_rx_ns)


class AckClock:
    """When the REQUEST_HELLO first left and when the hub's first ACK was read off the port
    (the reader thread's ``host_rx_ns``, before any thread of the daemon acted on it)."""

    def __init__(self, daemon: Daemon) -> None:
        self.sent_ns: int | None = None
        self.ack_rx_ns: int | None = None
        self._sniffer = AckSniffer()
        link, transport = daemon._link._core, daemon._transport
        transmit, on_chunk = link._transmit, transport._on_chunk

        def sent(cmd, now_ns: int) -> None:
            if cmd.name == "REQUEST_HELLO" and self.sent_ns is None:
                self.sent_ns = now_ns
            transmit(cmd, now_ns)

        def read(chunk) -> None:
            if self.ack_rx_ns is None and len(self._sniffer.feed(chunk.data)):
                self.ack_rx_ns = chunk.host_rx_ns
            on_chunk(chunk)

        link._transmit, transport._on_chunk = sent, read

    @property
    def late(self) -> bool:
        """The ACK reached this host after the link's whole allowance (four transmissions of
        50 ms, ICD §5), or never: a machine too busy to run the hub's thread or the reader,
        which the link rightly calls a failure; not the start-up race."""
        allowance = (1 + MAX_RETRIES) * ACK_TIMEOUT_NS
        return (
            self.sent_ns is None
            or self.ack_rx_ns is None
            or (self.ack_rx_ns - self.sent_ns > allowance)
        )


def warm_start(wire, plan_noack: bool = False) -> tuple[Daemon, list[str], AckClock]:
    """One start against a table that is up: the hub boots on the host's first frame, as
    `run`'s virtual table does, and ACKs the REQUEST_HELLO at once."""
    hub = VirtualHub(wire, speed=SPEED, wait_for_host=True).start()
    engine = FirstFeedLoads()
    daemon = Daemon(hub.device, engine=engine)
    clock = AckClock(daemon)
    stop = threading.Event()
    runner = threading.Thread(target=lambda: daemon.run(stop, abandon=stop))
    try:
        runner.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
            engine.loaded.is_set() and daemon._link.health is not LinkHealth.UNKNOWN
        ):
            time.sleep(0.01)
        status = HealthMonitor(daemon, None).status(time.monotonic_ns())
    finally:
        stop.set()
        runner.join(10)
        hub.close()
    lamp = [p for p in problems(status, time.time()) if p.startswith("indicator")]
    return daemon, [status["indicator"], *lamp], clock  # the nodes may not be heard from yet


def test_fifty_warm_starts_give_no_false_lamp_link_alarm_and_status_agrees_with_the_log(
    two_shots, caplog
):
    """Issue 24: the hub's ACK came 1.6 ms after the REQUEST_HELLO but waited behind the
    pipeline thread's first feed, so the link was declared failed on most warm starts.

    A start whose ACK reached the port later than the link's 200 ms (a machine so loaded
    that the hub's thread or the reader did not run) measures the load, not the race: it
    is started again, up to 25 times in all; the race fails every start, late or not."""
    wire = build_wire(two_shots, HubConfig(seed=3))
    replay(b"".join(wire.chunks[:50]))  # the kernels loaded once, here (not thread-safe)
    alarms, late, measured = [], 0, 0
    with caplog.at_level(logging.INFO, logger="firmware_host"):
        while measured < 50:
            caplog.clear()
            daemon, said, clock = warm_start(wire)
            if clock.late:
                late += 1
                assert late <= 25, f"{late} starts' ACKs reached the port over 200 ms late"
                continue
            measured += 1
            logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            if said != ["ok"] or logged or not daemon.indicator_ok:
                alarms.append((measured, said, logged))
            assert daemon._link.stats.acked >= 1, "the REQUEST_HELLO was never acknowledged"
    assert alarms == []


def test_a_hub_that_never_acks_is_one_line_in_the_log_and_the_same_words_in_status(caplog):
    deaf = FaultPlan(no_ack=((-10.0, 600.0),))  # from before the hub's boot (its lead-in)
    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(seed=3, faults=deaf))
    with caplog.at_level(logging.INFO, logger="firmware_host"):
        _, said, _ = warm_start(wire)
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    problem = "indicator link failed: no ACK for REQUEST_HELLO seq 0 after 3 resends"
    assert logged == [problem]
    assert said == ["failed", problem]


def test_a_table_that_closes_its_port_before_its_match_over_is_read_is_no_lost_link(caplog):
    """The virtual table says "match over", then closes its pty 1 s later; on a busy
    machine `run` may read the words after the port is gone: that is the match's end, not a
    lost link (and no lamp alarm for a command the closed port could not take)."""
    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(seed=3))
    hub = VirtualHub(wire, speed=SPEED, wait_for_host=True).start()
    daemon = Daemon(hub.device)
    stop = threading.Event()
    runner = threading.Thread(target=lambda: daemon.run(stop, hang_up=True))
    with caplog.at_level(logging.INFO, logger="firmware_host"):
        try:
            runner.start()
            assert daemon.connected.wait(20), "the daemon never opened the port"
            time.sleep(0.3)
            daemon._link.set_indicator("ready")  # in flight when the port goes
            hub.close()  # the port is gone; "match over" is still unread
            time.sleep(0.5)
            stop.set()  # ... read now
        finally:
            stop.set()
            runner.join(20)
    assert daemon.stats.link_losses == 0
    assert daemon.indicator_ok, "a lamp alarm for the closed port"
    said = [r.getMessage() for r in caplog.records if r.name == "firmware_host.daemon"]
    assert any("closed by the table at the end of its match" in m for m in said), said
    assert not [
        r
        for r in caplog.records
        if r.name.startswith("firmware_host.daemon") and r.levelno >= logging.WARNING
    ]
