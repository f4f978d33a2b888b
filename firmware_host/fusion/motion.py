"""What motion decides, frame by frame; and rule 17's evidence: ``ball_moved``.

Each tracker frame with a ball moving in it or in the frame before runs
:func:`frame_motion`: contacts from the trajectories (:mod:`.contacts`),
line crossings without the curtain (:mod:`.lines`), the struck ball of a
shot still waiting for it (:mod:`.struck`), and for every ball that was
still in the frame before and moves in this one, what set it going
(:func:`started_moving`).

**ball_moved** (item 17): a ball at rest starts moving with no tip contact
and no contact to cause it -- none before its frame (:func:`caused`), no
mover passing it, or passing a ball of the cluster resting against it (a
rack, a frozen cluster: the impulse runs through touching balls within the
contact time), between the frames (:func:`touching_mover`), and no contact
of it stamped within the timing uncertainty after the frame (a frame
exposed the instant it was struck: :func:`.contacts.touched` withdraws the
candidate).  A candidate waits ``CUE_GRACE_US`` for a tip contact that may
claim it (the struck ball) and is then written (:func:`release_moved`).
The rules turn it into a foul 17 inside a shot or between shots, the
judge's business (rules/referee.py, rules/shot.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .contacts import (
    CAUSE_US,
    CUE_GRACE_US,
    NEIGHBOUR_MM,
    contact_time,
    derive,
    trajectory_contacts,
)
from .geometry import G_D
from .impulse import TOUCH_MM
from .lines import tracked_line_crossings
from .records import EV_BALL_MOVED, TRACKED, Out, emit
from .shots import start_shot_event
from .state import (
    BALLS,
    CLICKS_HELD,
    CONTACT_FIRST,
    CONTACT_SECOND,
    CONTACT_T,
    CONTACTS_HELD,
    CUE_T,
    FRAMES_SEEN,
    HISTORY,
    IN_SHOT,
    LAYOUT_CHANGED,
    LINES,
    MOVED_FROM_T,
    MOVED_SEEN_T,
    MOVED_START_T,
    MOVED_WAITING,
    NODES_PRESENT,
    SOMETHING_MOVED,
    STRUCK_UNKNOWN,
    Contacts,
    FusionState,
    Motion,
    Shot,
    Tracker,
    X,
    Y,
)
from .struck import struck
from .tracker import velocities


@njit(cache=True, inline="always")
def frame_motion(state: FusionState, out: Out, hub_t) -> None:
    """The newest frame (at ``hub_t``) and the one before, a ball moving in either: the
    decisions motion drives, in order.

    Balls still in the frame before and moving in the newest are marked
    (``tracker.started``; ``MOVED_START_T`` their start); contacts are derived from the
    trajectories and, without the curtain, line crossings; a tip contact awaiting its
    struck ball may get it; every other ball that started is explained by a contact or
    becomes a ball_moved candidate (:func:`started_moving`).
    """
    tracker, shot, moved = state.tracker, state.shot, state.motion.moved
    seen = tracker.state[FRAMES_SEEN] - 1  # the frames before the newest
    k, p, q = seen % HISTORY, (seen - 1) % HISTORY, (seen - 2) % HISTORY
    span = float(hub_t - tracker.frame_t[p])
    started = tracker.started
    on, mv = tracker.frame_on, tracker.frame_moving
    for b in range(BALLS):
        started[b] = on[k, b] and on[p, b] and mv[k, b] and not mv[p, b]
        if started[b]:
            moved[b, MOVED_START_T] = hub_t
    velocities(tracker, seen, p, q, tracker.velocity)
    trajectory_contacts(state, out, k, p, span)
    if ((state.stream.state[NODES_PRESENT] >> LINES) & 1) == 0:
        tracked_line_crossings(state.table, tracker, shot, out, k, p, span)
    # the struck ball: the first to start moving after the tip contact
    if shot.state[STRUCK_UNKNOWN] and hub_t > shot.state[CUE_T]:
        best = struck(state, out, shot.state[CUE_T] - CUE_GRACE_US)
        if best >= 0:
            started[best] = False
            moved[best, MOVED_SEEN_T] = -1
            start_shot_event(state, out, best, TRACKED)
    # other balls that start moving: hit by a neighbour, or moved by hand (item 17)
    for b in range(BALLS):
        if started[b]:
            started_moving(state, out, b, k, p, span, hub_t)


@njit(cache=True)
def started_moving(state: FusionState, out: Out, ball, newest, before, span, hub_t):
    """``ball``, still in frame ``before``, moves in frame ``newest`` (at ``hub_t``): what
    set it going.

    A contact of it since ``CAUSE_US`` before that frame (:func:`caused`); else a mover
    that passed within ``NEIGHBOUR_MM`` of touching it, or a ball resting against it through
    touching balls, between the frames (:func:`touching_mover`): a contact of it and the
    ball on that chain, derived at the time the mover came one diameter from the cluster;
    else nothing known: a ball_moved candidate, which a tip contact stamped up to
    ``CUE_GRACE_US`` later may still claim (item 17), and between shots a change of layout.
    """
    tracker, shot, motion = state.tracker, state.shot, state.motion
    shot.state[SOMETHING_MOVED] = 1
    before_t = tracker.frame_t[before]
    if caused(state.contacts, ball, before_t - CAUSE_US):
        return
    other, member, neighbour = touching_mover(state.table, tracker, ball, newest, before)
    if other >= 0:
        xy, velocity = tracker.frame_xy, tracker.velocity
        s = contact_time(
            xy[before, other],
            xy[before, member],
            velocity[other],
            velocity[member],
            state.table[G_D],
            span,
        )
        tau = before_t + np.int64(s if 0.0 < s < span else span / 2)
        first, second = min(ball, neighbour), max(ball, neighbour)
        derive(state.stream, state.params, state.contacts, motion, shot, out, tau, first, second)
        return
    motion.moved[ball, MOVED_FROM_T], motion.moved[ball, MOVED_SEEN_T] = before_t, hub_t
    motion.state[MOVED_WAITING] += 1
    if not shot.state[IN_SHOT]:
        shot.state[LAYOUT_CHANGED] = 1


@njit(cache=True)
def caused(contacts: Contacts, ball, since) -> bool:
    """A contact explains ``ball`` starting to move: a click held since the tip contact (the
    struck ball's clicks are judged with it), a contact of the ball since hub time
    ``since``, or a trajectory contact of it held for its click, stamped since then."""
    if contacts.state[CLICKS_HELD] > 0:
        return True
    for o in range(BALLS):
        if o != ball and contacts.pair_t[min(ball, o), max(ball, o)] >= since:
            return True
    for q in range(contacts.state[CONTACTS_HELD]):
        held = contacts.held_contacts[q]
        if (held[CONTACT_FIRST] == ball or held[CONTACT_SECOND] == ball) and held[
            CONTACT_T
        ] >= since:
            return True
    return False


@njit(cache=True)
def touching_mover(table, tracker: Tracker, ball, newest, before):
    """What moved ``ball`` through the balls resting against it (item 17 in a burst):
    ``(mover, member, neighbour)``, or -1s.

    A rack or a frozen cluster passes an impulse through its touching balls within the
    contact time, far below a frame, and a ball in its middle hands nearly all of it on and
    may never show as moving: so ``ball`` started by contact if a mover (:func:`mover_near`)
    came to touch ``ball`` itself or any ball of the cluster of balls at rest in frame
    ``before`` that touch it, one another, within ``TOUCH_MM`` (the tracker's rest positions
    say which balls touch).  ``member`` is the ball the mover came to, ``neighbour`` the
    ball touching ``ball`` on the chain to it (the mover itself when it came to ``ball``).
    """
    on, moving = tracker.frame_on, tracker.frame_moving
    reach = table[G_D] + TOUCH_MM
    via = np.full(BALLS, -2, np.int64)  # the ball touching ``ball`` a member is reached through
    queue = np.empty(BALLS, np.int64)
    via[ball], queue[0], size, head = ball, ball, 1, 0
    while head < size:
        m = queue[head]
        head += 1
        other = mover_near(table, tracker, m, newest, before, ball)
        if other >= 0:
            return other, m, other if m == ball else via[m]
        mx, my = rest_place(tracker, m, before)
        for o in range(BALLS):
            if via[o] != -2 or not on[before, o] or moving[before, o]:
                continue
            ox, oy = rest_place(tracker, o, before)
            if np.hypot(ox - mx, oy - my) <= reach:
                via[o] = o if m == ball else via[m]
                queue[size] = o
                size += 1
    return -1, -1, -1


@njit(cache=True, inline="always")
def rest_place(tracker: Tracker, ball, before):
    """Where ``ball`` rests: its rest average, or, not yet averaged, frame ``before``."""
    if tracker.rest_frames[ball] > 0:
        return tracker.rest_xy[ball, X], tracker.rest_xy[ball, Y]
    return tracker.frame_xy[before, ball, X], tracker.frame_xy[before, ball, Y]


@njit(cache=True)
def mover_near(table, tracker: Tracker, ball, newest, before, starter):
    """The ball moving in frame ``before`` or ``newest`` whose course between them came
    nearest ``ball``, within ``NEIGHBOUR_MM`` of touching it, or -1 (a frame exposed as it
    struck shows it there); never ``starter``, the ball whose start is being explained.

    ``ball`` is where it rested (its rest average) or, not yet averaged, where frame
    ``before`` has it.
    """
    xy = tracker.frame_xy
    bx, by = rest_place(tracker, ball, before)
    best, best_d = -1, table[G_D] + NEIGHBOUR_MM
    on, moving = tracker.frame_on, tracker.frame_moving
    for o in range(BALLS):
        if (
            o == ball
            or o == starter
            or not on[newest, o]
            or not (moving[newest, o] or moving[before, o])
        ):
            continue
        a = before if on[before, o] else newest
        d = to_segment(bx, by, xy[a, o, X], xy[a, o, Y], xy[newest, o, X], xy[newest, o, Y])
        if d < best_d:
            best, best_d = o, d
    return best


@njit(cache=True, inline="always")
def to_segment(point_x, point_y, from_x, from_y, to_x, to_y):
    """Distance from a point to the segment between two others (mm)."""
    dx, dy = to_x - from_x, to_y - from_y
    n2 = dx * dx + dy * dy
    u = ((point_x - from_x) * dx + (point_y - from_y) * dy) / n2 if n2 > 0.0 else 0.0
    u = min(max(u, 0.0), 1.0)
    return np.hypot(point_x - from_x - u * dx, point_y - from_y - u * dy)


@njit(cache=True)
def release_moved(shot: Shot, motion: Motion, out: Out, now):
    """Balls that started moving with no cause, once no tip contact can claim them any more:
    their ball_moved, at the last frame they were still in."""
    if shot.state[STRUCK_UNKNOWN]:
        return  # the struck ball is being decided: it may be one of them
    moved = motion.moved
    waiting = 0
    for b in range(BALLS):
        if moved[b, MOVED_SEEN_T] >= 0 and moved[b, MOVED_SEEN_T] + CUE_GRACE_US < now:
            emit(out, shot, moved[b, MOVED_FROM_T], EV_BALL_MOVED, b, 0, 0, 0, 0, 0)
            moved[b, MOVED_SEEN_T] = -1
        elif moved[b, MOVED_SEEN_T] >= 0:
            waiting += 1
    motion.state[MOVED_WAITING] = waiting
