"""``decode``'s text lines made by a numba kernel from the decoder's arrays, a feed at a time.

:func:`.listing.text_line` makes a line from a Python object per frame (a
``Message`` with its fields in a dict): about 90 µs a frame, a gigabyte of
capture in hours.  Here one kernel writes the lines of a whole feed into a
byte buffer, reading each frame's header from the frame table and its
payload from its record, the fields' names, places and sizes taken from the
catalogue's record layouts (:mod:`protocol.layout`), so nothing here names a
field.  Byte for byte the same text (``tests/linktools/test_text_lines.py``
holds the two to every message type, every mark and the corpus).

The kernel writes the plain frames, which are nearly all of a capture: a
good frame of a type whose fields are numbers or a tracker's ball list, not
signed, with any seq mark.  The rest (bad frames, unknown types,
retransmissions, refused and signed frames, LOG's text, a key) are left to
``text_line``, where the kernel marks a gap in its buffer.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from protocol.catalogue import FLAG_SIGNED, MESSAGES, NODE_NAMES
from protocol.kernels import OK
from protocol.layout import COUNTED, all_layouts
from protocol.seqwindow import GAP

from .listing import MARK_TEXT

MAX_FIELDS = 16
TYPE_WIDTH = 13  # f"{name:<13}"
NODE_WIDTH = 8  # f"{node:<8}"
BALLS = 0  # a field's kind: a counted list of (ball, state, x, y); else its size in bytes
BALL_ITEM = ("ball", "state", "x", "y")
# rows of LineTables.words
W_RETX, W_GAP, W_LOST, W_MARK = 0, 1, 2, 3  # W_MARK + mark: that seq mark's words


class LineTables(NamedTuple):
    """What the kernel knows of the catalogue and the marks (made once, :func:`line_tables`).

    ``fields`` int64 (256, MAX_FIELDS, 4): per type and payload field, where its
    ``name=`` starts in ``names`` and how long it is, its byte offset in the type's
    record, its kind (its size in bytes, or ``BALLS``: then the offset is the count's).
    ``n_fields`` int64 (256,): fields per type, -1 for a type left to Python.
    ``type_text`` uint8 (256, TYPE_WIDTH + 1), ``node_text`` uint8 (256, NODE_WIDTH):
    the padded names.  ``words`` uint8 (rows, width) and ``word_len`` (rows,): the
    fixed texts (``W_*``), a seq mark's at ``W_MARK + mark``.
    """

    fields: np.ndarray
    n_fields: np.ndarray
    names: np.ndarray
    type_text: np.ndarray
    node_text: np.ndarray
    words: np.ndarray
    word_len: np.ndarray


def _padded(texts: dict[int, str], width: int, default: str = "{}") -> np.ndarray:
    out = np.full((256, width), ord(" "), np.uint8)
    for code in range(256):
        text = texts.get(code, default.format(code)).encode()
        assert len(text) <= width, text
        out[code, : len(text)] = np.frombuffer(text, np.uint8)
    return out


def _words() -> tuple[np.ndarray, np.ndarray]:
    texts = [" (retx)", "  GAP: ", " lost before it"]
    texts += [f"  {MARK_TEXT[m]}" if m in MARK_TEXT and m != GAP else "" for m in range(16)]
    width = max(len(t) for t in texts)
    words = np.zeros((len(texts), width), np.uint8)
    for i, text in enumerate(texts):
        words[i, : len(text)] = np.frombuffer(text.encode(), np.uint8)
    return words, np.array([len(t) for t in texts], np.int64)


def line_tables() -> LineTables:
    """The kernel's tables, from the catalogue's record layouts."""
    fields = np.zeros((256, MAX_FIELDS, 4), np.int64)
    n_fields = np.full(256, -1, np.int64)
    names = bytearray()
    for lay in all_layouts():
        row = []
        for name in lay.payload_names:
            if lay.rule == COUNTED and name == "count":
                continue
            dtype, at = lay.dtype.fields[name][:2]
            if dtype.shape and dtype.base.names == BALL_ITEM:
                row.append((f"{name}[", lay.dtype.fields["count"][1], BALLS))
            elif not dtype.shape and dtype.kind == "u":
                row.append((f"{name}=", at, dtype.itemsize))
            else:  # text (LOG) or bytes (a key): Python's repr and words
                break
        else:
            t = lay.spec.msg_type
            n_fields[t] = len(row)
            for i, (label, at, kind) in enumerate(row):
                fields[t, i] = (len(names), len(label), at, kind)
                names += label.encode()
    words, word_len = _words()
    return LineTables(
        fields,
        n_fields,
        np.frombuffer(bytes(names), np.uint8),
        _padded({s.msg_type: s.name + " " for s in MESSAGES}, TYPE_WIDTH + 1, "?"),
        _padded(NODE_NAMES, NODE_WIDTH),
        words,
        word_len,
    )


#: Bytes a line can take at most (a 16-ball frame with the longest mark is under 480)
LINE_BOUND = 640


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _int(out: np.ndarray, pos: int, value: int, width: int) -> int:
    """``value`` (not negative) in decimal, right-aligned in ``width``; returns the end."""
    digits = 1
    v = value
    while v >= 10:
        v //= 10
        digits += 1
    for _ in range(width - digits):
        out[pos] = 32
        pos += 1
    for k in range(digits):
        out[pos + digits - 1 - k] = 48 + value % 10
        value //= 10
    return pos + digits


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _copy(out: np.ndarray, pos: int, text: np.ndarray, n: int) -> int:
    """The first ``n`` bytes of ``text`` at ``pos``; returns the end."""
    for k in range(n):
        out[pos + k] = text[k]
    return pos + n


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _uint(rec: np.ndarray, at: int, size: int) -> int:
    """The little-endian unsigned field of ``size`` bytes at rec[at]."""
    value = 0
    for k in range(size):
        value |= int(rec[at + k]) << (8 * k)
    return value


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _balls(out: np.ndarray, pos: int, rec: np.ndarray, at: int) -> int:
    """A ball list as ``field_text`` spells it after ``balls[``: ``n]=b:x,y/s b:x,y/s``."""
    count = int(rec[at])
    pos = _int(out, pos, count, 0)
    out[pos] = 93  # ]
    out[pos + 1] = 61  # =
    pos += 2
    for j in range(count):
        item = at + 1 + 6 * j
        if j:
            out[pos] = 32
            pos += 1
        pos = _int(out, pos, int(rec[item]), 0)
        out[pos] = 58  # :
        pos = _int(out, pos + 1, _uint(rec, item + 2, 2), 0)
        out[pos] = 44  # ,
        pos = _int(out, pos + 1, _uint(rec, item + 4, 2), 0)
        out[pos] = 47  # /
        pos = _int(out, pos + 1, int(rec[item + 1]), 0)
    return pos


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _fields(out: np.ndarray, pos: int, rec: np.ndarray, t: int, tables: LineTables) -> int:
    """A record's payload fields as ``name=value``, one space between them."""
    for i in range(tables.n_fields[t]):
        field = tables.fields[t, i]
        start, n, at, kind = field[0], field[1], field[2], field[3]
        if i:
            out[pos] = 32
            pos += 1
        pos = _copy(out, pos, tables.names[start:], n)
        if kind == BALLS:
            pos = _balls(out, pos, rec, at)
        else:
            pos = _int(out, pos, _uint(rec, at, kind), 0)
    return pos


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _line(out: np.ndarray, pos: int, f: np.void, rec: np.ndarray, tables: LineTables) -> int:
    """One frame's line, its newline included, as ``text_line`` writes it."""
    t = int(f["msg_type"])
    pos = _int(out, pos, int(f["offset"]), 10)
    out[pos : pos + 2] = 32
    pos = _copy(out, pos + 2, tables.node_text[int(f["node"])], NODE_WIDTH)
    out[pos] = 32
    pos = _int(out, pos + 1, int(f["seq"]), 5)
    out[pos] = 32
    pos = _int(out, pos + 1, int(f["t_us"]), 10)
    out[pos : pos + 2] = 32
    pos = _copy(out, pos + 2, tables.type_text[t], TYPE_WIDTH + 1)
    pos = _fields(out, pos, rec, t, tables)
    words, word_len = tables.words, tables.word_len
    if f["flags"] & 1:
        pos = _copy(out, pos, words[W_RETX], word_len[W_RETX])
    mark = int(f["seq_mark"])
    if mark == GAP:
        pos = _copy(out, pos, words[W_GAP], word_len[W_GAP])
        pos = _int(out, pos, int(f["seq_gap"]), 0)
        pos = _copy(out, pos, words[W_LOST], word_len[W_LOST])
    else:
        pos = _copy(out, pos, words[W_MARK + mark], word_len[W_MARK + mark])
    out[pos] = 10
    return pos + 1


@numba.njit(cache=True, nogil=True, boundscheck=False)
def text_lines(
    frames: np.ndarray,
    slow: np.ndarray,
    records: np.ndarray,
    base: np.ndarray,
    rec_size: np.ndarray,
    tables: LineTables,
    out: np.ndarray,
    ends: np.ndarray,
) -> int:
    """The lines of a feed's frames into ``out``; returns the bytes written.

    A frame's record is at ``records[base[t] + row * rec_size[t]]`` (its type's table
    in one buffer).  ``ends[i]``: where frame i's line ends in ``out``; a ``slow``
    frame gets no line (Python writes it there), its end is the line before's.
    """
    pos = 0
    for i in range(len(frames)):
        if not slow[i]:
            f = frames[i]
            t = int(f["msg_type"])
            at = base[t] + int(f["row"]) * rec_size[t]
            pos = _line(out, pos, f, records[at : at + rec_size[t]], tables)
        ends[i] = pos
    return pos


class TextLines:
    """The text lines of each feed: the kernel's for the plain frames, the rest marked."""

    def __init__(self) -> None:
        self.tables = line_tables()

    def lines(self, frames: np.ndarray, tables: dict[str, np.ndarray]) -> tuple[
        bytes, np.ndarray, np.ndarray
    ]:  # fmt: skip
        """(the lines' bytes, where each frame's line ends in them, which frames have none:
        those ``text_line`` must write, each at its end)."""
        slow = (
            (frames["status"] != OK)
            | ((frames["flags"] & FLAG_SIGNED) != 0)
            | (self.tables.n_fields[frames["msg_type"]] < 0)
        )
        base = np.zeros(256, np.int64)
        rec_size = np.zeros(256, np.int64)
        parts = []
        at = 0
        for table in tables.values():
            if len(table):
                t = int(table["msg_type"][0])
                base[t], rec_size[t] = at, table.dtype.itemsize
                parts.append(np.ascontiguousarray(table).view(np.uint8).reshape(-1))
                at += len(parts[-1])
        records = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        out = np.empty(len(frames) * LINE_BOUND, np.uint8)
        ends = np.empty(len(frames), np.int64)
        n = text_lines(frames, slow, records, base, rec_size, self.tables, out, ends)
        return out[:n].tobytes(), ends, slow
