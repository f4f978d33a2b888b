"""``decode``'s lines: one frame with everything the listing can say of it.

A :class:`Line` is a decoded item (message, bad frame, unknown type,
duplicate) with its frame-table row (offset, status, the decoder's
sequence mark), its wire bytes, and its times: the hub's (mapped,
:mod:`.hubtime`) and the host's (``.rxt`` or the live read).  The same line
is written as text (an aligned table, marks and hex under it), as a JSON
object (EVENTS.md's, keys added) or as a CSV row; filters read it as a
record of named fields (:mod:`.where`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cobs import cobs

from protocol.catalogue import HEADER_SIZE, MESSAGES, NODE_NAMES, Header
from protocol.decoder import STATUS_NAMES
from protocol.framing import BadFrame, Message, OverRate, Refused, Retransmission, UnknownFrame
from protocol.kernels import MAX_ENCODED
from protocol.seqwindow import CONFLICT, GAP, LATE, MARK_NAMES, REBOOT, RESTART

from ..cli.frame_text import field_text
from .hubtime import Stamp

TIME_AXES = ("hub", "host", "relative", "delta")
HEX_WIDTH = 32  # bytes per hex line
KEEP = MAX_ENCODED + 1  # bytes of an unfinished frame kept for its wire bytes
MARK_TEXT = {
    GAP: "GAP",
    LATE: "LATE (fills a gap)",
    RESTART: "COUNTER RESTART",
    REBOOT: "REBOOT",
    CONFLICT: "SEQ CONFLICT (its seq reused, other content: a forged frame?)",
}
MARK_KEYS = {LATE: "late", RESTART: "counter_restart", REBOOT: "reboot", CONFLICT: "conflict"}


class WireBytes:
    """The stream's recent bytes, so each frame a feed completes has its wire bytes and
    the offset of its delimiter.  An unfinished frame is kept up to :data:`KEEP` bytes; of
    a run longer than any frame only its last bytes (the feed that ends it) are at hand."""

    def __init__(self) -> None:
        self._tail, self._tail_base = b"", 0  # the unfinished frame's bytes, where they start
        self._next = 0  # stream offset of the next byte fed
        self._buf, self._buf_base = b"", 0
        self._ends = np.zeros(0, np.int64)

    def feed(self, chunk: bytes) -> None:
        contiguous = self._tail_base + len(self._tail) == self._next
        self._buf = (self._tail if contiguous else b"") + chunk
        self._buf_base = self._tail_base if contiguous else self._next
        data = np.frombuffer(chunk, np.uint8)
        self._ends = np.flatnonzero(data == 0).astype(np.int64) + self._next
        self._next += len(chunk)
        start = int(self._ends[-1]) + 1 if len(self._ends) else self._buf_base
        self._tail, self._tail_base = self._buf[start - self._buf_base :][:KEEP], start

    def ends(self, offsets: np.ndarray) -> np.ndarray:
        """The delimiter of each frame the last feed completed (by its start offset)."""
        if not len(self._ends):
            return np.zeros(len(offsets), np.int64)
        return self._ends[np.minimum(np.searchsorted(self._ends, offsets), len(self._ends) - 1)]

    def frame(self, offset: int, end: int) -> bytes:
        """The wire bytes from ``offset`` through the delimiter at ``end``, as far as kept."""
        return self._buf[max(offset - self._buf_base, 0) : end + 1 - self._buf_base]


@dataclass
class Line:
    """One frame of the listing."""

    item: Message | BadFrame | UnknownFrame | Retransmission | Refused | OverRate
    row: np.void  # its frame-table row (protocol.decoder.FRAME_DTYPE)
    stamp: Stamp = field(default_factory=lambda: Stamp(resolved=True))
    host_ns: int | None = None
    wire: bytes = b""
    sent: Any = None  # a frame the host sent (its .tx record), else None
    time_s: float | None = None  # on the chosen --time axis, set when it is shown
    keyed: bool = False  # the decoder held the table's key (its signed frames were checked)

    @property
    def frame(self) -> Message | BadFrame | UnknownFrame:
        if isinstance(self.item, Retransmission | Refused | OverRate):
            return self.item.frame
        return self.item

    @property
    def signature(self) -> str | None:
        """What became of a signed frame, or of one refused (ICD §9): ``verified`` (the
        decoder held the key), ``unverified`` (it did not), or the refusal's reason."""
        if isinstance(self.item, Refused):
            return self.item.reason
        frame = self.frame
        if not isinstance(frame, Message) or frame.signature is None:
            return None
        return "verified" if self.keyed else "unverified"

    @property
    def mark(self) -> int:
        return int(self.row["seq_mark"]) if self.sent is None else 0

    def fields(self) -> dict[str, Any] | None:
        """Its payload fields (an unknown type's: none), None for a bad frame."""
        frame = self.frame
        if isinstance(frame, BadFrame):
            return None
        return frame.fields if isinstance(frame, Message) else {}

    def record(self) -> dict[str, Any]:
        """Its fields by name, as ``--where`` reads them."""
        frame = self.frame
        status = STATUS_NAMES[int(self.row["status"])] if self.sent is None else "ok"
        out: dict[str, Any] = {"offset": _offset(self), "status": status, "time": self.time_s}
        out["duplicate"] = isinstance(self.item, Retransmission)
        if isinstance(frame, BadFrame):
            return out
        out |= {"node": frame.node, "seq": frame.seq, "t_us": frame.t_us, "flags": frame.flags}
        out |= {"mark": MARK_NAMES[self.mark], "seq_gap": int(self.row["seq_gap"])}
        if isinstance(frame, Message):
            out |= {"type": frame.name, "msg_type": frame.msg_type, "version": frame.version}
            return out | {"signature": self.signature} | shown_fields(frame)
        return out | {"type": "UNKNOWN", "msg_type": frame.msg_type}


def shown_fields(frame: Message) -> dict[str, Any]:
    """Its fields as a listing may show them: a key (SETUP_SIGNING, from a recording's
    ``.tx``) is never printed, only its size."""
    return {k: f"<{len(v)} bytes, not shown>" if isinstance(v, bytes) else v
            for k, v in frame.fields.items()}  # fmt: skip


def _offset(line: Line) -> int:
    return int(line.frame.offset)


def json_object(line: Line, hex_dump: bool, time_axis: str | None) -> dict[str, Any]:
    """EVENTS.md's object, with what the listing adds: its marks, time, hex."""
    frame = line.frame
    if isinstance(frame, BadFrame):
        out: dict[str, Any] = {
            "offset": frame.offset,
            "error": frame.reason,
            "length": frame.length,
        }
    else:
        out = {"offset": frame.offset, "node": frame.node, "seq": frame.seq,
               "t_us": frame.t_us, "flags": frame.flags}  # fmt: skip
        if isinstance(frame, Message):
            out |= {"type": frame.name, "fields": shown_fields(frame)}
            if frame.signature is not None:
                out["sig_ctr"] = frame.signature.sig_ctr
        else:
            out |= {"type": "UNKNOWN", "msg_type": frame.msg_type,
                    "payload_hex": frame.payload.hex()}  # fmt: skip
    if isinstance(line.item, Retransmission):
        out["duplicate"] = True
    if isinstance(line.item, OverRate):
        out["over_rate"] = True
    if line.signature is not None:
        out["signature"] = line.signature
    if line.mark == GAP:
        out["lost_before"] = int(line.row["seq_gap"])
    elif line.mark in MARK_KEYS:
        out[MARK_KEYS[line.mark]] = True
    if time_axis is not None:
        out[f"{time_axis}_s"] = line.time_s
        if time_axis in ("hub", "relative", "delta") and line.stamp.unc_us is not None:
            out["hub_uncertainty_us"] = round(line.stamp.unc_us, 1)
    if hex_dump:
        out["hex"] = line.wire.hex()
        if isinstance(frame, BadFrame) and (header := unchecked_header(line.wire)):
            out["header"] = header
    return out


def text_line(line: Line, time_axis: str | None) -> str:
    """The aligned table's line (after the time column when asked for)."""
    frame = line.frame
    time = ""
    if time_axis is not None:
        time = f"{line.time_s:>14.6f}  " if line.time_s is not None else f"{'-':>14}  "
    if isinstance(frame, BadFrame):
        return time + (f"{frame.offset:>10}  {'-':<8} {'-':>5} {'-':>10}  "
                       f"BAD {frame.reason} ({frame.length} bytes)")  # fmt: skip
    node = NODE_NAMES.get(frame.node, str(frame.node))
    head = f"{time}{frame.offset:>10}  {node:<8} {frame.seq:>5} {frame.t_us:>10}  "
    retx = " (retx)" if frame.flags & 1 else ""
    if isinstance(frame, Message):
        fields = " ".join(field_text(name, value) for name, value in shown_fields(frame).items())
        text = head + f"{frame.name:<13} {fields}{retx}"
    else:
        text = head + f"UNKNOWN 0x{frame.msg_type:02X}  payload={frame.payload.hex()}{retx}"
    if isinstance(line.item, Retransmission):
        text += "  DUPLICATE (already delivered)"
    if isinstance(line.item, OverRate):
        text += "  OVER RATE (dropped: its node floods the link)"
    if isinstance(frame, Message) and frame.signature is not None:
        refused = "REFUSED " if isinstance(line.item, Refused) else ""
        text += f"  signed ctr={frame.signature.sig_ctr}: {refused}{line.signature}"
    elif line.signature is not None:
        text += "  REFUSED: unsigned (its node must sign)"
    if line.mark == GAP:
        text += f"  GAP: {int(line.row['seq_gap'])} lost before it"
    elif line.mark in MARK_TEXT:
        text += f"  {MARK_TEXT[line.mark]}"
    return text


def hex_lines(line: Line, indent: str) -> list[str]:
    """The frame's bytes under its line: a good frame's body as header | payload | crc, a bad
    frame's wire bytes and, if they un-stuff far enough, its header (not checked)."""
    frame = line.frame
    if not isinstance(frame, BadFrame):
        body = _body(line.wire)
        if body is not None:
            parts = (body[:HEADER_SIZE], body[HEADER_SIZE:-4], body[-4:])
            return _wrapped(f"{indent}body  ", " | ".join(p.hex(" ") for p in parts if p))
    out = _wrapped(f"{indent}wire  ", line.wire.hex(" "))
    header = unchecked_header(line.wire)
    if header:
        shown = " ".join(f"{k}={v}" for k, v in header.items())
        out.append(f"{indent}header (not checked)  {shown}")
    return out


def _wrapped(lead: str, text: str) -> list[str]:
    width = HEX_WIDTH * 3
    chunks = [text[i : i + width] for i in range(0, len(text), width)] or [""]
    return [lead + chunks[0]] + [" " * len(lead) + c for c in chunks[1:]]


def _body(wire: bytes) -> bytes | None:
    try:
        return cobs.decode(wire.rstrip(b"\x00"))
    except cobs.DecodeError:
        return None


def unchecked_header(wire: bytes) -> dict[str, int] | None:
    """A bad frame's header fields as its bytes give them, when it un-stuffs to a header
    (nothing checked: a reader's guess at what the frame was)."""
    body = _body(wire)
    if body is None or len(body) < HEADER_SIZE:
        return None
    return {k: v for k, v in Header.parse(body[:HEADER_SIZE]).items() if not k.startswith("_")}


def csv_columns(types: Iterable[str] | None, two_way: bool, time_axis: str | None,
                hex_dump: bool) -> list[str]:  # fmt: skip
    """The header row: the frame's columns, then every payload field of the types shown."""
    head = ["direction"] if two_way else []
    head += [f"{time_axis}_s"] if time_axis else []
    head += ["offset", "status", "node", "type", "seq", "t_us", "flags", "mark", "seq_gap"]
    fields: list[str] = []
    for spec in MESSAGES:
        if types is None or spec.name in types:
            fields += [s.name for s in spec.payload.subcons if s.name not in fields]
    return head + fields + ["payload_hex"] + (["hex"] if hex_dump else [])


def csv_row(line: Line, columns: list[str]) -> list[Any]:
    """The line's values in ``columns``' order ('' where it has none)."""
    record = line.record()
    frame = line.frame
    values = dict(record)
    values["direction"] = "table" if line.sent is None else "host"
    values["status"] = "duplicate" if record["duplicate"] else record["status"]
    if line.time_s is not None:
        values |= {c: line.time_s for c in columns if c.endswith("_s")}
    if isinstance(frame, UnknownFrame):
        values["payload_hex"] = frame.payload.hex()
    if "hex" in columns:
        values["hex"] = line.wire.hex()
    if isinstance(values.get("balls"), list):
        values["balls"] = field_text("balls", values["balls"]).partition("=")[2]
    values["mark"] = record.get("mark", "")
    return ["" if values.get(c) is None else values.get(c, "") for c in columns]
