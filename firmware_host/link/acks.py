"""The hub's ACK frames, picked out of raw bytes as they are read (ICD §5).

The command link's resend timer runs in wire time, so its ACKs are taken
here, in the reader's thread, from the bytes themselves: whoever reads the
port (the daemon, ``send`` and ``ping``) hands each chunk to an
:class:`AckSniffer` before anything else looks at it.
"""

from __future__ import annotations

import re

from protocol.catalogue import BY_NAME, MAX_BODY
from protocol.framing import Message, parse_frame


class AckSniffer:
    """The hub's ACK frames out of raw bytes, in the reader thread, as they arrive.

    The command link gives the hub 50 ms per transmission, while the
    pipeline thread may be busy far longer (loading the numba kernels on its
    first feed, a cold start's worker, a burst to catch up), so the daemon
    takes every ACK here, never from the pipeline.  A frame's COBS code byte
    is followed by the body's first bytes unchanged up to its first zero;
    version and msg_type are never zero in a valid frame, so a regular
    expression (scanned in C: no per-frame Python object on the bulk path)
    finds the frames whose msg_type is ACK, and only those are parsed (CRC
    checked, through the catalogue like every frame).  The stream's first
    byte counts as a frame start, as the decoder's does.
    """

    ACK = BY_NAME["ACK"].msg_type
    _FRAME = re.compile(rb"\x00([\x03-\xff][^\x00]%b[^\x00]*)(?=\x00)" % re.escape(bytes([ACK])))

    def __init__(self) -> None:
        self._carry = b"\x00"  # from the last delimiter on: the start of the next frame

    def feed(self, data: bytes) -> list[dict[str, int]]:
        buf = self._carry + data
        last = buf.rfind(b"\x00")
        if last < 0:  # inside a frame: an over-long run is garbage, a new start comes later
            self._carry = buf if len(buf) <= MAX_BODY + 2 else b""
            return []
        self._carry = buf[last:]
        acks = []
        for found in self._FRAME.finditer(buf, 0, last + 1):
            msg = parse_frame(found.group(1))
            if isinstance(msg, Message):
                acks.append(msg.fields)
        return acks
