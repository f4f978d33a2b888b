"""Valid frames with strange values: counted and survived, the verdicts unchanged.

Each capture is built here from a virtual-table match and one frame-level
mutation that keeps every CRC valid (:mod:`firmware_host.virtual_table.mutate`).
Before the timing core checked plausibility and sized its buffers from what
can happen, the first two aborted the process (a write past a numba
buffer), and the others gave events out of order, a storm of node_status
events or wrong verdicts.  Replays run in a subprocess, so a crash is a
failed test and not a dead test session.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from proc_util import forked

from firmware_host.fusion.stream import EventStream, events_from_capture
from firmware_host.pipeline import replay
from firmware_host.virtual_table import mutate
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.match import random_match

pytestmark = pytest.mark.wall_s(15)  # alone, on an idle core: run first (conftest.py)

WRAP = 1 << 32


def _capture(seed: int, minutes: float, **hub: object) -> bytes:
    return b"".join(build_wire(random_match(seed, minutes), HubConfig(seed=seed, **hub)).chunks)


@pytest.fixture(scope="module")
def clean() -> bytes:
    return _capture(5, 1.0)


@pytest.fixture(scope="module")
def clean_verdicts(clean: bytes) -> list[dict]:
    return _decided(replay(clean).lines)


def _decided(lines: list[dict]) -> list[dict]:
    keys = ("shot", "break", "verdict", "rules", "satisfied")
    return [{k: v.get(k) for k in keys} for v in lines if v["kind"] == "verdict"]


def _replay_subprocess(tmp_path: Path, data: bytes, says: str = "") -> list[dict]:
    """``firmware-host replay`` as a user runs it: a crash is a non-zero exit, not a dead suite.

    A stream the timing core had to repair exits 1 and says what it dropped
    or inferred (``says``); a clean one exits 0.
    """
    path = tmp_path / "capture.bin"
    path.write_bytes(data)
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "replay", str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), f"replay exited {done.returncode}: {done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    if says:
        assert done.returncode == 1 and says in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _events(data: bytes) -> tuple[list[dict], EventStream]:
    stream = EventStream()
    return events_from_capture(data, stream), stream


def _in_order(events: list[dict]) -> bool:
    times = [e["t_us"] for e in events]
    return all(t >= 0 for t in times) and times == sorted(times)


def test_one_frame_five_seconds_ahead_is_an_outlier(tmp_path, clean, clean_verdicts) -> None:
    bodies = mutate.split(clean)
    damaged = mutate.join(
        mutate.shift_time(bodies, mutate.indices(bodies, "CUSHION_HIT")[3], 5_000_000)
    )
    assert _decided(_replay_subprocess(tmp_path, damaged, "'outliers': 1")) == clean_verdicts
    events, stream = _events(damaged)
    assert stream.counters["outliers"] == 1
    assert _in_order(events)
    assert not [e for e in events if e["type"] == "node_status"]  # no offline/online storm


def test_a_cue_clock_jump_is_resynced_and_reported_once(tmp_path, clean, clean_verdicts) -> None:
    bodies = mutate.split(clean)
    damaged = mutate.join(mutate.clock_jump(bodies, len(bodies) // 2, 3, 50_000_000))
    replayed = _replay_subprocess(tmp_path, damaged, "cue clock stepped +50.0")
    assert _decided(replayed) == clean_verdicts
    events, stream = _events(damaged)
    assert stream.counters["clock_steps"] == 1
    assert [n for n in stream.timeline.notices if "cue clock stepped +50.0" in n]
    assert not [e for e in events if e["type"] == "node_status"]
    assert _in_order(events)


@pytest.mark.parametrize("continues", [True, False], ids=["counters-run-on", "seq-restarted"])
def test_a_stray_hello_is_survived(tmp_path, clean, clean_verdicts, continues) -> None:
    bodies = mutate.split(clean)
    at = len(bodies) // 2
    hub_before = [i for i in range(at) if mutate.node(bodies[i]) == 0][-1]
    hello = mutate.stray_hello(bodies, at)
    if continues:  # a hub that sent a HELLO without rebooting: its clock and seq run on
        seq = int.from_bytes(bodies[hub_before][4:6], "little") + 1
        hello[at] = mutate.with_t_us(
            mutate.with_seq(hello[at], seq), mutate.t_us(bodies[hub_before])
        )
        hello = [
            mutate.with_seq(b, int.from_bytes(b[4:6], "little") + 1)
            if i > at and mutate.node(b) == 0
            else b
            for i, b in enumerate(hello)
        ]
    damaged = mutate.join(hello)
    assert _decided(_replay_subprocess(tmp_path, damaged)) == clean_verdicts
    events, stream = _events(damaged)
    assert _in_order(events)
    if continues:
        assert stream.counters["stray_hellos"] == 1
        assert [e["type"] for e in events].count("boot") == 1


@pytest.fixture(scope="module")
def rebooted() -> bytes:
    return _capture(8, 1.5, faults=FaultPlan(reboots_s=(40.0,)))


def test_a_reboot_whose_hello_is_lost_is_recognised(tmp_path, rebooted) -> None:
    bodies = mutate.split(rebooted)
    hellos = mutate.indices(bodies, "HELLO")
    assert len(hellos) == 2
    lost = mutate.join([b for i, b in enumerate(bodies) if i != hellos[1]])
    with_hello = [
        (v["verdict"], v["rules"], v.get("satisfied"), v["break"])
        for v in replay(rebooted).lines
        if v["kind"] == "verdict"
    ]
    without = _replay_subprocess(tmp_path, lost)
    assert [
        (v["verdict"], v["rules"], v.get("satisfied"), v["break"])
        for v in without
        if v["kind"] == "verdict"
    ] == with_hello
    events, stream = _events(lost)
    assert stream.counters["inferred_boots"] == 1
    boots = [e for e in events if e["type"] == "boot"]
    assert [b["boot_id"] is None for b in boots] == [False, True]
    assert _in_order(events)


def test_a_hello_after_its_inferred_boot_is_the_same_boot(rebooted) -> None:
    """Issue 26: a live run wrote three boot events for one reboot: the timeline inferred the
    reboot from the restarted clocks, then the boot's HELLO, stamped behind the frames that
    made the inference (over ``hub_back_us``), started an epoch of its own.  A HELLO within
    ``join_us`` of an inferred boot is that boot's: one boot event per reboot, as the
    daemon counts them.  Here the reboot's HELLO comes after its next two hub frames."""
    bodies = mutate.split(rebooted)
    hello = mutate.indices(bodies, "HELLO")[1]
    hub = [i for i in range(hello + 1, len(bodies)) if mutate.node(bodies[i]) == 0]
    later = hub[1] + 1
    late = mutate.join(
        [*bodies[:hello], *bodies[hello + 1 : later], bodies[hello], *bodies[later:]]
    )
    events, stream = _events(late)
    boots = [e for e in events if e["type"] == "boot"]
    assert stream.counters["inferred_boots"] == 1
    assert [b["boot_id"] is None for b in boots] == [False, True]  # was [False, True, False]
    assert _in_order(events)
    assert _decided(replay(late).lines) == _decided(replay(rebooted).lines)


def test_a_hub_clock_stepping_back_without_hello_keeps_time_in_order(
    tmp_path, clean, clean_verdicts
) -> None:
    bodies = mutate.split(clean)
    damaged = mutate.join(mutate.hub_step(bodies, len(bodies) // 2, -3_000_000))
    verdicts = _replay_subprocess(tmp_path, damaged)
    assert [(v["verdict"], v.get("satisfied")) for v in _decided(verdicts)] == [
        (v["verdict"], v.get("satisfied")) for v in clean_verdicts
    ]
    events, _ = _events(damaged)
    assert _in_order(events)


# ---------------------------------------------------------------- joining a running match


@pytest.fixture(scope="module")
def long_match() -> bytes:
    return _capture(7, 3.0)


def _by_start(data: bytes) -> dict[int, tuple[int, dict]]:
    """Verdicts keyed by their shot's start (hub µs mod 2**32: a join unwraps from elsewhere)."""
    result = replay(data)
    starts = {e["shot"]: e["t_us"] for e in result.events if e["type"] == "shot_start"}
    out = {}
    for v in result.lines:
        if v["kind"] == "verdict" and v["shot"] in starts:
            out[starts[v["shot"]] % WRAP] = (starts[v["shot"]], v)
    return out


def test_a_capture_cut_at_any_byte_gives_the_full_verdicts_two_seconds_on(long_match) -> None:
    full = _by_start(long_match)
    rng = np.random.default_rng(14)
    keys = ("break", "verdict", "rules", "satisfied")
    compared = 0
    for offset in rng.integers(1, len(long_match) * 2 // 3, 20):
        cut = long_match[int(offset) :]
        events, _ = _events(cut)
        assert _in_order(events)
        boot = next(e for e in events if e["type"] == "boot")
        assert boot["inferred"] and boot["boot_id"] is None
        attach = (
            boot["t_us"] - 500_000
        ) % WRAP  # the inferred boot comes 0.5 s after the first hub frame
        got = _by_start(cut)
        for start, (_, want) in full.items():
            if (start - attach) % WRAP < 2_000_000 or (start - attach) % WRAP > WRAP // 2:
                continue  # before the join, or within its first 2 s
            near = [k for k in got if abs(k - start) < 1_000]  # clock models a few µs apart
            assert near, f"cut at {offset}: the shot starting at {start} is missing"
            assert {k: got[near[0]][1].get(k) for k in keys} == {k: want.get(k) for k in keys}, (
                f"cut at byte {offset}"
            )
            compared += 1
    assert compared > 50
