"""Recording retention: keep N days or N GB of a table's recordings, oldest deleted first.

A table records every day for years on a small SD card.  The recorder never
deletes anything (a writer that never loses data); this keeps the folder
within bounds instead, from a thread of its own in ``run`` (every
``EVERY_S`` and once at the start), so the disk never fills.  Parts are
taken in name order, which is stream order (``capture-YYYYmmdd-HHMMSS-NNNN``),
with their ``.rxt`` side files; the parts being written are never touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..files import is_regular

log = logging.getLogger(__name__)

EVERY_S = 60.0
DAY_S = 86_400.0


SIDE_FILES = (".rxt", ".tx")  # host receive times, frames the host sent (recorder.py)


def _files(part: Path) -> list[Path]:
    return [part, *(part.with_suffix(suffix) for suffix in SIDE_FILES)]


def _size(part: Path) -> int:
    return sum(p.stat().st_size for p in _files(part) if p.exists())


def prune(
    folder: Path,
    keep_days: float | None,
    keep_bytes: int | None,
    now: float,
    writing: Iterable[Path] = (),
) -> list[Path]:
    """Delete the oldest parts older than ``keep_days`` or beyond ``keep_bytes`` in all;
    returns what was deleted."""
    busy = {p.resolve() for p in writing}
    parts = [
        p for p in sorted(folder.glob("capture-*.bin")) if p.resolve() not in busy and is_regular(p)
    ]
    sizes = {p: _size(p) for p in parts}
    total = sum(sizes.values()) + sum(_size(p) for p in busy if p.exists())
    gone = []
    for part in parts:
        too_old = keep_days is not None and now - part.stat().st_mtime > keep_days * DAY_S
        too_much = keep_bytes is not None and total > keep_bytes
        if not (too_old or too_much):
            break  # the rest are newer and fit
        for p in _files(part):
            p.unlink(missing_ok=True)
        total -= sizes[part]
        gone.append(part)
    return gone


def keep_pruning(
    folder: Path,
    keep_days: float | None,
    keep_bytes: int | None,
    writing: Callable[[], Iterable[Path]],
    stop: threading.Event,
) -> threading.Thread:
    """A daemon thread that prunes now and every ``EVERY_S`` until ``stop``."""

    def loop() -> None:
        while True:
            try:
                gone = prune(folder, keep_days, keep_bytes, time.time(), writing())
            except OSError as exc:
                log.warning("recording retention in %s: %s", folder, exc)
            else:
                if gone:
                    log.info(
                        "recording retention: deleted %d parts, oldest %s", len(gone), gone[0].name
                    )
            if stop.wait(EVERY_S):
                return

    thread = threading.Thread(target=loop, name="recording retention", daemon=True)
    thread.start()
    return thread
