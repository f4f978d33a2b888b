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
from .catalogue import BY_NAME, BY_TYPE, HEADER_SIZE
from .framing import BadFrame, Message, UnknownFrame
from .layout import COUNTED, GREEDY, PREFIX_SIZE, layout, rule_table

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
    ]
)
_RULES = rule_table()
_NAMES = {spec.msg_type: spec.name for spec in BY_TYPE.values()}
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
    stats: Stats = field(default_factory=Stats)  # the decoder's totals after this feed
    pending_bytes: int = 0  # an unfinished frame after this feed

    def __len__(self) -> int:
        return len(self.frames)

    def table(self, name: str) -> np.ndarray:
        """Records of one message type (empty if none came)."""
        got = self.tables.get(name)
        if got is None:
            return np.zeros(0, layout(BY_NAME[name].msg_type).dtype)
        return got

    def items(self) -> Iterator[Message | BadFrame | UnknownFrame]:
        """Every frame as a Python object, in stream order (printing, live use)."""
        for f in self.frames:
            status = int(f["status"])
            if status == k.OK:
                name = _NAMES[int(f["msg_type"])]
                yield record_message(self.tables[name][f["row"]])
            elif status == k.UNKNOWN:
                yield self.unknown[int(f["row"])]
            elif status >= k.BAD_COBS:
                yield BadFrame(STATUS_NAMES[status], int(f["offset"]), int(f["length"]))


def record_fields(rec: np.void) -> dict[str, Any]:
    """A record's payload as the construct parse would give it."""
    lay = layout(int(rec["msg_type"]))
    fields: dict[str, Any] = {}
    for name in lay.payload_names:
        value = rec[name]
        if lay.rule == COUNTED and name == "count":
            continue
        if value.shape:
            items = value[: int(rec["count"])]
            fields[name] = [{n: int(item[n]) for n in items.dtype.names} for item in items]
        elif lay.rule == GREEDY and name == lay.dtype.names[-1]:
            raw = rec.tobytes()[PREFIX_SIZE + HEADER_SIZE + lay.base :][: int(rec["payload_len"]) - lay.base]
            fields[name] = raw.decode("utf-8", errors="replace")
        else:
            fields[name] = int(value)
    return fields


def record_message(rec: np.void) -> Message:
    return Message(
        _NAMES[int(rec["msg_type"])],
        int(rec["msg_type"]),
        int(rec["node"]),
        int(rec["seq"]),
        int(rec["t_us"]),
        int(rec["flags"]),
        record_fields(rec),
        int(rec["offset"]),
        int(rec["version"]),
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
        self._seq_state = np.zeros((256, 3), np.int64)
        self._boot = np.zeros(2, np.int64)
        self._lost = np.zeros(256, np.int64)
        self._bad = np.zeros(len(k.BAD_REASONS), np.int64)
        self._misc = np.zeros(4, np.int64)
        self._per_type = np.zeros(256, np.int64)

    @property
    def pending_bytes(self) -> int:
        """Bytes of a frame not yet closed by a delimiter."""
        return len(self._pending) if self._overflow_start < 0 else 0

    @property
    def stream_offset(self) -> int:
        """Bytes fed so far."""
        return self._offset + len(self._pending)

    def feed(self, chunk: bytes | bytearray | memoryview | np.ndarray) -> Decoded:
        data = np.frombuffer(chunk, np.uint8) if not isinstance(chunk, np.ndarray) else chunk
        buf = np.concatenate((self._pending, data)) if len(self._pending) else data
        capacity = int(np.count_nonzero(buf == 0))
        f_offset = np.empty(capacity, np.int64)
        f_status = np.empty(capacity, np.int8)
        f_start = np.empty(capacity, np.int64)
        f_len = np.empty(capacity, np.int64)
        bodies = np.empty(len(buf), np.uint8)
        n, consumed = k.scan(
            buf,
            self._offset,
            self._overflow_start,
            _RULES,
            k.CRC_TABLES,
            self._seq_state,
            self._boot,
            self._lost,
            self._bad,
            self._misc,
            f_offset,
            f_status,
            f_start,
            f_len,
            bodies,
        )
        if n:
            self._overflow_start = -1
        tail = buf[consumed:]
        if self._overflow_start < 0 and len(tail) > k.MAX_ENCODED:
            self._overflow_start = self._offset + consumed
        if self._overflow_start >= 0:
            # Drop an over-long run as it arrives; the kernel reports it as a
            # 'length' bad frame at its start once its delimiter comes.
            self._offset += len(buf)
            self._pending = buf[:0]
        else:
            self._offset += consumed
            self._pending = tail.copy()
        decoded = self._assemble(n, f_offset, f_status, f_start, f_len, bodies)
        decoded.stats = self.stats()
        decoded.pending_bytes = self.pending_bytes
        return decoded

    def _assemble(
        self,
        n: int,
        f_offset: np.ndarray,
        f_status: np.ndarray,
        f_start: np.ndarray,
        f_len: np.ndarray,
        bodies: np.ndarray,
    ) -> Decoded:
        frames = np.zeros(n, FRAME_DTYPE)
        frames["offset"] = f_offset[:n]
        status = f_status[:n]
        frames["status"] = status
        starts, lens = f_start[:n], f_len[:n]
        frames["length"] = lens
        good = status < k.BAD_COBS
        gs = starts[good]
        frames["msg_type"][good] = bodies[gs + 1]
        frames["node"][good] = bodies[gs + 2]
        frames["flags"][good] = bodies[gs + 3]
        frames["seq"][good] = bodies[gs + 4].astype(np.uint16) | (bodies[gs + 5].astype(np.uint16) << 8)
        t = np.zeros(len(gs), np.uint32)
        for b in range(4):
            t |= bodies[gs + 6 + b].astype(np.uint32) << (8 * b)
        frames["t_us"][good] = t

        tables: dict[str, np.ndarray] = {}
        ok = status == k.OK
        types = frames["msg_type"]
        for msg_type in np.unique(types[ok]):
            rows = np.flatnonzero(ok & (types == msg_type))
            lay = layout(int(msg_type))
            out = np.zeros((len(rows), lay.dtype.itemsize), np.uint8)
            k.gather(bodies, starts[rows], lens[rows], frames["offset"][rows], out)
            tables[lay.spec.name] = out.view(lay.dtype).reshape(len(rows))
            frames["row"][rows] = np.arange(len(rows))
            self._per_type[msg_type] += len(rows)

        unknown: list[UnknownFrame] = []
        for r in np.flatnonzero(status == k.UNKNOWN):
            f = frames[r]
            s = int(starts[r])
            frames["row"][r] = len(unknown)
            unknown.append(
                UnknownFrame(
                    int(f["msg_type"]),
                    int(f["node"]),
                    int(f["seq"]),
                    int(f["t_us"]),
                    int(f["flags"]),
                    bodies[s + HEADER_SIZE : s + int(lens[r])].tobytes(),
                    int(f["offset"]),
                )
            )
        return Decoded(frames, tables, unknown)

    def stats(self) -> Stats:
        return Stats(
            frames=int(self._misc[k.M_FRAMES]),
            unknown=int(self._misc[k.M_UNKNOWN]),
            duplicates=int(self._misc[k.M_DUPLICATES]),
            reboots=int(self._misc[k.M_BOOTS]),
            bad={reason: int(c) for reason, c in zip(k.BAD_REASONS, self._bad) if c},
            lost={node: int(c) for node, c in enumerate(self._lost) if c},
            per_type={_NAMES[t]: int(c) for t, c in enumerate(self._per_type) if c},
        )


def decode_capture(data: bytes | np.ndarray) -> Decoded:
    """A whole capture in one kernel pass (a trailing partial frame is left out)."""
    return StreamDecoder().feed(data)
