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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from . import kernels as k
from . import ratelimit
from .catalogue import (
    BY_TYPE,
    FLAG_SIGNED,
    HEADER_SIZE,
    MAX_BODY,
    NODE_IDS,
    NODE_NAMES,
    Header,
    crc32,
)
from .crc import CRC_TABLES
from .framing import (
    BadFrame,
    Message,
    OverRate,
    Refused,
    Retransmission,
    UnknownFrame,
    parse_body,
)
from .layout import (
    COUNTED,
    GREEDY,
    PREFIX_SIZE,
    RECORD_PREFIX,
    all_layouts,
    layout,
    rule_table,
)
from .seqwindow import CONFLICT, REBOOT, seq_states
from .signing import ACCEPT, REFUSALS, SignatureCheck

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
        ("sig_ctr", "<u4"),  # a signed frame's counter (flags bit 1, ICD §9); else 0
        ("tag", "<u8"),  # a signed frame's 8-byte tag, little-endian; else 0
        ("prior", "<i4"),  # CONFLICT: where in raw the earlier frame of that seq is (-1: not)
        ("prior_len", "u1"),  # and its header + payload bytes
        ("rate", "u1"),  # what its node's rate limit did (protocol.ratelimit: TAKE ... CALM)
        ("mark_t", "<u4"),  # FLOOD, CALM: the node's stamp the change is dated from
    ]
)
_RULES = rule_table()
_REC_SIZE = np.zeros(256, np.int64)
for _lay in all_layouts():
    _REC_SIZE[_lay.spec.msg_type] = _lay.dtype.itemsize
#: The nodes whose newest frame is kept for a seq conflict's report: the radio nodes a
#: forger can imitate (ICD §9); a conflict on a wired node is counted and shown all the same.
_RADIO_NODES = np.zeros(256, np.int64)
_RADIO_NODES[[NODE_IDS["cue"], NODE_IDS["keypad"]]] = 1
_CHECKS = k.FrameChecks(rules=_RULES, crc_tables=CRC_TABLES, rate_limits=ratelimit.LIMITS)
_NAMES = {spec.msg_type: spec.name for spec in BY_TYPE.values()}
#: Every record starts with the prefix and the header (protocol.layout): their places
_HEAD = len(RECORD_PREFIX) + len(Header.subcons)
_AT = {name: i for i, name in enumerate(layout(next(iter(BY_TYPE))).dtype.names[:_HEAD])}
STATUS_NAMES = {
    k.OK: "ok",
    k.UNKNOWN: "unknown",
    k.DUPLICATE: "duplicate",
    k.OVER_RATE: "over_rate",
    **{k.UNSIGNED + i: reason for i, reason in enumerate(k.REFUSALS)},
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
    signed: int = 0  # frames with flags bit 1 (verified only when a key is held)
    conflicts: dict[str, int] = field(default_factory=dict)  # node -> seq conflicts
    refused: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> reason -> n
    over_rate: dict[str, int] = field(default_factory=dict)  # node -> frames its limit dropped

    @property
    def bad_total(self) -> int:
        return sum(self.bad.values())


@dataclass(frozen=True)
class Conflict:
    """Two frames of one node claiming one ``seq`` with different content, neither a
    retransmission (seqwindow.CONFLICT): one of them was forged.  ``earlier`` is None
    when the decoder could not keep it.  Both stay in the timeline; the shot the later
    one falls in is the referee's for what it touches."""

    earlier: Message | UnknownFrame | None
    later: Message


class KeptFrames(Sequence[Any]):
    """The frames of one status whose bodies the kernel kept aside (an unknown type, a
    retransmission), each parsed as any frame (their CRC was checked already) when it is
    asked for; each frame's ``row`` becomes its index here.

    Parsing them as they came (construct, about 60 µs a frame) cost every feed, though
    only the printers ever look at them: on the busy hour, with its radio resends, it
    made the decoder four times slower (issue 29).  Their bytes are copied out of the
    kernel's scratch buffer (a few per feed), so a feed keeps nothing else alive.
    """

    def __init__(
        self,
        frames: np.ndarray,
        raw: np.ndarray,
        status: int,
        wrap: Callable[[Any], Any] | None = None,
    ) -> None:
        rows = np.flatnonzero(frames["status"] == status)
        self._heads = frames[rows]  # a copy: their offsets, flags, lengths, signatures
        lengths = self._heads["length"].astype(np.int64)
        starts = np.cumsum(lengths) - lengths
        take = np.repeat(self._heads["row"] - starts, lengths) + np.arange(int(lengths.sum()))
        self._raw = raw[take]
        self._heads["row"] = starts
        frames["row"][rows] = np.arange(len(rows))
        self._wrap = wrap
        self._parsed: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._heads)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self))[i]]
        i = range(len(self))[i]  # an IndexError as a list's
        if i not in self._parsed:
            parsed = _parse_kept(self._heads[i], self._raw)
            self._parsed[i] = self._wrap(parsed) if self._wrap else parsed
        return self._parsed[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # compared by content, as a list is


@dataclass
class Decoded:
    """The frames completed by one feed (or a whole capture), columnar."""

    frames: np.ndarray  # FRAME_DTYPE, stream order, bad frames included
    tables: dict[str, np.ndarray]  # message name -> records (layout dtype)
    unknown: Sequence[UnknownFrame]  # row of an UNKNOWN frame
    pending_bytes: int = 0  # an unfinished frame after this feed
    stats: Stats | None = None  # totals, filled in by decode_capture
    duplicates: Sequence[Retransmission] = field(default_factory=list)  # row of a DUPLICATE
    refused: list[Refused] = field(default_factory=list)  # row of a refused frame (ICD §9)
    conflicts: list[Conflict] = field(default_factory=list)  # seq reused, other content
    #: the frames where a node's flood starts or ends (``rate`` FLOOD or CALM): a few rows
    marks: np.ndarray = field(default_factory=lambda: np.zeros(0, FRAME_DTYPE))
    #: the frames a rate limit dropped (row of an OVER_RATE frame), parsed when asked for
    over_rate: Sequence[OverRate] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.frames)

    def items(
        self,
    ) -> Iterator[Message | BadFrame | UnknownFrame | Retransmission | Refused | OverRate]:
        """Every frame as a Python object, in stream order (printing, live use)."""
        for i in range(len(self.frames)):
            yield self.item(i)

    def item(
        self, i: int
    ) -> Message | BadFrame | UnknownFrame | Retransmission | Refused | OverRate:
        """Frame ``i`` as a Python object (a printer that makes most lines from the arrays)."""
        f = self.frames[i]
        status = int(f["status"])
        if status == k.OK:
            return record_message(self.tables[_NAMES[int(f["msg_type"])]][f["row"]])
        if status == k.UNKNOWN:
            return self.unknown[int(f["row"])]
        if status == k.DUPLICATE:
            return self.duplicates[int(f["row"])]
        if k.UNSIGNED <= status <= k.REPLAYED:
            return self.refused[int(f["row"])]
        if status == k.OVER_RATE:
            return self.over_rate[int(f["row"])]
        return BadFrame(STATUS_NAMES[status], int(f["offset"]), int(f["length"]))


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
        if isinstance(value, np.ndarray) and value.dtype == np.uint8:  # SETUP_SIGNING.key
            fields[name] = value.tobytes()
        elif isinstance(value, np.ndarray):
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
        values[_AT["flags"]] & ~k.RECORD_CONFLICT,
        _payload(rec, values),
        values[_AT["offset"]],
        values[_AT["version"]],
    )


class StreamDecoder:
    """Feed byte chunks of any size; get what each completes.

    State across chunks: the partial frame (at most one maximum frame), the
    per-node ``seq`` windows and loss counts, the hub's ``boot_id``.  With a
    ``signing`` check (the table's key, ICD §9) every frame it must see is
    held by the kernel and decided here before it counts: a refused frame
    never reaches the tables, so never the timeline.
    """

    def __init__(self, signing: SignatureCheck | None = None) -> None:
        self.signing = signing
        self._pending = np.zeros(0, np.uint8)
        self._offset = 0  # stream offset of _pending[0]
        self._overflow_start = -1
        self._accounts = k.StreamAccounts(
            seq_state=seq_states(),
            boot=np.zeros(2, np.int64),
            lost=np.zeros(256, np.int64),
            bad=np.zeros(len(k.BAD_REASONS), np.int64),
            misc=np.zeros(k.MISC_COUNTERS, np.int64),
            hold=signing.hold_mask() if signing else np.zeros(256, np.int64),
            last_crc=np.zeros(256, np.int64),
            last_body=np.zeros((256, MAX_BODY), np.uint8),
            last_len=np.zeros(256, np.int64),
            keep_prior=_RADIO_NODES,
            conflicts=np.zeros(256, np.int64),
            rate=ratelimit.states(),
            over_rate=np.zeros(256, np.int64),
        )
        self._per_type = np.zeros(256, np.int64)
        self._signed = 0

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
        self._signed += int(np.count_nonzero(frames["flags"] & FLAG_SIGNED))
        refused: list[Refused] = []
        priors: dict[int, bytes] = {}
        if self.signing is not None:
            refused, priors = self._decide_held(frames, out.raw, tables)
            self.signing.save()  # the counters are on disk before anything they let through
        conflicts = _conflicts(frames, out.raw, tables, priors)
        unknown = KeptFrames(frames, out.raw, k.UNKNOWN)
        duplicates = KeptFrames(frames, out.raw, k.DUPLICATE, Retransmission)
        rate = frames["rate"]
        marks = frames[(rate == ratelimit.FLOOD) | (rate == ratelimit.CALM)]
        dropped = KeptFrames(frames, out.raw, k.OVER_RATE, OverRate)
        return Decoded(
            frames,
            tables,
            unknown,
            self.pending_bytes,
            None,
            duplicates,
            refused,
            conflicts,
            marks,
            dropped,
        )

    def _decide_held(
        self, frames: np.ndarray, raw: np.ndarray, tables: dict[str, np.ndarray]
    ) -> tuple[list[Refused], dict[int, bytes]]:
        """The frames the kernel held for the signature check, in stream order: a refused one
        is filed aside, an accepted one goes through the seq window as the kernel would have
        taken it and joins its type's records (in stream order).  Only frames of the nodes
        that must sign, and signed ones, come here: a few per second at a real table.
        Returns the refused frames and, per frame row of a seq conflict, the earlier frame."""
        assert self.signing is not None
        refused: list[Refused] = []
        priors: dict[int, bytes] = {}
        added: dict[int, list[tuple[int, bytes]]] = {}
        acc = self._accounts
        for r in np.flatnonzero(frames["status"] == k.HELD).tolist():
            f = frames[r]
            s = int(f["row"])
            part = raw[s : s + int(f["length"])].tobytes()
            signed = bool(f["flags"] & FLAG_SIGNED)
            tag = int(f["tag"]).to_bytes(8, "little") if signed else None
            verdict = self.signing.decide(part, int(f["sig_ctr"]) if signed else None, tag)
            if verdict in REFUSALS:
                f["status"] = k.UNSIGNED + REFUSALS.index(verdict)
                refused.append(Refused(_parse_kept(f, raw), verdict))
                f["row"] = len(refused) - 1
                continue
            rebooted = False
            if part[1] == k._HELLO and f["node"] == 0:
                rebooted = k._note_boot(int.from_bytes(part[14:18], "little"), acc)
            full = _with_trailer(f, part)
            body = np.frombuffer(full + crc32(full).to_bytes(4, "little"), np.uint8).copy()
            node = int(f["node"])
            newest = acc.last_body[node, : acc.last_len[node]].tobytes()
            mark, missing = k._account_seq(body, len(part), acc)
            f["seq_mark"] = REBOOT if rebooted else mark
            f["seq_gap"] = missing
            if mark == CONFLICT:
                priors[r] = newest
                part = part[:3] + bytes([part[3] | k.RECORD_CONFLICT]) + part[4:]
            if verdict != ACCEPT or mark == k.SEQ_DUPLICATE:
                acc.misc[k.M_DUPLICATES] += 1
                f["status"] = k.DUPLICATE  # row stays: its body is in raw
            elif part[1] not in BY_TYPE:
                acc.misc[k.M_UNKNOWN] += 1
                f["status"] = k.UNKNOWN
            else:
                acc.misc[k.M_FRAMES] += 1
                f["status"] = k.OK
                added.setdefault(part[1], []).append((r, part))
        for msg_type, items in added.items():
            _merge_records(frames, tables, msg_type, items)
            self._per_type[msg_type] += len(items)
        return refused, priors

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
            signed=self._signed,
            conflicts={_node(n): int(c) for n, c in enumerate(acc.conflicts) if c},
            refused=self.signing.counts() if self.signing is not None else {},
            over_rate={_node(n): int(c) for n, c in enumerate(acc.over_rate) if c},
        )


def _parse_kept(f: np.void, raw: np.ndarray) -> Message | UnknownFrame:
    """A frame whose header and payload the kernel kept in ``raw`` (at ``row``), parsed as
    it came: a signed one gets its trailer back from the frame table, then the CRC."""
    s = int(f["row"])
    body = _with_trailer(f, raw[s : s + int(f["length"])].tobytes())
    parsed = parse_body(body + crc32(body).to_bytes(4, "little"), int(f["offset"]))
    assert not isinstance(parsed, BadFrame), parsed  # the kernel checked it
    return parsed


def _node(node: int) -> str:
    return NODE_NAMES.get(node, f"node {node}")


def _conflicts(
    frames: np.ndarray, raw: np.ndarray, tables: dict[str, np.ndarray], priors: dict[int, bytes]
) -> list[Conflict]:
    """The seq conflicts of one feed, each with its earlier frame where it was kept."""
    out = []
    for r in np.flatnonzero(frames["seq_mark"] == CONFLICT).tolist():
        f = frames[r]
        later = record_message(tables[_NAMES[int(f["msg_type"])]][f["row"]])
        earlier = priors.get(r)
        if earlier is None and f["prior"] >= 0:
            earlier = raw[f["prior"] : f["prior"] + f["prior_len"]].tobytes()
        out.append(Conflict(_parse_unsigned(earlier) if earlier else None, later))
    return out


def _parse_unsigned(part: bytes) -> Message | UnknownFrame:
    """Header and payload kept without their signature trailer, parsed as unsigned."""
    body = part[:3] + bytes([part[3] & ~FLAG_SIGNED & 0xFF]) + part[4:]
    parsed = parse_body(body + crc32(body).to_bytes(4, "little"))
    assert not isinstance(parsed, BadFrame), parsed  # the kernel checked it
    return parsed


def _with_trailer(f: np.void, part: bytes) -> bytes:
    """A frame's header and payload with its signature trailer back (if it has one)."""
    if f["flags"] & FLAG_SIGNED:
        return part + int(f["sig_ctr"]).to_bytes(4, "little") + int(f["tag"]).to_bytes(8, "little")
    return part


def _merge_records(
    frames: np.ndarray, tables: dict[str, np.ndarray], msg_type: int, items: list[tuple[int, bytes]]
) -> None:
    """Accepted held frames (frame row, header + payload) join their type's records in stream
    order; every frame of that type gets its row in the merged table."""
    lay = layout(msg_type)
    name = lay.spec.name
    old = tables.get(name, np.zeros(0, lay.dtype))
    add = np.zeros(len(items), lay.dtype)
    cells = add.view(np.uint8).reshape(len(items), lay.dtype.itemsize)
    for i, (r, part) in enumerate(items):
        prefix = int(frames[r]["offset"]).to_bytes(8, "little", signed=True)
        row = prefix + bytes([len(part) - HEADER_SIZE]) + part
        cells[i, : len(row)] = np.frombuffer(row, np.uint8)
    merged = np.concatenate((old, add))
    order = np.argsort(merged["offset"], kind="stable")
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    mine = np.flatnonzero((frames["status"] == k.OK) & (frames["msg_type"] == msg_type))
    new_rows = {r: len(old) + i for i, (r, _) in enumerate(items)}
    for r in mine.tolist():
        frames[r]["row"] = place[new_rows.get(r, int(frames[r]["row"]))]
    tables[name] = merged[order]


def decode_capture(data: bytes | np.ndarray, signing: SignatureCheck | None = None) -> Decoded:
    """A whole capture in one kernel pass, with its totals in ``stats``.

    A trailing partial frame is left out (``Decoded.pending_bytes``).
    """
    decoder = StreamDecoder(signing)
    decoded = decoder.feed(data)
    decoded.stats = decoder.stats()
    return decoded
