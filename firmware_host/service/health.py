"""The daemon's health, written as a status file once a second, and judged by ``status``.

The daemon's pipeline thread calls :meth:`HealthMonitor.turn` on every turn
of its loop; once a second it writes ``status.json`` (atomically: a reader
sees the old file or the new one) and pings systemd's watchdog.  The file
holds facts (link, per-node last frame age, frame counts and rates, the
timing core's counters, the lamp link, recording space, the last verdict);
:func:`problems` turns them into what is wrong, in words, so that
``firmware-host status`` and a monitoring system read the same judgement.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import deque
from pathlib import Path
from typing import Any

from protocol.catalogue import NODE_NAMES

from .notify import Notifier

WRITE_S = 1.0  # the status file is rewritten this often
STALE_S = 10.0  # a status file older than this: the daemon has stopped or stalled
SILENT_S = 2.0  # a present node unheard this long is silent (syncs come at >= 4 Hz)
RATE_WINDOW_S = 60.0  # bad and lost frames, and clock refusals, are rated over this
BAD_PER_MIN = 10.0  # more bad or lost frames a minute than this is a degraded link
CLOCK_PER_MIN = 5.0  # more refused syncs, outliers or clock steps a minute: mapping degraded
FREE_BYTES_MIN = 1 << 30  # under 1 GiB free where recordings go is degraded
CLOCK_COUNTERS = ("refused_syncs", "outliers", "clock_steps", "unsynced_dropped")


class HealthMonitor:
    """Keeps the status file and the watchdog for one daemon (see the module's docstring)."""

    def __init__(
        self,
        daemon: Any,
        path: str | Path | None,
        notifier: Notifier | None = None,
        record_dir: str | Path | None = None,
        feed: Any = None,
    ) -> None:
        self.daemon = daemon
        self.path = Path(path) if path is not None else None
        self.notifier = notifier or Notifier({})
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self.feed = feed  # the live page's (web.feed.LiveFeed), or None
        self._written_ns = 0
        self._history: deque[tuple[float, int, int, int]] = deque()

    def turn(self, now_ns: int) -> None:
        """The pipeline thread's heartbeat: READY once the port is open, the watchdog, the file."""
        notifier = self.notifier
        if not notifier.ready_sent and self.daemon.connected.is_set():
            notifier.ready(f"refereeing the table on {self.daemon.url}")
        notifier.ping(now_ns)
        wanted = self.path is not None or self.feed is not None
        if wanted and now_ns - self._written_ns >= WRITE_S * 1e9:
            self._written_ns = now_ns
            status = self.status(now_ns)
            if self.path is not None:
                write_status(self.path, status)
            if self.feed is not None:
                self.feed.health(status, problems(status, time.time()))

    def status(self, now_ns: int) -> dict[str, Any]:
        daemon = self.daemon
        decoder = daemon.engine.decoder_stats() or {}
        losses = daemon.engine.losses() or {}
        bad = sum(decoder.get("bad", {}).values())
        lost = sum(decoder.get("lost", {}).values())
        clock = sum(int(losses.get(k, 0)) for k in CLOCK_COUNTERS)
        now_s = now_ns / 1e9
        self._history.append((now_s, bad, lost, clock))
        while self._history and now_s - self._history[0][0] > RATE_WINDOW_S:
            self._history.popleft()
        t0, bad0, lost0, clock0 = self._history[0]
        minutes = max(now_s - t0, 1.0) / 60.0
        nodes = sorted(daemon.nodes_present | set(daemon.heard_ns))
        return {
            "written_unix": time.time(),
            "pid": os.getpid(),
            "port": daemon.url,
            "link": "up" if daemon.connected.is_set() else "down",
            "link_losses": daemon.stats.link_losses,
            "hub_reboots": daemon.stats.reboots,
            "nodes": {
                str(n): {
                    "name": NODE_NAMES.get(n, f"node {n}"),
                    "present": n in daemon.nodes_present,
                    "last_frame_age_s": (
                        round((now_ns - daemon.heard_ns[n]) / 1e9, 3)
                        if n in daemon.heard_ns
                        else None
                    ),
                }
                for n in nodes
            },
            "frames": {
                "good": int(decoder.get("frames", 0)),
                "bad": bad,
                "lost": lost,
                "bad_per_min": round((bad - bad0) / minutes, 2),
                "lost_per_min": round((lost - lost0) / minutes, 2),
            },
            "clock": {
                **{k: int(losses.get(k, 0)) for k in CLOCK_COUNTERS},
                "per_min": round((clock - clock0) / minutes, 2),
            },
            "indicator": "ok" if daemon.indicator_ok else "failed",
            "indicator_failures": daemon.stats.indicator_failures,
            "indicator_problem": daemon.indicator_problem,
            "recording": _space(self.record_dir),
            "verdicts": daemon.stats.verdicts,
            "last_verdict": daemon.last_verdict,
        }


def _space(folder: Path | None) -> dict[str, Any] | None:
    if folder is None:
        return None
    try:
        usage = shutil.disk_usage(folder)
    except OSError as exc:
        return {"dir": str(folder), "error": exc.strerror or str(exc)}
    return {"dir": str(folder), "free_bytes": usage.free, "total_bytes": usage.total}


def write_status(path: Path, status: dict[str, Any]) -> None:
    """Atomically: a monitoring system never reads half a file.  A write that fails (a full
    disk) is skipped: refereeing goes on, and the file's age tells the reader."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(status, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def problems(status: dict[str, Any], now_unix: float) -> list[str]:
    """What is wrong, one phrase each; empty when healthy."""
    found = []
    age = now_unix - float(status.get("written_unix", 0))
    if age > STALE_S:
        found.append(f"the daemon has not written its status for {age:.0f} s (stopped or stalled)")
    if status.get("link") != "up":
        found.append(f"link down ({status.get('port')})")
    for n, node in sorted(status.get("nodes", {}).items(), key=lambda kv: int(kv[0])):
        heard = node.get("last_frame_age_s")
        if node.get("present") and (heard is None or heard > SILENT_S):
            since = "never heard" if heard is None else f"silent for {heard:.0f} s"
            found.append(f"node {n} ({node.get('name')}): {since}")
    frames = status.get("frames", {})
    for kind in ("bad", "lost"):
        rate = float(frames.get(f"{kind}_per_min", 0))
        if rate > BAD_PER_MIN:
            found.append(f"{rate:.0f} {kind} frames a minute (over {BAD_PER_MIN:.0f})")
    clock = status.get("clock", {})
    if float(clock.get("per_min", 0)) > CLOCK_PER_MIN:
        found.append(
            f"clock mapping: {clock['per_min']:.0f} refused syncs, outliers or steps a minute"
        )
    if status.get("indicator") != "ok":
        why = status.get("indicator_problem") or "a lamp command was never acknowledged"
        found.append(f"indicator link failed: {why}")
    rec = status.get("recording")
    if rec and "error" in rec:
        found.append(f"recording folder {rec['dir']}: {rec['error']}")
    elif rec and rec["free_bytes"] < FREE_BYTES_MIN:
        found.append(f"recording folder {rec['dir']}: {rec['free_bytes'] / 2**20:.0f} MiB free")
    return found
