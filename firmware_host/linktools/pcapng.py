"""A minimal pcapng writer (one section, one interface, enhanced packet blocks).

Written with :mod:`struct` rather than a library: the format needs three
block kinds and two options here, and python-pcapng/dpkt would be a new
dependency for forty lines.  The interface uses ``LINKTYPE_USER0`` (147)
with nanosecond timestamps; each packet may carry a direction (``epb_flags``
inbound/outbound) and a comment, which Wireshark shows as
``frame.comment``.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

LINKTYPE_USER0 = 147
SNAPLEN = 65535
INBOUND, OUTBOUND = 1, 2  # epb_flags direction bits (table -> host is inbound)

_SHB, _IDB, _EPB = 0x0A0D0D0A, 0x00000001, 0x00000006
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_OPT_END, _OPT_COMMENT, _IF_TSRESOL, _EPB_FLAGS = 0, 1, 9, 2


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad(value)


def _block(kind: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Packets to a binary file; timestamps in integer nanoseconds since the Unix epoch."""

    def __init__(self, out: BinaryIO, linktype: int = LINKTYPE_USER0) -> None:
        self._out = out
        out.write(_block(_SHB, struct.pack("<IHHq", _BYTE_ORDER_MAGIC, 1, 0, -1)))
        options = _option(_IF_TSRESOL, bytes([9])) + _option(_OPT_END, b"")
        out.write(_block(_IDB, struct.pack("<HHI", linktype, 0, SNAPLEN) + options))
        self.packets = 0

    def packet(self, data: bytes, ts_ns: int, *, direction: int = 0, comment: str = "") -> None:
        captured = data[:SNAPLEN]
        head = struct.pack(
            "<IIIII", 0, (ts_ns >> 32) & 0xFFFFFFFF, ts_ns & 0xFFFFFFFF, len(captured), len(data)
        )
        options = b""
        if direction:
            options += _option(_EPB_FLAGS, struct.pack("<I", direction))
        if comment:
            options += _option(_OPT_COMMENT, comment.encode())
        if options:
            options += _option(_OPT_END, b"")
        self._out.write(_block(_EPB, head + _pad(captured) + options))
        self.packets += 1
