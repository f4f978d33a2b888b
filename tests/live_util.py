"""A live daemon against the virtual table on a real pty, for the daemon's and the recorder's tests."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from firmware_host.live.daemon import Daemon
from firmware_host.pipeline import replay
from firmware_host.virtual_table.peer import VirtualHub

SPEED = 8.0


def referee_live(wire, tmp_path: Path, timeout_s: float = 120.0, sinks=(), first=False):
    """The match on ``wire`` refereed live; ``sinks``: more of the daemon's listeners
    (``first``: before its own)."""
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
        for sink in sinks:
            daemon.listen(sink, first=first)
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


def false_fouls(lines: list[dict], plain: list[dict]) -> list[dict]:
    """The foul lines of ``lines`` that the same match without a fault (``plain``) has no
    foul for: a foul of a shot (early or final) whose rules are not all among the rules of
    that shot's fouls in ``plain``, or a foul outside any shot beyond ``plain``'s ones.
    A fault may cost a decision (``referee``, or a legal shot the sensors left open),
    never add a foul."""
    fouled: dict[object, set[str]] = {}
    for line in plain:
        if line.get("kind") == "verdict" and line.get("verdict") == "foul":
            fouled.setdefault(line.get("shot"), set()).update(line.get("rules", []))
    return [
        line
        for line in lines
        if line.get("kind") == "verdict"
        and line.get("verdict") == "foul"
        and not set(line.get("rules", [])) <= fouled.get(line.get("shot"), set())
    ]
