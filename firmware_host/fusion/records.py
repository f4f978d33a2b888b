"""Event records: what the fusion writes per event, where, and what it counts when full.

Every decision ends in :func:`emit`: one int64 record per event in
``Out.events``, in emission order, with the hub time it carries (some
carry a time in the recent past: :class:`.events.Fusion` re-sorts them).
A shot_start, shot_end or rest also writes the layout (``Out.layouts``,
``Out.frozen``: :func:`write_layout`) and a shot_end each moved ball's
path (``Out.paths``: :func:`write_paths`).  Each buffer is sized by the
caller; what finds no room is counted in ``Out.counters``, never written
past the end.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from rules.catalogue import CODES, NAMES

from .geometry import carry_step, frozen_mask
from .paths import PATH_TOLERANCE_MM, simplify
from .state import (
    BALLS,
    FRAMES_KEPT,
    FRAMES_SEEN,
    HISTORY,
    IN_SHOT,
    ON,
    SHOT_NUMBER,
    Shot,
    Tracker,
    X,
    Y,
)

# Event type codes and names, from the event catalogue (rules/catalogue.py): the order events
# of the same hub time are written in (a shot ends before the next starts; a shot starts
# before its tip contact)
EV_BOOT = CODES["boot"]
EV_NODE_STATUS = CODES["node_status"]
EV_KEYPAD = CODES["keypad"]
EV_SHOT_END = CODES["shot_end"]
EV_REST = CODES["rest"]
EV_SHOT_START = CODES["shot_start"]
EV_CUE_CONTACT = CODES["cue_contact"]
EV_BALL_CONTACT = CODES["ball_contact"]
EV_CUSHION = CODES["cushion"]
EV_POCKET = CODES["pocket"]
EV_LINE_CROSS = CODES["line_cross"]
EV_BALL_MOVED = CODES["ball_moved"]
EVENT_NAMES = NAMES

# Record slots: hub time, type, emission number, shot (-1: none), ball (-1: none), the type's
# values A-E, its layout (-1: none), its paths [PATH0, PATH1), flags
O_T, O_TYPE, O_SEQ, O_SHOT, O_BALL, O_A, O_B, O_C, O_D, O_E, O_SNAP, O_PATH0, O_PATH1, O_FLAGS = (
    range(14)
)
N_OUT = 14
#: the slots by the names the event catalogue's ``Slot``s use (rules/catalogue.py)
SLOTS = {
    "BALL": O_BALL,
    "A": O_A,
    "B": O_B,
    "C": O_C,
    "D": O_D,
    "E": O_E,
    "FLAGS": O_FLAGS,
}
FLAG_CERTAIN, FLAG_INTERRUPTED = np.int64(1), np.int64(2)
# Arguments as numpy scalars, not Python literals: numba compiles a function once per literal
# value it is called with (a cold compile took half as long again)
NO_BALL, NO_FLAGS = np.int64(-1), np.int64(0)
TRACKED, UNTRACKED = np.bool_(True), np.bool_(False)
SOURCE_TRACKER = 1  # O_B of a cushion event: derived from the tracker (EVENTS.md "source")
STATUS_FROM_HUB, STATUS_SILENT, STATUS_FLOOD = 0, 1, 2  # O_C of node_status: who said so
PATH_BALL, PATH_T, PATH_X, PATH_Y = range(4)  # Out.paths columns

EVENTS_WRITTEN, LAYOUTS_WRITTEN, PATH_POINTS_WRITTEN = range(3)  # Out.written
# Out.counters: the next emission number, then what found no room (the caller sized a buffer
# too small, or more happened than a fixed buffer holds): events, path points, layouts, a
# shot's tracker frames beyond SHOT_FRAMES, clicks or trajectory contacts that could not wait,
# played collisions beyond PLAYED, accepted cushion hits pushed out of the ring-down memory
# while still within its window
(
    NEXT_SEQ,
    EVENTS_DROPPED,
    PATH_POINTS_DROPPED,
    LAYOUTS_DROPPED,
    SHOT_FRAMES_DROPPED,
    HELD_FULL,
    PLAYED_DROPPED,
    CUSHION_HITS_FORGOTTEN,
) = range(8)
N_COUNTERS = 8


class Out(NamedTuple):
    """One call's output buffers, what they hold, and the counters that outlive the call."""

    events: np.ndarray  # (n, N_OUT) int64 records, O_* slots
    layouts: np.ndarray  # (m, 16, 3) float64 x, y, on per ball
    frozen: np.ndarray  # (m, 16) int64 cushions each ball rests against (bits)
    paths: np.ndarray  # (p, 4) float64 PATH_* points
    written: np.ndarray  # (3,) int64 EVENTS_WRITTEN, LAYOUTS_WRITTEN, PATH_POINTS_WRITTEN
    counters: np.ndarray  # (N_COUNTERS,) int64, kept in the fusion's state


@njit(cache=True, inline="always")
def emit(out, shot, hub_t, etype, ball, slot_a, slot_b, slot_c, slot_d, slot_e):
    """Write the next event record; returns its row, or -1 when ``out.events`` is full.

    A full buffer is counted (``EVENTS_DROPPED``) and nothing is written: a
    caller that adds to the record (a layout, paths, flags) writes only into
    the row returned, never into an earlier event.

    Inlined into its caller, where every field becomes an int64: numba compiles a
    function once per tuple of argument types (a literal 0, a constant, an int64 are three
    types), so :func:`write_event` behind it is compiled once, not once per call shape.
    """
    return write_event(
        out,
        shot,
        np.int64(hub_t),
        np.int64(etype),
        np.int64(ball),
        np.int64(slot_a),
        np.int64(slot_b),
        np.int64(slot_c),
        np.int64(slot_d),
        np.int64(slot_e),
    )


@njit(cache=True)
def write_event(out: Out, shot: Shot, hub_t, etype, ball, slot_a, slot_b, slot_c, slot_d, slot_e):
    """:func:`emit`'s body, every field an int64 (one compiled specialisation); the event
    belongs to the shot running now (``O_SHOT`` -1 between shots)."""
    row = out.written[EVENTS_WRITTEN]
    if row >= out.events.shape[0]:
        out.counters[EVENTS_DROPPED] += 1  # the caller sized it too small: never written past
        return np.int64(-1)
    record = out.events[row]
    record[O_T] = hub_t
    record[O_TYPE] = etype
    record[O_SEQ] = out.counters[NEXT_SEQ]
    out.counters[NEXT_SEQ] += 1
    record[O_SHOT] = shot.state[SHOT_NUMBER] if shot.state[IN_SHOT] else -1
    record[O_BALL] = ball
    record[O_A] = slot_a
    record[O_B] = slot_b
    record[O_C] = slot_c
    record[O_D] = slot_d
    record[O_E] = slot_e
    record[O_SNAP] = -1
    record[O_PATH0] = 0
    record[O_PATH1] = 0
    record[O_FLAGS] = 0
    out.written[EVENTS_WRITTEN] = row + 1
    return row


@njit(cache=True)
def take_layout(out: Out, row) -> np.int64:
    """The next layout slot for event ``row``, or -1 when ``out.layouts`` is full (counted)."""
    at = out.written[LAYOUTS_WRITTEN]
    if at >= out.layouts.shape[0]:
        out.counters[LAYOUTS_DROPPED] += 1
        return np.int64(-1)
    out.events[row, O_SNAP] = at
    out.written[LAYOUTS_WRITTEN] = at + 1
    return at


@njit(cache=True)
def write_layout(tracker: Tracker, table, layouts, frozen, index, hub_t) -> None:
    """``layouts[at]``, ``frozen[at]``: every ball's position at ``hub_t`` (its rest average
    where it is still, carried on where it moves) and the cushions a still ball rests against."""
    seen = tracker.state[FRAMES_SEEN]
    newest = (seen - 1) % HISTORY
    before = (seen - 2) % HISTORY
    frame_t, frame_xy = tracker.frame_t, tracker.frame_xy
    for b in range(BALLS):
        on = seen > 0 and tracker.frame_on[newest, b]
        layouts[index, b, ON] = 1.0 if on else 0.0
        still = tracker.rest_frames[b] > 0
        if still:
            x, y = tracker.rest_xy[b, X], tracker.rest_xy[b, Y]
        else:
            x, y = frame_xy[newest, b, X], frame_xy[newest, b, Y]
            if (
                seen >= 2
                and tracker.frame_on[before, b]
                and tracker.frame_moving[newest, b]
                and frame_t[newest] > frame_t[before]
            ):
                f = (hub_t - frame_t[newest]) / (frame_t[newest] - frame_t[before])
                x, y = carry_step(frame_xy[before, b, X], frame_xy[before, b, Y], x, y, f)
        layouts[index, b, X] = x
        layouts[index, b, Y] = y
        frozen[index, b] = frozen_mask(table, x, y) if on and still else 0


@njit(cache=True)
def write_paths(out: Out, shot: Shot, row) -> None:
    """Each ball that moved in the shot: its tracked path simplified, appended to
    ``out.paths`` as the points [``O_PATH0``, ``O_PATH1``) of event ``row`` (points past
    the end are counted)."""
    kept = shot.state[FRAMES_KEPT]
    keep = np.empty(kept, np.bool_)
    xs = np.empty(kept)
    ys = np.empty(kept)
    ts = np.empty(kept, np.int64)
    point = out.written[PATH_POINTS_WRITTEN]
    out.events[row, O_PATH0] = point
    for b in range(BALLS):
        first, last = -1, -1
        for i in range(kept):
            if shot.frame_moving[i, b]:
                if first < 0:
                    first = i
                last = i
        if first < 0:
            continue
        m = 0
        for i in range(max(first - 1, 0), min(last + 2, kept)):
            if shot.frame_on[i, b]:
                xs[m], ys[m], ts[m] = (
                    shot.frame_xy[i, b, X],
                    shot.frame_xy[i, b, Y],
                    shot.frame_t[i],
                )
                m += 1
        simplify(xs[:m], ys[:m], PATH_TOLERANCE_MM, keep)
        for i in range(m):
            if keep[i]:
                if point >= out.paths.shape[0]:
                    out.counters[PATH_POINTS_DROPPED] += 1
                    break
                out.paths[point, PATH_BALL] = b
                out.paths[point, PATH_T] = ts[i]
                out.paths[point, PATH_X] = xs[i]
                out.paths[point, PATH_Y] = ys[i]
                point += 1
    out.events[row, O_PATH1] = point
    out.written[PATH_POINTS_WRITTEN] = point
