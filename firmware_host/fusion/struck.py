"""The struck ball: which ball the tip hit (a shot_start's ``cue_ball``).

The first ball to start moving after the tip contact, once a frame shows
it: one ball is that one.  A cluster (several started together) after the
tip's stamp: the ball whose stroke, played forward through the cluster
(:func:`.impulse.fit_stroke`), best gives the frame; the candidates are the
balls that moved and those touching them (a ball struck straight into a
touching neighbour passes nearly all of it on and may never show as
moving).  In a frozen cluster the tip can reach a ball only from where no
touching ball sits: a ball leaving a touching neighbour that moved too,
along their line of centres (within ``BEHIND_DEG``), was driven by it, and
the neighbour was struck (:func:`_behind`); the decision waits for ``FROZEN_SHOWN_MM`` of
motion so the direction is read above the tracker's noise.  In a frame before the stamp (its jitter): the ball that drove a
touching neighbour away along their line of centres while itself moving
towards it; failing that, the one that moved most.  The stroke played for
the chosen ball is kept (``contacts.played``) to match the clicks held
for it (:func:`.contacts.judge_held_clicks`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .contacts import NEIGHBOUR_MM
from .geometry import G_D
from .impulse import TOUCH_MM, fit_stroke
from .records import PLAYED_DROPPED, Out
from .state import (
    BALLS,
    CLICKS_HELD,
    COLLISIONS_PLAYED,
    CUE_DURATION,
    CUE_T,
    FRAMES_SEEN,
    HISTORY,
    MOVED_START_T,
    ON,
    PLAYED,
    STRUCK_UNKNOWN,
    Contacts,
    FusionState,
    Shot,
    Tracker,
    X,
    Y,
)

SHOWN_MM = 3.0  # how far the struck ball must have moved before the tracker can tell which it was
# ... in a frozen cluster, where which ball the tip could reach is read from the first motion's
# direction: 10 mm puts the tracker's 0.7 mm noise at 6° of it, not 19°
FROZEN_SHOWN_MM = 10.0
TIP_MM = 13.0  # a cue tip's diameter (Russian billiards cues: 12.5-13.5 mm)
# a ball driven by a touching neighbour leaves along their line of centres (equal balls, no
# friction between them): within three times the direction's noise at FROZEN_SHOWN_MM (0.7 mm
# of a frame against 10 mm: 4°) of it, well inside the cone where the neighbour stops the tip
# (36.6° for 68 mm balls); a ball struck into a rack and deflected 30° off a neighbour's line
# (the rack's geometry) stays its own struck ball
BEHIND_DEG = 12.0


@njit(cache=True)
def struck(state: FusionState, out: Out, since):
    """Of the balls that started moving since hub time ``since``, the one the tip struck, or
    -1 (none moved far enough to tell: a later frame will)."""
    tracker, shot, contacts = state.tracker, state.shot, state.contacts
    newest = (tracker.state[FRAMES_SEEN] - 1) % HISTORY
    moved = state.motion.moved[:, MOVED_START_T] >= since
    biggest = 0.0
    for b in range(BALLS):
        if moved[b]:
            biggest = max(
                biggest,
                np.hypot(
                    tracker.frame_xy[newest, b, X] - tracker.rest_xy[b, X],
                    tracker.frame_xy[newest, b, Y] - tracker.rest_xy[b, Y],
                ),
            )
    contacts.state[COLLISIONS_PLAYED] = 0
    diameter = state.table[G_D]
    start = shot.layout_before[0]
    if biggest < (FROZEN_SHOWN_MM if _frozen(start, moved, diameter) else SHOWN_MM):
        return -1
    after_tip = shot.state[STRUCK_UNKNOWN] and tracker.frame_t[newest] > shot.state[CUE_T]
    if moved.sum() > 1 and after_tip:
        best = _best_played(tracker, shot, contacts, out, newest, moved, diameter)
    else:
        best = _pusher(tracker, newest, moved, diameter)
        if best >= 0 and after_tip and contacts.state[CLICKS_HELD]:
            n = _fit(tracker, shot, newest, moved, best, diameter, contacts.played)[0]
            _played(contacts, out, n)
    behind = -1 if best < 0 else _behind(start, tracker.frame_xy[newest], moved, best, diameter)
    if behind >= 0:
        best = behind
        if after_tip:
            n = _fit(tracker, shot, newest, moved, best, diameter, contacts.played)[0]
            _played(contacts, out, n)
    return best


@njit(cache=True, inline="always")
def _frozen(start, moved, diameter) -> bool:
    """A ball that moved was touching another at the tip contact (a frozen cluster)."""
    for b in range(BALLS):
        if not moved[b] or start[b, ON] == 0:
            continue
        for o in range(BALLS):
            if o != b and start[o, ON] > 0:
                g = np.hypot(start[o, X] - start[b, X], start[o, Y] - start[b, Y])
                if g <= diameter + TOUCH_MM:
                    return True
    return False


@njit(cache=True, inline="always")
def _behind(start, xy, moved, ball, diameter):
    """The ball touching ``ball`` at the tip contact that drove it, or -1: one that moved too,
    and that ``ball`` left along their line of centres (its first motion, ``start`` to
    ``xy``, within ``BEHIND_DEG`` of it, away from it), as a ball driven by it does.

    Struck itself, ``ball`` would have left its neighbour at rest (it moves away from it):
    the neighbour moving as well says the tip struck the neighbour, and a cue of tip
    ``TIP_MM`` striking ``ball`` that near their line of centres (within asin((D/2 + tip/2)
    / D), 36.6° for 68 mm balls) would have passed through it, with a level cue.  Issue 28:
    ball 8 named for a cue ball resting 0.02 mm behind it, and a foul 19.2 missed.  A stroke
    away from a touching ball (19.2's note) leaves that ball at rest: not read as its stroke.
    """
    dx, dy = xy[ball, X] - start[ball, X], xy[ball, Y] - start[ball, Y]
    d = np.hypot(dx, dy)
    cone = np.cos(np.radians(BEHIND_DEG))
    for o in range(BALLS):
        if o == ball or not moved[o] or start[o, ON] == 0:
            continue
        ux, uy = start[ball, X] - start[o, X], start[ball, Y] - start[o, Y]
        g = np.hypot(ux, uy)
        if 0.0 < g <= diameter + TOUCH_MM and (dx * ux + dy * uy) >= cone * d * g:
            return o
    return -1


@njit(cache=True, inline="always")
def _best_played(
    tracker: Tracker, shot: Shot, contacts: Contacts, out: Out, newest, moved, diameter
):
    """A cluster started after the tip contact: the candidate whose stroke played forward
    best gives frame ``newest`` (its play kept in ``contacts.played``), or -1."""
    start = shot.layout_before[0]
    played = np.empty((PLAYED, 5))
    best, best_e, best_n = -1, np.inf, 0
    for c in range(BALLS):
        near = moved[c]
        for o in range(BALLS):
            if moved[o] and o != c and start[o, ON] > 0:
                g = np.hypot(start[o, X] - start[c, X], start[o, Y] - start[c, Y])
                near = near or g <= diameter + TOUCH_MM
        if not near or start[c, ON] == 0 or not tracker.frame_on[newest, c]:
            continue
        n, e = _fit(tracker, shot, newest, moved, c, diameter, played)
        if e < best_e:
            best, best_e, best_n = c, e, n
            contacts.played[:] = played  # kept for the held clicks: not played again
    if best >= 0:
        _played(contacts, out, best_n)
    return best


@njit(cache=True, inline="always")
def _pusher(tracker: Tracker, newest, moved, diameter):
    """Of the ``moved`` balls, the one that drove a touching neighbour away along their line
    of centres while moving towards it; failing that, the one that moved most (-1: none)."""
    xy, rest = tracker.frame_xy, tracker.rest_xy
    best, best_d, pusher = -1, -1.0, False
    for b in range(BALLS):
        if not moved[b]:
            continue
        dbx, dby = xy[newest, b, X] - rest[b, X], xy[newest, b, Y] - rest[b, Y]
        d = np.hypot(dbx, dby)
        pushes = False
        for o in range(BALLS):
            if o == b or not moved[o]:
                continue
            ux, uy = rest[o, X] - rest[b, X], rest[o, Y] - rest[b, Y]
            gap = np.hypot(ux, uy)
            if gap > diameter + NEIGHBOUR_MM or gap <= 0.0:
                continue
            dox, doy = xy[newest, o, X] - rest[o, X], xy[newest, o, Y] - rest[o, Y]
            away = (dox * ux + doy * uy) / gap > 0.7 * np.hypot(dox, doy)
            if away and dbx * ux + dby * uy > 0.0:
                pushes = True
        if (pushes and not pusher) or (pushes == pusher and d > best_d):
            best, best_d, pusher = b, d, pushes
    return best


@njit(cache=True, inline="always")
def _played(contacts: Contacts, out: Out, collisions) -> None:
    """``n`` collisions played for the chosen struck ball: those past ``PLAYED`` were not
    written (counted)."""
    contacts.state[COLLISIONS_PLAYED] = min(collisions, PLAYED)
    out.counters[PLAYED_DROPPED] += max(collisions - PLAYED, 0)


@njit(cache=True)
def _fit(tracker: Tracker, shot: Shot, newest, moved, candidate, diameter, played):
    """The stroke on ``candidate`` fitted to tracker frame ``newest``
    (:func:`.impulse.fit_stroke`): (collisions, misfit mm²), the play in ``played``."""
    return fit_stroke(
        shot.layout_before[0],
        tracker.frame_xy[newest],
        tracker.frame_on[newest],
        moved,
        float(tracker.frame_t[newest] - shot.state[CUE_T]),
        candidate,
        diameter,
        float(shot.state[CUE_DURATION]),
        np.empty((BALLS, 2)),
        played,
    )
