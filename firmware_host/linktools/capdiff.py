"""Two captures compared frame by frame: ``firmware-host diff A B``.

Two recordings of one link (two hosts on a splitter, a capture and its
copy, a replay and its source) hold the same frames when all is well.  A
frame is the same frame in both when it has the same sender, ``seq`` and
stamp (``node``, ``seq``, ``t_us``: a ``seq`` repeats every 65 536 frames
and a stamp every 71.6 min, the pair practically never); a second copy of
it (a retransmission) is matched with the other capture's second copy.
Then either capture may hold frames the other lacks, and a frame in both
may differ in its type, flags or a field.  Bad frames have no identity:
they are counted per reason on each side.

Columnar on the decoders' tables: a Python object is made only for the
frames that are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.decoder import Decoded, decode_capture, record_message
from protocol.kernels import BAD_COBS, DUPLICATE, OK, UNKNOWN

_GOOD = (OK, UNKNOWN, DUPLICATE)
_NOT_COMPARED = ("offset",)  # where a frame sits differs between captures by nature


@dataclass
class Side:
    """One capture: its frames with a good CRC, each with its identity."""

    decoded: Decoded
    good: np.ndarray  # indices into decoded.frames
    keys: list[tuple[int, int, int, int]]  # (node, seq, t_us, copy) per good frame

    @classmethod
    def of(cls, capture: np.ndarray) -> Side:
        decoded = decode_capture(capture)
        frames = decoded.frames
        good = np.flatnonzero(np.isin(frames["status"], _GOOD))
        copies: dict[tuple[int, int, int], int] = {}
        keys = []
        for node, seq, t in zip(
            *(frames[c][good].tolist() for c in ("node", "seq", "t_us")), strict=True
        ):
            n = copies.get((node, seq, t), 0)
            copies[(node, seq, t)] = n + 1
            keys.append((node, seq, t, n))
        return cls(decoded, good, keys)

    def bad(self) -> dict[str, int]:
        from protocol.decoder import STATUS_NAMES

        status = self.decoded.frames["status"]
        reasons, counts = np.unique(status[status >= BAD_COBS], return_counts=True)
        return {STATUS_NAMES[int(r)]: int(c) for r, c in zip(reasons, counts, strict=True)}

    def item(self, i: int) -> Any:
        """Good frame ``i`` (an index into ``good``) as a decoded object."""
        f = self.decoded.frames[self.good[i]]
        if int(f["status"]) == OK:
            return record_message(self.decoded.tables[_name(int(f["msg_type"]))][f["row"]])
        listed = self.decoded.unknown if int(f["status"]) == UNKNOWN else self.decoded.duplicates
        item = listed[int(f["row"])]
        return getattr(item, "frame", item)


def _name(msg_type: int) -> str:
    from protocol.catalogue import BY_TYPE

    return BY_TYPE[msg_type].name


@dataclass
class Diff:
    """What differs: frames only in A, only in B, in both with different fields."""

    a: Side
    b: Side
    only_a: list[int] = field(default_factory=list)  # indices into a.good
    only_b: list[int] = field(default_factory=list)
    changed: list[tuple[int, int, dict[str, tuple[Any, Any]]]] = field(default_factory=list)
    same: int = 0

    @property
    def identical(self) -> bool:
        return not (self.only_a or self.only_b or self.changed) and self.a.bad() == self.b.bad()


def diff(capture_a: np.ndarray, capture_b: np.ndarray) -> Diff:
    """Match the frames of two captures by identity and compare what matched."""
    a, b = Side.of(capture_a), Side.of(capture_b)
    in_b = {key: j for j, key in enumerate(b.keys)}
    matched = [(i, in_b.pop(key)) for i, key in enumerate(a.keys) if key in in_b]
    out = Diff(a, b)
    taken = {i for i, _ in matched}
    out.only_a = [i for i in range(len(a.keys)) if i not in taken]
    out.only_b = sorted(in_b.values())
    for i, j in _differing(a, b, matched):
        fields = _fields_that_differ(a.item(i), b.item(j))
        out.changed.append((i, j, fields))
    out.same = len(matched) - len(out.changed)
    return out


def _differing(a: Side, b: Side, matched: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The matched pairs whose frames are not byte for byte the same message: compared per
    type on the record tables (every field but where the frame sits)."""
    if not matched:
        return []
    ia, ib = (np.array(x, np.int64) for x in zip(*matched, strict=True))
    fa, fb = a.decoded.frames[a.good[ia]], b.decoded.frames[b.good[ib]]
    differ = (fa["status"] != fb["status"]) | (fa["msg_type"] != fb["msg_type"])
    differ |= fa["flags"] != fb["flags"]
    both_ok = ~differ & (fa["status"] == OK)
    for msg_type in np.unique(fa["msg_type"][both_ok]).tolist():
        sel = np.flatnonzero(both_ok & (fa["msg_type"] == msg_type))
        ra = a.decoded.tables[_name(msg_type)][fa["row"][sel]]
        rb = b.decoded.tables[_name(msg_type)][fb["row"][sel]]
        for column in ra.dtype.names:
            if column not in _NOT_COMPARED:
                unequal = ra[column] != rb[column]
                differ[sel] |= unequal.reshape(len(sel), -1).any(axis=1)
    others = ~both_ok & ~differ  # unknown types and duplicates: few, compared as objects
    for k in np.flatnonzero(others).tolist():
        if _fields_that_differ(a.item(int(ia[k])), b.item(int(ib[k]))):
            differ[k] = True
    return [(int(ia[k]), int(ib[k])) for k in np.flatnonzero(differ).tolist()]


def _fields_that_differ(x: Any, y: Any) -> dict[str, tuple[Any, Any]]:
    """Field name -> (value in A, value in B) for every header or payload field that differs."""
    out: dict[str, tuple[Any, Any]] = {}
    for name in ("name", "msg_type", "flags", "version", "payload"):
        va, vb = getattr(x, name, None), getattr(y, name, None)
        if va != vb:
            out["type" if name == "name" else name] = (va, vb)
    fa, fb = getattr(x, "fields", {}), getattr(y, "fields", {})
    for name in dict.fromkeys([*fa, *fb]):
        if fa.get(name) != fb.get(name):
            out[name] = (fa.get(name), fb.get(name))
    return out
