"""Bulk and streaming decoders: wire bytes into columnar message tables.

Both run the same numba kernel (:mod:`protocol.kernels`); the streaming
decoder only adds the carry-over between chunks (a partial frame stays
pending, an over-long run is dropped as it arrives so memory stays bounded
by one maximum frame).  The output is columnar: one numpy record array per
message type whose dtype is derived from the catalogue, plus a frame table
in stream order that also lists bad frames.  Python objects per frame exist
only when a caller asks for them (:meth:`Decoded.items`).

>>> from protocol.framing import encode_frame
>>> d = decode_capture(encode_frame("KEYPAD", seq=1, t_us=5, key=8, arg=0))
>>> int(d.tables["KEYPAD"]["key"][0])
8
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import kernels as k
from .catalogue import BY_TYPE, HEADER_SIZE, Header, crc32
from .framing import BadFrame, Message, Retransmission, UnknownFrame, parse_body
from .layout import (
    COUNTED,
    GREEDY,
    PREFIX_SIZE,
    RECORD_PREFIX,
    all_layouts,
    layout,
    rule_table,
)
from .seqwindow import seq_states

FRAME_DTYPE = np.dtype(
    [
        ("offset", "<i8"),
        ("status", "i1"),
        ("msg_type", "u1"),
        ("node", "u1"),
        ("flags", "u1"),
        ("seq", "<u2"),
        ("t_us", "<u4"),
        ("length", "<i4"),  # good: header + payload bytes; bad: bytes on the wire
        ("row", "<i8"),  # row in tables[name] (OK) or in unknown (UNKNOWN)
        ("seq_mark", "u1"),  # what its seq says (protocol.seqwindow: NEXT, GAP, LATE ...)
        ("seq_gap", "<u2"),  # GAP: frames of its node missing just before it
    ]
)
_RULES = rule_table()
_REC_SIZE = np.zeros(256, np.int64)
for _lay in all_layouts():
    _REC_SIZE[_lay.spec.msg_type] = _lay.dtype.itemsize
_CHECKS = k.FrameChecks(rules=_RULES, crc_tables=k.CRC_TABLES)
_NAMES = {spec.msg_type: spec.name for spec in BY_TYPE.values()}
#: Every record starts with the prefix and the header (protocol.layout): their places
_HEAD = len(RECORD_PREFIX) + len(Header.subcons)
_AT = {name: i for i, name in enumerate(layout(next(iter(BY_TYPE))).dtype.names[:_HEAD])}
STATUS_NAMES = {
    k.OK: "ok",
    k.UNKNOWN: "unknown",
    k.DUPLICATE: "duplicate",
    **{k.BAD_COBS + i: reason for i, reason in enumerate(k.BAD_REASONS)},
}


@dataclass
class Stats:
    """Running totals of a decoder: what EVENTS.md's ``decode`` summary shows."""

    frames: int = 0
    unknown: int = 0
    duplicates: int = 0
    reboots: int = 0
    bad: dict[str, int] = field(default_factory=dict)
    lost: dict[int, int] = field(default_factory=dict)
    per_type: dict[str, int] = field(default_factory=dict)

    @property
    def bad_total(self) -> int:
        return sum(self.bad.values())


@dataclass
class Decoded:
    """The frames completed by one feed (or a whole capture), columnar."""

    frames: np.ndarray  # FRAME_DTYPE, stream order, bad frames included
    tables: dict[str, np.ndarray]  # message name -> records (layout dtype)
    unknown: list[UnknownFrame]
    pending_bytes: int = 0  # an unfinished frame after this feed
    stats: Stats | None = None  # totals, filled in by decode_capture
    duplicates: list[Retransmission] = field(default_factory=list)  # row of a DUPLICATE frame

    def __len__(self) -> int:
        return len(self.frames)

    def items(self) -> Iterator[Message | BadFrame | UnknownFrame | Retransmission]:
        """Every frame as a Python object, in stream order (printing, live use)."""
        for f in self.frames:
            status = int(f["status"])
            if status == k.OK:
                name = _NAMES[int(f["msg_type"])]
                yield record_message(self.tables[name][f["row"]])
            elif status == k.UNKNOWN:
                yield self.unknown[int(f["row"])]
            elif status == k.DUPLICATE:
                yield self.duplicates[int(f["row"])]
            elif status >= k.BAD_COBS:
                yield BadFrame(STATUS_NAMES[status], int(f["offset"]), int(f["length"]))


def record_fields(rec: np.void) -> dict[str, Any]:
    """A record's payload as the construct parse would give it."""
    return _payload(rec, rec.item())


def _payload(rec: np.void, values: tuple[Any, ...]) -> dict[str, Any]:
    """The payload from ``values``, the record's fields as Python values (``rec.item()``:
    one C call for the whole record, where reading field by field cost a numpy scalar each,
    and a 16-ball BALL_TRACK has 64 of them)."""
    lay = layout(values[_AT["msg_type"]])
    fields: dict[str, Any] = {}
    names = rec.dtype.names
    for i, name in enumerate(lay.payload_names, start=_HEAD):
        value = values[i]
        if lay.rule == COUNTED and name == "count":
            continue
        if isinstance(value, np.ndarray):
            items = value[: values[names.index("count")]]
            fields[name] = [dict(zip(items.dtype.names, item)) for item in items.tolist()]
        elif lay.rule == GREEDY and name == lay.payload_names[-1]:
            raw = rec.tobytes()[PREFIX_SIZE + HEADER_SIZE + lay.base :][
                : values[_AT["payload_len"]] - lay.base
            ]
            fields[name] = raw.decode("utf-8", errors="replace")
        else:
            fields[name] = value
    return fields


def record_message(rec: np.void) -> Message:
    values = rec.item()
    return Message(
        _NAMES[values[_AT["msg_type"]]],
        values[_AT["msg_type"]],
        values[_AT["node"]],
        values[_AT["seq"]],
        values[_AT["t_us"]],
        values[_AT["flags"]],
        _payload(rec, values),
        values[_AT["offset"]],
        values[_AT["version"]],
    )


class StreamDecoder:
    """Feed byte chunks of any size; get what each completes.

    State across chunks: the partial frame (at most one maximum frame), the
    per-node ``seq`` windows and loss counts, the hub's ``boot_id``.
    """

    def __init__(self) -> None:
        self._pending = np.zeros(0, np.uint8)
        self._offset = 0  # stream offset of _pending[0]
        self._overflow_start = -1
        self._accounts = k.StreamAccounts(
            seq_state=seq_states(),
            boot=np.zeros(2, np.int64),
            lost=np.zeros(256, np.int64),
            bad=np.zeros(len(k.BAD_REASONS), np.int64),
            misc=np.zeros(4, np.int64),
        )
        self._per_type = np.zeros(256, np.int64)

    @property
    def pending_bytes(self) -> int:
        """Bytes of a frame not yet closed by a delimiter."""
        return len(self._pending) if self._overflow_start < 0 else 0

    @property
    def dropped_bytes(self) -> int:
        """Bytes of an over-long run still without a delimiter: dropped as they arrived."""
        return self._offset - self._overflow_start if self._overflow_start >= 0 else 0

    @property
    def bad_total(self) -> int:
        """Bad frames so far, all reasons (cheap enough to ask per chunk)."""
        return int(self._accounts.bad.sum())

    def feed(self, chunk: bytes | bytearray | memoryview | np.ndarray) -> Decoded:
        data = np.frombuffer(chunk, np.uint8) if not isinstance(chunk, np.ndarray) else chunk
        buf = np.concatenate((self._pending, data)) if len(self._pending) else data
        bound = np.zeros(256, np.int64)
        delimiters = k.prescan(buf, bound)
        if not delimiters:
            self._hold(buf, 0)
            return Decoded(np.zeros(0, FRAME_DTYPE), {}, [], self.pending_bytes)
        sizes = bound * _REC_SIZE
        region = np.zeros(256, np.int64)
        np.cumsum(sizes[:-1], out=region[1:])
        out = k.FrameTables(
            frames=np.empty(delimiters, FRAME_DTYPE),
            per_type=np.zeros(256, np.int64),
            region=region,
            rec_size=_REC_SIZE,
            records=np.zeros(int(sizes.sum()), np.uint8),
            raw=np.empty(len(buf), np.uint8),
        )
        n, consumed = k.scan(buf, self._offset, self._overflow_start, _CHECKS, self._accounts, out)
        if n:
            self._overflow_start = -1
        self._hold(buf, consumed)
        self._per_type += out.per_type
        frames = out.frames[:n]
        tables = {}
        for t in np.flatnonzero(out.per_type):
            lay = layout(int(t))
            start = region[t]
            records = out.records[start : start + sizes[t]]
            tables[lay.spec.name] = records.view(lay.dtype)[: out.per_type[t]]
        unknown = self._kept_aside(frames, out.raw, k.UNKNOWN)
        duplicates = [Retransmission(m) for m in self._kept_aside(frames, out.raw, k.DUPLICATE)]
        return Decoded(frames, tables, unknown, self.pending_bytes, None, duplicates)

    def _hold(self, buf: np.ndarray, consumed: int) -> None:
        """Keep the unfinished frame after ``consumed``, unless it is too long.

        An over-long run is dropped as it arrives (memory stays bounded); the
        kernel reports it as a 'length' bad frame at its start once its
        delimiter comes.
        """
        tail = buf[consumed:]
        if self._overflow_start < 0 and len(tail) > k.MAX_ENCODED:
            self._overflow_start = self._offset + consumed
        if self._overflow_start >= 0:
            self._offset += len(buf)
            self._pending = buf[:0]
        else:
            self._offset += consumed
            self._pending = tail.copy()

    @staticmethod
    def _kept_aside(frames: np.ndarray, raw: np.ndarray, status: int) -> list[Any]:
        """The frames of ``status`` whose bodies the kernel kept in ``raw`` (an unknown type,
        a retransmission), parsed as any frame (their CRC was checked already); each
        frame's ``row`` becomes its index in the list."""
        found: list[Any] = []
        for r in np.flatnonzero(frames["status"] == status):
            f = frames[r]
            s = int(f["row"])
            body = raw[s : s + int(f["length"])].tobytes()
            f["row"] = len(found)
            parsed = parse_body(body + crc32(body).to_bytes(4, "little"), int(f["offset"]))
            assert not isinstance(parsed, BadFrame), parsed  # the kernel checked it
            found.append(parsed)
        return found

    def stats(self) -> Stats:
        acc = self._accounts
        return Stats(
            frames=int(acc.misc[k.M_FRAMES]),
            unknown=int(acc.misc[k.M_UNKNOWN]),
            duplicates=int(acc.misc[k.M_DUPLICATES]),
            reboots=int(acc.misc[k.M_BOOTS]),
            bad={reason: int(c) for reason, c in zip(k.BAD_REASONS, acc.bad) if c},
            lost={node: int(c) for node, c in enumerate(acc.lost) if c},
            per_type={_NAMES[t]: int(c) for t, c in enumerate(self._per_type) if c},
        )


def decode_capture(data: bytes | np.ndarray) -> Decoded:
    """A whole capture in one kernel pass, with its totals in ``stats``.

    A trailing partial frame is left out (``Decoded.pending_bytes``).
    """
    decoder = StreamDecoder()
    decoded = decoder.feed(data)
    decoded.stats = decoder.stats()
    return decoded
