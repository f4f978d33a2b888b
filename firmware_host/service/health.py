"""The daemon's health, written as a status file once a second, and judged by ``status``.

The monitor is one of the daemon's sinks (``Daemon.listen``): the pipeline
thread calls :meth:`HealthMonitor.on_turn` on every turn of its loop; it pings
systemd's watchdog, and once a second writes ``status.json`` (atomically: a
reader sees the old file or the new one) and tells the daemon's sinks the
health (``on_health``: the live page, the broker).  The file
holds facts (link, per-node last frame age, frame counts and rates, the
timing core's counters, the lamp link, recording space, the last verdict);
:func:`problems` turns them into what is wrong, in words, so that
``firmware-host status`` and a monitoring system read the same judgement.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from protocol.catalogue import NODE_NAMES

from ..files import replace_atomically
from ..live.listeners import Listener
from ..untrusted import NONE, DictOf, ListOf, Refused, Spec, check_shape, json_object
from .notify import Notifier

log = logging.getLogger(__name__)

WRITE_S = 1.0  # the status file is rewritten this often
REMIND_S = 60.0  # a status file that cannot be written is said again this often
STALE_S = 10.0  # a status file older than this: the daemon has stopped or stalled
SILENT_S = 2.0  # a present node unheard this long is silent (syncs come at >= 4 Hz)
RATE_WINDOW_S = 60.0  # bad and lost frames, and clock refusals, are rated over this
BAD_PER_MIN = 10.0  # more bad or lost frames a minute than this is a degraded link
CLOCK_PER_MIN = 5.0  # more refused syncs, outliers or clock steps a minute: mapping degraded
FREE_BYTES_MIN = 1 << 30  # under 1 GiB free where recordings go is degraded
CLOCK_COUNTERS = ("refused_syncs", "outliers", "clock_steps", "unsynced_dropped")
MAX_STATUS_BYTES = 1 << 20  # a status file is a few kB; anything bigger is not one
NUMBER = (int, float)
#: what ``problems`` and ``status`` read of a status file, with the types they read it as
STATUS: Spec = {
    "written_unix": NUMBER,
    "pid": (int,),
    "port": (str,),
    "link": (str,),
    "link_losses": (int,),
    "hub_reboots": (int,),
    "nodes": DictOf(
        {"name": (str,), "present": (bool,), "last_frame_age_s": (int, float, NONE)}, r"\d{1,3}"
    ),
    "frames": {k: NUMBER for k in ("good", "bad", "lost", "bad_per_min", "lost_per_min")},
    "clock": DictOf(NUMBER, r"[a-z_]{1,40}"),
    # issue 29: signed frames (ICD §9), seq conflicts and frames beyond a node's rate limit,
    # per node name (and reason)
    "wire": {
        "key": (str, NONE),
        "signed": (int,),
        "refused": DictOf(DictOf((int,), r"[a-z_]{1,20}"), r"[a-z0-9 ]{1,20}"),
        "conflicts": DictOf((int,), r"[a-z0-9 ]{1,20}"),
        "over_rate": DictOf((int,), r"[a-z0-9 ]{1,20}"),
    },
    "indicator": (str,),
    "indicator_failures": (int,),
    "recording": {"dir": (str,), "free_bytes": (int,), "total_bytes": (int,), "error": (str,)},
    "verdicts": (int,),
    "last_verdict": {
        "shot": (int, NONE),
        "verdict": (str,),
        "rules": ListOf(str),
        "satisfied": (str, NONE),
    },
    "mqtt": {
        "broker": (str,),
        "connected": (bool,),
        "queued": (int,),
        "sent": (int,),
        "refused": (int,),
        "refused_why": (str, NONE),
        "stalled_s": (int, float, NONE),
        "running": (bool,),
    },
    "status_file": {"path": (str,), "error": (str,)},
}


class HealthMonitor(Listener):
    """Keeps the status file and the watchdog for one daemon (see the module's docstring)."""

    name = "status"

    def __init__(
        self,
        daemon: Any,
        path: str | Path | None,
        notifier: Notifier | None = None,
        record_dir: str | Path | None = None,
        facts: Iterable[Callable[[], dict[str, Any]]] = (),
    ) -> None:
        self.daemon = daemon
        self.path = Path(path) if path is not None else None
        self.notifier = notifier or Notifier({})
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self.facts = list(facts)  # the edges' own facts (the club publisher's "mqtt")
        self._written_ns = 0
        self._write_error: str | None = None  # the status file's last write failed: why
        self._error_said = 0.0
        self._history: deque[tuple[float, int, int, int]] = deque()

    def on_turn(self, now_ns: int) -> None:
        """The pipeline thread's heartbeat: READY once the port is open, the watchdog; once a
        second the file and the health to the daemon's sinks."""
        notifier = self.notifier
        if not notifier.ready_sent and self.daemon.connected.is_set():
            notifier.ready(f"refereeing the table on {self.daemon.url}")
        notifier.ping(now_ns)
        if now_ns - self._written_ns >= WRITE_S * 1e9:
            self._written_ns = now_ns
            status = self.status(now_ns)
            if self.path is not None:
                self._write(status)
            if self._write_error is not None:
                status["status_file"] = {"path": str(self.path), "error": self._write_error}
            self.daemon.listeners.health(status, problems(status, time.time()))

    def _write(self, status: dict[str, Any]) -> None:
        """The file; a write that fails (a full disk) is said once, then once a minute while it
        lasts, and the page's and the broker's health name it; refereeing goes on."""
        assert self.path is not None
        try:
            write_status(self.path, status)
        except OSError as exc:
            error = exc.strerror or str(exc)
            now = time.monotonic()
            if error != self._write_error or now - self._error_said >= REMIND_S:
                log.error("status file %s: cannot write it (%s)", self.path, error)
                self._error_said = now
            self._write_error = error
            return
        if self._write_error is not None:
            log.warning("status file %s: written again", self.path)
        self._write_error = None

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
            "wire": {
                "key": daemon.signing.fingerprint if daemon.signing is not None else None,
                "signed": int(decoder.get("signed", 0)),
                "refused": decoder.get("refused", {}),
                "conflicts": decoder.get("conflicts", {}),
                "over_rate": decoder.get("over_rate", {}),
            },
            "indicator": "ok" if daemon.indicator_ok else "failed",
            "indicator_failures": daemon.stats.indicator_failures,
            "indicator_problem": daemon.indicator_problem,
            "recording": _space(self.record_dir),
            "verdicts": daemon.stats.verdicts,
            "last_verdict": daemon.last_verdict,
        } | {key: value for facts in self.facts for key, value in facts().items()}


def _space(folder: Path | None) -> dict[str, Any] | None:
    if folder is None:
        return None
    try:
        usage = shutil.disk_usage(folder)
    except OSError as exc:
        return {"dir": str(folder), "error": exc.strerror or str(exc)}
    return {"dir": str(folder), "free_bytes": usage.free, "total_bytes": usage.total}


def write_status(path: Path, status: dict[str, Any]) -> None:
    """Atomically (a monitoring system never reads half a file), under a temporary name no
    one can guess (a symlink planted at a predictable one clobbered another file).  A
    write that fails raises OSError: :class:`HealthMonitor` says it and goes on."""
    with replace_atomically(path) as out:
        out.write(json.dumps(status, separators=(",", ":")).encode())


def check_status_path(path: str) -> str:
    """``--status FILE``: a file that can be written, checked before the daemon starts (an
    unwritable one was never reported).  A ValueError says why not."""
    where = Path(path)
    folder = where.parent
    if where.is_dir():
        raise ValueError(f"{path}: is a directory")
    if not folder.is_dir():
        raise ValueError(f"{path}: no such directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{path}: cannot write in {folder}")
    return path


def read_status(data: bytes) -> dict[str, Any]:
    """A status file's contents, checked: what :func:`problems` and ``status`` read has the
    type they read it as, else :class:`~firmware_host.untrusted.Refused` says what is not."""
    status = json_object(data, MAX_STATUS_BYTES)
    check_shape(status, STATUS)
    recording = status.get("recording")
    if recording is not None and (
        "dir" not in recording or not recording.keys() & {"error", "free_bytes"}
    ):
        raise Refused('"recording" must have "dir", and "free_bytes" or "error"')
    return status


def problems(status: dict[str, Any], now_unix: float) -> list[str]:
    """What is wrong, one phrase each; empty when healthy."""
    found = []
    age = now_unix - float(status.get("written_unix", 0))
    if age > STALE_S:
        found.append(f"the daemon has not written its status for {age:.0f} s (stopped or stalled)")
    if status.get("link") != "up":
        found.append(f"link down ({status.get('port')})")
    for n, node in sorted((status.get("nodes") or {}).items(), key=lambda kv: int(kv[0])):
        heard = node.get("last_frame_age_s")
        if node.get("present") and (heard is None or heard > SILENT_S):
            since = "never heard" if heard is None else f"silent for {heard:.0f} s"
            found.append(f"node {n} ({node.get('name')}): {since}")
    frames = status.get("frames") or {}
    for kind in ("bad", "lost"):
        rate = float(frames.get(f"{kind}_per_min", 0))
        if rate > BAD_PER_MIN:
            found.append(f"{rate:.0f} {kind} frames a minute (over {BAD_PER_MIN:.0f})")
    clock = status.get("clock") or {}
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
    found += _club_problems(status.get("mqtt"))
    if status.get("status_file"):
        found.append(
            f"status file {status['status_file']['path']}: {status['status_file']['error']}"
        )
    return found


def _club_problems(mqtt: dict[str, Any] | None) -> list[str]:
    """The club broker's publisher (run --mqtt): refused, stalled or stopped."""
    if not mqtt:
        return []
    found = []
    if not mqtt.get("running", True):
        found.append("club publisher stopped: messages wait in the spool (restart the daemon)")
    if mqtt.get("refused_why"):
        found.append(
            f"club broker refuses this table's messages ({mqtt['refused_why']}; "
            f"{mqtt.get('refused')} so far): its user must be the table id (docs/club.md)"
        )
    if mqtt.get("stalled_s"):
        found.append(
            f"club broker: {mqtt.get('queued')} messages queued, none acknowledged "
            f"for {mqtt['stalled_s']:.0f} s"
        )
    return found
