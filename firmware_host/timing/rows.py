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
    C_STATE,  # 0 new, 1 waiting for its node's first sync, 2 mapped
    C_ARRIVE,  # hub time the timeline had reached when the row arrived
) = range(14)
P0 = 14
N_PAYLOAD = 10  # HELLO has the most scalar fields
N_COLS = P0 + N_PAYLOAD

NEW, UNSYNCED, MAPPED = 0, 1, 2

# Rows the timeline itself makes (msg_type values no wire frame uses).
NODE_SILENT = 0xF0  # P0 = node: no frame about it for the silence bound
NODE_BACK = 0xF1  # P0 = node: frames about it again

TRACK_FIELDS = ("ball", "state", "x", "y")


@cache
def scalar_fields(name: str) -> tuple[str, ...]:
    """The payload's scalar fields in catalogue order."""
    dtype = layout(BY_NAME[name].msg_type).dtype
    header = 8  # offset, payload_len + the six header fields
    return tuple(f for f in dtype.names[header:] if dtype[f].shape == () and dtype[f].kind in "ui")


def col(name: str, field: str) -> int:
    """Row column of a payload field, e.g. ``col("CUSHION_HIT", "amplitude")``."""
    return P0 + scalar_fields(name).index(field)


def type_of(name: str) -> int:
    return BY_NAME[name].msg_type


def to_rows(tables: dict[str, np.ndarray], names: frozenset[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows of every frame in ``tables`` (only ``names`` if given), in stream order, and the tracks."""
    parts = []
    tracks = np.zeros((0, 16, 4), np.int32)
    for name, rec in tables.items():
        if (names is not None and name not in names) or len(rec) == 0 or name not in BY_NAME:
            continue
        rows = np.zeros((len(rec), N_COLS), np.int64)
        rows[:, C_OFFSET] = rec["offset"]
        rows[:, C_NODE] = rec["node"]
        rows[:, C_TYPE] = rec["msg_type"]
        rows[:, C_FLAGS] = rec["flags"]
        rows[:, C_SEQ] = rec["seq"]
        rows[:, C_TRAW] = rec["t_us"]
        rows[:, C_TRACK] = -1
        for j, field in enumerate(scalar_fields(name)):
            rows[:, P0 + j] = rec[field]
        if name == "BALL_TRACK":
            balls = rec["balls"]
            tracks = np.stack([balls[f].astype(np.int32) for f in TRACK_FIELDS], axis=-1)
            rows[:, C_TRACK] = np.arange(len(rec))
        parts.append(rows)
    if not parts:
        return np.zeros((0, N_COLS), np.int64), tracks
    rows = np.concatenate(parts)
    order = np.argsort(rows[:, C_OFFSET], kind="stable")
    return rows[order], tracks
