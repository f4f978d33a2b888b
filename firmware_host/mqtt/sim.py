"""Virtual tables on one broker, in one process: ``club-sim`` and ``bench/club.py``.

Each table is the real thing but the process: the virtual table's hub on a
pseudo-terminal of its own (:class:`~firmware_host.virtual_table.peer.VirtualHub`,
the real wire protocol), a :class:`~firmware_host.live.daemon.Daemon` reading it,
and a :class:`~.publisher.TablePublisher` with its own spool.  The tables of a
process share the compiled numba kernels (a ``run`` process per table would
load them, ~150 MB and seconds, once per table); ``club-sim --processes P``
spreads the tables over P such processes, so that the GIL is not the limit.
"""

from __future__ import annotations

import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .publisher import TablePublisher
from .spool import Spool
from .topics import BrokerUrl

LINGER_S = 0.3  # after its match, a table's daemon judges what it read, then stops


@dataclass
class SimTable:
    name: str
    hub: Any
    daemon: Any = None
    publisher: Any = None  # its TablePublisher
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    verdicts: int = 0  # verdict lines this table decided
    lines: int = 0  # verdict and notice lines
    over_at: float | None = None  # when its match ended


def build(
    names: list[str], seed: int, minutes: float, sensors: str, say: Callable[[str], None]
) -> list[Any]:
    """Each table's match on the wire (a different seed each), built before any clock starts."""
    from ..virtual_table import scenarios
    from ..virtual_table.hub import HubConfig, build_wire

    wires = []
    for i, _ in enumerate(names):
        match = scenarios.random_match(seed=seed + i, minutes=minutes)
        wires.append(build_wire(match, HubConfig(sensors=sensors, seed=seed + i)))
        say(f"built {i + 1} of {len(names)} matches")
    return wires


def play(
    url: BrokerUrl,
    names: list[str],
    wires: list[Any],
    *,
    speed: float,
    spool_dir: Path,
    say: Callable[[str], None],
    password: str | None = None,
    tokens: dict[str, Any] | None = None,
    every_s: float = 2.0,
) -> dict[str, Any]:
    """Every table's match at ``speed`` against the broker; a summary once all are over.

    ``tokens``: each table's RefereeToken, for the referee's controls over the broker."""
    from ..live.daemon import Daemon
    from ..pipeline import replay
    from ..service.health import HealthMonitor
    from ..virtual_table.peer import VirtualHub

    replay(b"".join(wires[0].chunks[:200]))  # the kernels loaded here, before any thread
    tables = []
    for name, wire in zip(names, wires, strict=True):
        hub = VirtualHub(wire, speed=speed)
        table = SimTable(name, hub)
        table.daemon = daemon = Daemon(hub.device, on_line=_counter(table))
        table.publisher = TablePublisher(
            url,
            name,
            Spool(spool_dir / f"{name}.sqlite"),
            password=password,
            press=daemon.press,
            token=(tokens or {}).get(name),
        )
        table.publisher.start().attach(daemon)
        daemon.listen(HealthMonitor(daemon, None))  # the health to the broker at 1 Hz
        table.thread = threading.Thread(target=table.daemon.run, args=(table.stop,), daemon=True)
        tables.append(table)
    cpu0, wall0 = _cpu_s(), time.monotonic()
    try:
        for table in tables:
            assert table.thread is not None
            table.thread.start()
        for table in tables:
            table.daemon.connected.wait(20)
        for table in tables:
            table.hub.start()
        started = time.monotonic()
        said = started
        while any(t.thread is not None and t.thread.is_alive() for t in tables):
            time.sleep(0.05)
            for table in tables:
                if table.hub.finished and table.over_at is None:
                    table.over_at = time.monotonic()
                if table.over_at is not None and time.monotonic() - table.over_at > LINGER_S:
                    table.stop.set()
            now = time.monotonic()
            if now - said >= every_s:
                said = now
                say(_progress(tables, now - started))
    finally:
        for table in tables:
            table.stop.set()
            table.hub.stop()
        for table in tables:
            if table.thread is not None:
                table.thread.join(30)
    played_s = time.monotonic() - wall0
    for table in tables:
        table.publisher.close()
        table.hub.close()
    cpu = _cpu_s() - cpu0
    return {
        "tables": {
            t.name: {
                "verdicts": t.verdicts,
                "lines": t.lines,
                "sent": t.publisher.sent,
                "queued": t.publisher.queued,
                "dropped_events": t.publisher.spool.dropped,
                "late_or_refused": t.daemon.engine.losses(),  # the pipeline could not keep up
            }
            for t in tables
        },
        "wall_s": round(played_s, 3),
        "cpu_s": round(cpu, 3),
    }


def _counter(table: SimTable) -> Callable[[dict[str, Any]], None]:
    def count(line: dict[str, Any]) -> None:
        table.lines += 1
        table.verdicts += line.get("kind") == "verdict"

    return count


def _progress(tables: list[SimTable], elapsed_s: float) -> str:
    over = sum(t.hub.finished for t in tables)
    verdicts = sum(t.verdicts for t in tables)
    sent = sum(t.publisher.sent for t in tables)
    queued = sum(t.publisher.queued for t in tables)
    return (
        f"{elapsed_s:5.0f} s: {over} of {len(tables)} matches over, {verdicts} verdicts, "
        f"{sent} messages acknowledged by the broker, {queued} queued"
    )


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
