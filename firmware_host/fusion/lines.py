"""Line crossings: the centre line (x = L/2) and the house line (x = L/4).

From the light curtain when the table has one, each report given to the
ball carried nearest its place (:func:`line_cross`); without it, from a
ball centre changing side of a line between two tracker frames, the time
interpolated along its step (:func:`tracked_line_crossings`).

ICD §7: a ball centre within 1 mm of the line when it stops may be
reported either way.  A report of a ball too slow to be sure it will not
stop within that 1 mm is held until the tracker shows the ball clear of
the line, or at rest: then its averaged rest position settles the crossing
where it is decisive, and the event says ``certain: false`` where neither
is (:func:`judge_lines`, :func:`decide_line`).  A report of no crossing (a
return) is always held: a ball the tracker then shows clear of the line on
the side it did not come from crossed it, whatever the report said.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from firmware_host.timing.rows import C_HUB, cols

from .geometry import line_x, nearest_ball
from .records import EV_LINE_CROSS, O_SHOT, Out, emit
from .state import (
    BALLS,
    FRAMES_KEPT,
    FRAMES_SEEN,
    HELD_LINE_BALL,
    HELD_LINE_DIRECTION,
    HELD_LINE_FROM,
    HELD_LINE_LINE,
    HELD_LINE_SHOT,
    HELD_LINE_T,
    HISTORY,
    IN_SHOT,
    LAST_ACTIVITY,
    LINES_HELD,
    REST_AVERAGE_FRAMES,
    SHOT_NUMBER,
    FusionState,
    Lines,
    Shot,
    Tracker,
    X,
    Y,
)
from .touch import DECISIVE_SIGMAS, TRACK_SIGMA_MM
from .tracker import ATTRIBUTION_LIMIT_MM, carried

LC_LINE, LC_POS, LC_DIR = cols("LINE_CROSS", "line", "pos_mm", "direction")
# ICD §7 lines: a ball centre within 1 mm of the line when it stops may be reported either
# way; tracker: position σ 0.7 mm per frame
LINE_EITHER_WAY_MM = 1.0
LINE_ZONE_MM = LINE_EITHER_WAY_MM + DECISIVE_SIGMAS * TRACK_SIGMA_MM  # one frame clear of it
# a ball crossing faster than this rolls on > 7 mm (cloth rolling resistance ~0.01 g): it
# cannot stop within the curtain's 1 mm; measured over this many frames (σ 0.02 m/s)
LINE_FAST_MM_PER_US = 1.2e-4
LINE_SPEED_FRAMES = 6
# how a held report is decided: as the curtain said it, by the side the ball rests on, a
# crossing nobody can confirm, or not yet
AS_SAID, BY_TRACKER, UNDECIDED, WAIT = range(4)


@njit(cache=True)
def line_cross(state: FusionState, out: Out, row, tracked):
    """A LINE_CROSS row from the curtain (direction 0/1 a crossing, 2 a touch): given (tracker
    alive) to the ball carried nearest its place on the line, then reported or held
    (:func:`line_report`)."""
    hub_t = row[C_HUB]
    shot, tracker = state.shot, state.tracker
    shot.state[LAST_ACTIVITY] = hub_t
    line, direction = row[LC_LINE], row[LC_DIR]
    if direction > 2 or not 0 <= line <= 1:
        return
    ball = -1
    if tracked:
        xy, on, penalty = tracker.carried_xy, tracker.carried_on, tracker.carried_penalty
        carried(tracker, state.contacts.hit_t, shot, hub_t, xy, on, penalty)
        lx, ly = line_x(state.table, line), float(row[LC_POS])
        ball = nearest_ball(xy, on, penalty, lx, ly, ATTRIBUTION_LIMIT_MM)
    line_report(shot, state.lines, out, hub_t, line, direction, ball)


@njit(cache=True)
def may_stop_on_line(shot: Shot, ball) -> bool:
    """``ball``, at a line now, may stop within the curtain's 1 mm of it: not shown faster
    than ``LINE_FAST_MM_PER_US`` over the shot's last ``LINE_SPEED_FRAMES`` frames."""
    i = shot.state[FRAMES_KEPT] - 1
    j = i - LINE_SPEED_FRAMES
    if not shot.state[IN_SHOT] or j < 0 or not (shot.frame_on[i, ball] and shot.frame_on[j, ball]):
        return True
    span = shot.frame_t[i] - shot.frame_t[j]
    xy = shot.frame_xy
    step = np.hypot(xy[i, ball, X] - xy[j, ball, X], xy[i, ball, Y] - xy[j, ball, Y])
    return span <= 0 or step < LINE_FAST_MM_PER_US * span


@njit(cache=True)
def line_report(shot: Shot, lines: Lines, out: Out, hub_t, line, direction, ball):
    """A curtain report (direction 0/1 a crossing, 2 none) of ``ball`` (-1: not known).

    A crossing is emitted at once unless the tracker cannot yet rule out
    that the ball stops within the curtain's ambiguity; a return of a known
    ball is always held: the side the tracker then shows it clear on says
    whether it crossed (:func:`_clear`: the report may be one turned for a
    stop long after).  Held reports (``lines.held``) wait for
    :func:`judge_lines`.
    """
    if ball < 0 or (direction <= 1 and not may_stop_on_line(shot, ball)):
        if direction <= 1:
            emit(out, shot, hub_t, EV_LINE_CROSS, ball, line, direction, 0, 0, 0)
        return
    held = lines.held
    for h in range(lines.state[LINES_HELD]):
        if held[h, HELD_LINE_BALL] == ball and held[h, HELD_LINE_LINE] == line:
            decide_line(shot, lines, out, h, AS_SAID, 0)  # the ball left and came back
            break
    h = lines.state[LINES_HELD]  # < LINE_HELD: one per ball and line
    # the side the ball came from: a crossing says; a touch left on it, where the tracker saw it
    came_from = lines.side[ball, line] if direction == 2 else (1 if direction == 0 else -1)
    held[h, HELD_LINE_T], held[h, HELD_LINE_BALL], held[h, HELD_LINE_LINE] = hub_t, ball, line
    held[h, HELD_LINE_DIRECTION], held[h, HELD_LINE_FROM] = direction, came_from
    held[h, HELD_LINE_SHOT] = shot.state[SHOT_NUMBER] if shot.state[IN_SHOT] else -1
    lines.state[LINES_HELD] = h + 1


@njit(cache=True)
def line_state(tracker: Tracker, newest, ball, line_at, came_from, force):
    """Where held ``ball`` stands against its line at x = ``line_at``: (AS_SAID, BY_TRACKER,
    UNDECIDED or WAIT, the side of its averaged rest position)."""
    if tracker.state[FRAMES_SEEN] == 0 or not tracker.frame_on[newest, ball]:
        return AS_SAID, 0  # gone (pocketed), or no tracker left to tell
    n, x = tracker.rest_frames[ball], tracker.rest_xy[ball, X]
    if n == 0:
        if tracker.frame_moving[newest, ball]:  # on its way: clear of the ambiguity, or at the line
            off = tracker.frame_xy[newest, ball, X] - line_at
            if abs(off) <= LINE_ZONE_MM:
                return (AS_SAID if force else WAIT), 0
            side = 1 if off > 0 else -1
            return _clear(came_from, side), side
        if not force:
            return WAIT, 0  # its first still frame: averaged from the next
        n, x = 1, tracker.frame_xy[newest, ball, X]
    se = TRACK_SIGMA_MM / np.sqrt(n)
    off = abs(x - line_at)
    side = 1 if x >= line_at else -1
    if off > LINE_EITHER_WAY_MM + DECISIVE_SIGMAS * se:
        return _clear(came_from, side), side  # stopped clear of the curtain's ambiguity
    if off > DECISIVE_SIGMAS * se:
        return (BY_TRACKER if came_from != 0 else UNDECIDED), side
    if force or n >= REST_AVERAGE_FRAMES or (tracker.frame_moving[newest, ball] and n >= 2):
        return UNDECIDED, side  # no more to learn: averaged all it can, or struck again
    return WAIT, side


@njit(cache=True, inline="always")
def _clear(came_from, side):
    """A held report whose ball is clear of the line on ``side``: as the curtain said it,
    unless the ball came from the other side (``came_from``), where it crossed, whatever
    the report said.  ICD §7 lets a curtain turn a report either way only when its ball
    stops within 1 mm of the line, and the sensor model turns a ball's last report on a
    line whose stop is there, however long before (pooltool seed 40 shot 9: a
    crossing read as a return, its ball running on 40 mm past the line, was no crossing
    and a legal 20(4)(b) read 20(2)(b))."""
    return BY_TRACKER if came_from != 0 and side != came_from else AS_SAID


@njit(cache=True)
def judge_lines(table, tracker: Tracker, shot: Shot, lines: Lines, out: Out, force):
    """Held curtain reports whose ball is now clear of its line or at rest, decided; with
    ``force`` (a new shot, the tracker gone, the end of the input) all of them."""
    newest = (tracker.state[FRAMES_SEEN] - 1) % HISTORY
    held = lines.held
    h = 0
    while h < lines.state[LINES_HELD]:
        ball, line = held[h, HELD_LINE_BALL], held[h, HELD_LINE_LINE]
        how, side = line_state(
            tracker, newest, ball, line_x(table, line), held[h, HELD_LINE_FROM], force
        )
        if how == WAIT:
            h += 1
        else:
            decide_line(shot, lines, out, h, how, side)  # entry h now holds another


@njit(cache=True)
def decide_line(shot: Shot, lines: Lines, out: Out, row, how, side):
    """Held report ``h``: as the curtain said it (AS_SAID), a crossing if the ball rests on
    the other side of the line from the one it came from (BY_TRACKER), or a crossing nobody
    can confirm (UNDECIDED: ``certain: false``); written at its own time, in its own shot."""
    held = lines.held
    said, came_from = held[row, HELD_LINE_DIRECTION], held[row, HELD_LINE_FROM]
    direction, uncertain = -1, 0
    if how == AS_SAID:
        direction = said if said <= 1 else -1
    elif how == BY_TRACKER:
        direction = -1 if side == came_from else (1 if side > 0 else 0)
    else:
        uncertain = 1
        if came_from != 0:
            direction = 1 if came_from < 0 else 0
        elif said <= 1:
            direction = said
        else:
            direction = 1 if side > 0 else 0
    if direction >= 0:
        hub_t, ball, line = (
            held[row, HELD_LINE_T],
            held[row, HELD_LINE_BALL],
            held[row, HELD_LINE_LINE],
        )
        at = emit(out, shot, hub_t, EV_LINE_CROSS, ball, line, direction, uncertain, 0, 0)
        if at >= 0:
            out.events[at, O_SHOT] = held[row, HELD_LINE_SHOT]
    last = lines.state[LINES_HELD] - 1
    held[row] = held[last]
    lines.state[LINES_HELD] = last


@njit(cache=True)
def tracked_line_crossings(table, tracker: Tracker, shot: Shot, out: Out, newest, before, span):
    """No curtain: a ball whose centre changed side of a line between frames ``before`` and
    ``newest`` (``span`` µs apart), moving in either, crossed it at the time interpolated
    along its step (direction 1 towards +x, 0 towards -x)."""
    k, p = newest, before
    on, moving = tracker.frame_on, tracker.frame_moving
    for b in range(BALLS):
        if not (on[k, b] and on[p, b] and (moving[k, b] or moving[p, b])):
            continue
        for line in range(2):
            lx = line_x(table, line)
            x0, x1 = tracker.frame_xy[p, b, X], tracker.frame_xy[k, b, X]
            if (x0 >= lx) != (x1 >= lx):
                tau = tracker.frame_t[p] + np.int64(span * (lx - x0) / (x1 - x0))
                direction = 1 if x1 > x0 else 0
                emit(out, shot, tau, EV_LINE_CROSS, b, line, direction, 0, 0, 0)


@njit(cache=True, inline="always")
def line_sides(table, on_table, positions, side) -> None:
    """``side[b, line]``: the side (-1, +1) of each line ball b was last seen clearly on,
    more than ``LINE_ZONE_MM`` from it (where a held curtain touch's ball came from)."""
    for b in range(BALLS):
        if on_table[b]:
            for line in range(2):
                off = positions[b, X] - line_x(table, line)
                if abs(off) > LINE_ZONE_MM:
                    side[b, line] = 1 if off > 0 else -1
