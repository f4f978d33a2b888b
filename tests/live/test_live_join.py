"""A host that joins a running match, on a table that never answers REQUEST_HELLO.

The virtual table plays on a real pty from its boot; the daemon opens the
port 20 s (match time) later, so it never sees a HELLO and its
REQUEST_HELLO goes unanswered.  Every shot that starts 2 s or more after
the join must get the verdict a replay of the whole match gives.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

from firmware_host.live.daemon import Daemon
from firmware_host.pipeline import replay
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.match import random_match
from firmware_host.virtual_table.peer import VirtualHub
from protocol.decoder import decode_capture

pytestmark = pytest.mark.wall_s(30)  # alone, on an idle core: run first (conftest.py)

SPEED = 4.0
JOIN_S = 20.0
WRAP = 1 << 32
KEYS = ("break", "verdict", "rules", "satisfied")


def _starts(events: list[dict]) -> dict[int, int]:
    return {e["shot"]: e["t_us"] for e in events if e["type"] == "shot_start"}


def _live_from(recorded: bytes) -> int:
    """Hub time from which the host got the table's bytes as they were sent.

    Until a host reads the pty, the kernel and the virtual hub buffer a few
    seconds of frames and drop the rest (a serial line would just lose
    them): what the host reads first is that stale backlog, then a gap.
    """
    hub_t = decode_capture(recorded).tables["CLOCK_SYNC"]["t_us"].astype(np.int64)
    gaps = np.diff(hub_t) % WRAP
    return int(hub_t[int(np.argmax(gaps)) + 1]) if gaps.max() > 1_000_000 else int(hub_t[0])


def test_a_host_joining_20_s_into_a_match_gives_the_full_replays_verdicts(tmp_path, caplog) -> None:
    cfg = HubConfig(seed=7, faults=FaultPlan(no_ack=((0.0, 1e6),)))
    wire = build_wire(random_match(7, 1.5), cfg)
    full = replay(b"".join(wire.chunks))  # also compiles the kernels on this thread
    want = {
        _starts(full.events)[v["shot"]] % WRAP: v
        for v in full.lines
        if v["kind"] == "verdict" and v["shot"] is not None
    }
    lines: list[dict] = []
    events: list[dict] = []
    stop = threading.Event()
    caplog.set_level(logging.INFO)
    with VirtualHub(wire, speed=SPEED) as hub:  # the table boots and plays from now
        time.sleep((cfg.lead_s + JOIN_S) / SPEED)
        daemon = Daemon(
            hub.device, record_dir=tmp_path, on_event=events.append, on_line=lines.append
        )
        runner = threading.Thread(target=lambda: daemon.run(stop))
        runner.start()
        deadline = time.monotonic() + 120
        while not hub.finished and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        stop.set()
        runner.join(10)
    boot = next(e for e in events if e["type"] == "boot")
    assert boot["inferred"] and boot["boot_id"] is None, "the daemon saw a HELLO: not a join"
    joined = _live_from(b"".join(p.read_bytes() for p in sorted(tmp_path.glob("*.bin"))))
    got = {
        _starts(events)[v["shot"]] % WRAP: v
        for v in lines
        if v["kind"] == "verdict" and v["shot"] is not None and not v.get("early")
    }
    compared = 0
    for start, verdict in want.items():
        if not 2_000_000 <= (start - joined) % WRAP < WRAP // 2:
            continue
        near = [k for k in got if abs(k - start) < 1_000]
        assert near, (
            f"the shot starting at {start} has no live verdict (joined {joined}, {sorted(got)})"
        )
        assert {k: got[near[0]].get(k) for k in KEYS} == {k: verdict.get(k) for k in KEYS}
        compared += 1
    assert compared >= 3, f"only {compared} shots after the join"
    unanswered = [r for r in caplog.records if "no ACK for REQUEST_HELLO" in r.getMessage()]
    assert len(unanswered) == 1, "a table that never answers is told once, not at every resend"
