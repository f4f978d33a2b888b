"""One int64 row per frame: the timing core's and the fusion's common input.

The decoder gives one record array per message type; the timeline needs
every frame in stream order with its payload at hand.  A row holds the
header, the payload's scalar fields in catalogue order (``P0`` on), and the
columns the timeline fills in (unwrapped node time, hub time, …).  Tracker
ball lists go to a side array ``tracks`` (row -> index in ``C_TRACK``).
Column numbers of payload fields are looked up from the catalogue by name
(:func:`col`), never written by hand.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from protocol.catalogue import BY_NAME
from protocol.layout import layout
from protocol.ratelimit import CALM

(
    C_OFFSET,  # byte offset of the frame in the stream
    C_NODE,
    C_TYPE,
    C_FLAGS,
    C_SEQ,  # raw u16
    C_TRAW,  # raw u32 t_us, node clock
    C_TRACK,  # index into tracks, -1 if none
    C_NODE_T,  # unwrapped node clock (µs), filled by the timeline
    C_SEQ_U,  # unwrapped seq
    C_HUB,  # hub time (µs), unwrapped, continuous across epochs
    C_UNC,  # mapping uncertainty, µs (rounded up)
    C_EPOCH,  # hub boot epoch, 0 = before the first HELLO
    C_STATE,  # 0 new, 1 waiting for its node's first sync, 2 mapped, 3 held as implausible
    C_ARRIVE,  # hub time the timeline had reached when the row arrived
) = range(14)
P0 = 14
N_PAYLOAD = 10  # HELLO has the most scalar fields
N_COLS = P0 + N_PAYLOAD

NEW, UNSYNCED, MAPPED, HELD = 0, 1, 2, 3

# Rows the timeline itself makes (msg_type values no wire frame uses).
NODE_SILENT = 0xF0  # P0 = node: no frame about it for the silence bound
NODE_BACK = 0xF1  # P0 = node: frames about it again
CLOCK_STEP = 0xF2  # P0 = node, P1 = step (µs): its clock stepped and was resynced
# From the decoder's rate limits (protocol.ratelimit), at the node's stamp C_TRAW; made into
# synthetic rows (P0 = node) by the timeline once placed on hub time.
NODE_FLOODED = 0xF3  # the node floods the link from here: its data is set aside
NODE_CALM = 0xF4  # it keeps to its rate again

#: The fusion's inputs, released by the timeline in hub-time order; the rest only feed the
#: clock models and the watermark.
RELEASED_TYPES = (
    "HELLO",
    "NODE_STATUS",
    "CUE_CONTACT",
    "CUSHION_HIT",
    "POCKET_DROP",
    "BALL_TRACK",
    "LINE_CROSS",
    "BALL_CLICK",
    "KEYPAD",
)
#: Read for the clocks and the hub's evidence of a reboot; never released.
CLOCK_TYPES = ("CLOCK_SYNC", "HEARTBEAT")

TRACK_FIELDS = ("ball", "state", "x", "y")
TRACK_ITEM = 6  # bytes per ball in a BALL_TRACK item


@cache
def scalar_fields(name: str) -> tuple[str, ...]:
    """The payload's scalar fields in catalogue order."""
    dtype = layout(BY_NAME[name].msg_type).dtype
    header = 8  # offset, payload_len + the six header fields
    return tuple(f for f in dtype.names[header:] if dtype[f].shape == () and dtype[f].kind in "ui")


def col(name: str, field: str) -> int:
    """Row column of a payload field, e.g. ``col("CUSHION_HIT", "amplitude")``."""
    return P0 + scalar_fields(name).index(field)


def cols(name: str, *fields: str) -> tuple[int, ...]:
    """Row columns of several payload fields of one message."""
    return tuple(col(name, field) for field in fields)


def type_of(name: str) -> int:
    return BY_NAME[name].msg_type


def _track_block(rec: np.ndarray) -> np.ndarray:
    """BALL_TRACK ball lists, their wire bytes as they are: (n, 16, 6) uint8.

    The items are (ball u8, state u8, x u16, y u16), little-endian, as the
    catalogue packs them; copying bytes is ten times faster than splitting
    fields here, and the fusion kernel reads them with :func:`track_xy`.
    """
    item = rec.dtype["balls"].base
    assert [item[f].itemsize for f in TRACK_FIELDS] == [1, 1, 2, 2] and item.itemsize == TRACK_ITEM
    raw = np.ascontiguousarray(rec).view(np.uint8).reshape(len(rec), rec.dtype.itemsize)
    start = rec.dtype.fields["balls"][1]
    return raw[:, start : start + 16 * TRACK_ITEM].reshape(len(rec), 16, TRACK_ITEM).copy()


def pack_tracks(ball: np.ndarray, state: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n, 16) arrays of ball, state, x, y (0.1 mm) into the track block layout (tests, tools)."""
    out = np.zeros((*np.shape(ball), TRACK_ITEM), np.uint8)
    out[..., 0], out[..., 1] = ball, state
    out[..., 2], out[..., 3] = np.asarray(x) & 0xFF, np.asarray(x) >> 8
    out[..., 4], out[..., 5] = np.asarray(y) & 0xFF, np.asarray(y) >> 8
    return out


def to_rows(
    tables: dict[str, np.ndarray],
    names: frozenset[str] | None = None,
    marks: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of every frame in ``tables`` (only ``names`` if given), in stream order, and the tracks.

    ``marks``: the decoder's frame-table rows where a node's flood starts or ends
    (``Decoded.marks``), each a NODE_FLOODED or NODE_CALM row before the frame it came with.
    """
    rows, tracks = _frame_rows(tables, names)
    if marks is None or not len(marks):
        return rows, tracks
    made = np.zeros((len(marks), N_COLS), np.int64)
    made[:, C_OFFSET] = marks["offset"]
    made[:, C_NODE] = marks["node"]
    made[:, C_TYPE] = np.where(marks["rate"] == CALM, NODE_CALM, NODE_FLOODED)
    made[:, C_SEQ] = marks["seq"]
    made[:, C_TRAW] = marks["mark_t"]
    made[:, C_TRACK] = -1
    both = np.concatenate((made, rows))
    return both[np.argsort(both[:, C_OFFSET], kind="stable")], tracks


def _frame_rows(
    tables: dict[str, np.ndarray], names: frozenset[str] | None
) -> tuple[np.ndarray, np.ndarray]:
    parts = [
        (name, rec)
        for name, rec in tables.items()
        if (names is None or name in names) and len(rec) and name in BY_NAME
    ]
    tracks = np.zeros((0, 16, TRACK_ITEM), np.uint8)
    if not parts:
        return np.zeros((0, N_COLS), np.int64), tracks
    offsets = np.concatenate([rec["offset"] for _, rec in parts])
    where = np.empty(len(offsets), np.int64)  # output position of each part's rows
    where[np.argsort(offsets, kind="stable")] = np.arange(len(offsets))
    rows = np.zeros((len(offsets), N_COLS), np.int64)
    rows[:, C_TRACK] = -1
    start = 0
    for name, rec in parts:
        at = where[start : start + len(rec)]
        start += len(rec)
        for column, field in (
            (C_OFFSET, "offset"),
            (C_NODE, "node"),
            (C_TYPE, "msg_type"),
            (C_FLAGS, "flags"),
            (C_SEQ, "seq"),
            (C_TRAW, "t_us"),
        ):
            rows[at, column] = rec[field]
        for j, field in enumerate(scalar_fields(name)):
            rows[at, P0 + j] = rec[field]
        if name == "BALL_TRACK":
            tracks = _track_block(rec)
            rows[at, C_TRACK] = np.arange(len(rec))
    return rows, tracks
