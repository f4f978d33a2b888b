"""A recording into pcapng packets (see :mod:`.pcapng`, :mod:`.recording`).

Each packet is a :data:`LINK_HEADER` and then the frame's wire bytes (COBS
and its ``0x00``), as Linux's cooked capture puts what the host knew of a
packet before it: the direction, the frame's capture offset (``decode``'s
``offset``), the decoder's ``seq`` mark (:mod:`protocol.seqwindow`: gap,
late, duplicate, counter restart, reboot) and whether the recording cut the
frame or began inside it.  The rule that marks a frame stays in one place
(the decoder); the dissector only shows the mark, with expert info, and no
packet needs a comment.

Timestamps: Wireshark wants wall-clock time, a recording has a monotonic
host clock or the hub's.  The first frame is placed at the recording's
start as its part name gives it (``capture-YYYYmmdd-HHMMSS-…``, UTC; the
Unix epoch for any other name) and every later frame by its clock's
difference from the first, so Wireshark's relative times are exactly the
recording's.
"""

from __future__ import annotations

import re
import struct
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

#: The link header before each frame's wire bytes (16 bytes, little-endian), as
#: (name, struct code): the dissector declares its fields from this list.
LINK_FIELDS = (
    ("version", "B"),  # LINK_VERSION
    ("direction", "B"),  # TO_HOST (the table's frames) or TO_TABLE (the host's)
    ("seq_mark", "B"),  # protocol.seqwindow: what the frame's seq said (NONE: host, bad)
    ("frame", "B"),  # recording.WHOLE, CUT (the capture ended in it), JOINED (began in it)
    ("seq_gap", "H"),  # GAP: frames of its node missing just before it
    ("reserved", "H"),
    ("offset", "q"),  # its capture offset (decode's offset); a host frame's: where the stream stood
)
LINK_HEADER = struct.Struct("<" + "".join(code for _, code in LINK_FIELDS))
LINK_VERSION = 1
TO_HOST, TO_TABLE = 0, 1
DIRECTION_NAMES = {TO_HOST: "table to host", TO_TABLE: "host to table"}


def link_header(direction: int, offset: int, mark: int, gap: int, kind: int) -> bytes:
    """The bytes before a frame in its packet (``kind``: recording.WHOLE, CUT or JOINED)."""
    return LINK_HEADER.pack(LINK_VERSION, direction, mark, kind, gap, 0, offset)


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
    columns = (recording.host, recording.offset, recording.seq_mark, recording.seq_gap)
    for i, (host, offset, mark, gap, kind, t) in enumerate(
        zip(*(c.tolist() for c in (*columns, recording.kind, ts)), strict=True)
    ):
        head = link_header(TO_TABLE if host else TO_HOST, offset, mark, gap, kind)
        writer.packet(head + recording.frame(i), max(t, 0), direction=OUTBOUND if host else INBOUND)
        if i % PROGRESS_EVERY == PROGRESS_EVERY - 1:
            progress(i + 1, len(recording))
    return writer.packets
