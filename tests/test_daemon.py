"""The daemon against the virtual table on a real pty: verdicts, lamp, faults survived."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from firmware_host.daemon import Daemon
from firmware_host.pipeline import replay
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.peer import VirtualHub
from protocol.catalogue import INDICATOR_STATES
from rules import indicator_for

SPEED = 8.0


def referee_live(wire, tmp_path: Path, timeout_s: float = 120.0):
    lines: list[dict] = []
    events: list[dict] = []
    stop = threading.Event()
    # Compile (or load) the numba kernels here: numba's first compile is not
    # safe to run in two threads at once.
    replay(b"".join(wire.chunks))
    hub = VirtualHub(wire, speed=SPEED)
    try:
        daemon = Daemon(
            hub.device, record_dir=tmp_path, on_event=events.append, on_line=lines.append
        )
        runner = threading.Thread(target=lambda: daemon.run(stop))
        runner.start()
        assert daemon.connected.wait(20), "the daemon never opened the port"
        hub.start()  # the port is open before the table boots, as in a club
        deadline = time.monotonic() + timeout_s
        while not hub.finished and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        stop.set()
        runner.join(10)
        lamp = hub.commands.indicator
    finally:
        hub.close()
    recorded = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("*.bin")))
    return daemon, lines, events, lamp, recorded


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


def test_hub_reboot_and_garbage_are_reported_and_survived(two_shots, tmp_path):
    cfg = HubConfig(seed=4, faults=FaultPlan.parse("garbage@1,reboot@2"))
    daemon, lines, events, _, _ = referee_live(build_wire(two_shots, cfg), tmp_path)
    assert daemon.stats.reboots == 1
    assert sum(daemon.stats.decoder["bad"].values()) > 0
    assert [e for e in events if e["type"] == "boot"][1:], "no boot event after the reboot"
    assert verdicts(lines), "no verdict after the faults"


@pytest.mark.parametrize(
    "port, says",
    [("/dev/no-such-table", "no such device"), ("bogus://x", "protocol 'bogus' not known")],
)
def test_run_with_a_bad_port_says_so_in_one_line_and_exits_2(port, says):
    done = subprocess.run(
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
