"""A recording into pcapng packets (see :mod:`.pcapng`, :mod:`.recording`).

Timestamps: Wireshark wants wall-clock time, a recording has a monotonic
host clock or the hub's.  The first frame is placed at the recording's
start as its part name gives it (``capture-YYYYmmdd-HHMMSS-…``, UTC; the
Unix epoch for any other name) and every later frame by its clock's
difference from the first, so Wireshark's relative times are exactly the
recording's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from .pcapng import INBOUND, OUTBOUND, PcapngWriter
from .recording import Recording

_STARTED = re.compile(r"-(\d{8}-\d{6})-\d+$")


def started_ns(path: str | Path) -> int:
    """The recording's UTC start from its part name, in ns since the epoch (0 if unnamed)."""
    found = _STARTED.search(Path(path).stem)
    if not found:
        return 0
    when = datetime.strptime(found.group(1), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    return int(when.timestamp()) * 1_000_000_000


PROGRESS_EVERY = 1 << 16  # packets between two calls of ``progress``


def write_pcapng(
    recording: Recording,
    out: BinaryIO,
    path: str | Path,
    progress: Callable[[int, int], object] = lambda done, total: None,
) -> int:
    """Every frame as a packet; returns how many.  ``progress(done, total)`` now and then."""
    writer = PcapngWriter(out)
    if not len(recording):
        return 0
    ts = started_ns(path) + (recording.time_ns - recording.time_ns[0])
    for i, (host, offset, t) in enumerate(
        zip(recording.host.tolist(), recording.offset.tolist(), ts.tolist(), strict=True)
    ):
        writer.packet(
            recording.frame(i),
            max(t, 0),
            direction=OUTBOUND if host else INBOUND,
            comment=f"{'sent at' if host else 'offset'} {offset}",
        )
        if i % PROGRESS_EVERY == PROGRESS_EVERY - 1:
            progress(i + 1, len(recording))
    return writer.packets
