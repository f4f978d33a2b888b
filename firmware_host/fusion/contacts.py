"""Ball-ball contacts: from the acoustic node's clicks and from the trajectories.

* **A click** is matched to the pair of balls whose carried positions are
  one diameter apart nearest it (:func:`click`).  A click of two balls at
  rest while a moving ball drives into their cluster names only a pair the
  impulse, followed from the mover along the lines of centres, closes on
  each other (:func:`cascade`: a rack break, the same microsecond for every
  contact, and the click's 30 mm error spans neighbouring pairs).  Clicks
  in a shot whose struck ball is not known yet wait for it
  (:func:`judge_held_clicks` matches them to the stroke played forward,
  :mod:`.struck`).
* **Without a click** (acoustic node absent, or the ~1 % soft contacts it
  misses) a contact is derived from the trajectories
  (:func:`trajectory_contacts`): two balls whose straight-line motion since
  the last frame would overlap, at the time their centres were one diameter
  apart; with a live acoustic node it waits ``CLICK_WAIT_US`` for the click
  that would time it exactly, and a click never doubles it.
* Every contact is a ball's last contact (``hit_t``) and may explain a ball
  that started moving (:func:`touched`, item 17's ``ball_moved``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from firmware_host.timing.rows import C_HUB, cols

from .cushions import pushed_into_cushion
from .geometry import G_D, carry, step_velocity, time_at_distance
from .impulse import MERGE_US, PLAY_FIRST, PLAY_SECOND, PLAY_US, PLAY_X, PLAY_Y, TOUCH_MM, collide
from .records import EV_BALL_CONTACT, HELD_FULL, NO_BALL, Out, emit
from .state import (
    ACOUSTIC,
    BALLS,
    CLICK_T,
    CLICK_X,
    CLICK_Y,
    CLICKS_HELD,
    COLLISIONS_PLAYED,
    CONTACT_FIRST,
    CONTACT_SECOND,
    CONTACT_T,
    CONTACTS_HELD,
    CUE_T,
    FRAMES_SEEN,
    HELD_CLICKS,
    HISTORY,
    HITS_HELD,
    IN_SHOT,
    LAST_ACTIVITY,
    MOVED_FROM_T,
    MOVED_SEEN_T,
    STRUCK_UNKNOWN,
    Contacts,
    FusionState,
    Motion,
    Params,
    Shot,
    Stream,
    Tracker,
    X,
    Y,
)
from .tracker import carried, node_up, step_us, tracker_alive

BC_X, BC_Y = cols("BALL_CLICK", "x_mm", "y_mm")
CONTACT_TOLERANCE_MM = 3.0  # overlap beyond the tracker noise that proves a contact
CLICK_PAIR_GAP_MM = 20.0
CLICK_RADIUS_MM = 200.0  # acoustic position σ 30 mm, plus the pair's spread
ACOUSTIC_SIGMA_MM = 30.0
NEIGHBOUR_MM = 10.0  # a ball starting to move this close to a mover was hit by it
DEVIATION_MM = 1.5  # a contact turns a ball off its straight line by more than the tracker noise
TOUCHING_MM = 5.0  # two balls at rest this close may click when a third drives into them
CLICK_WAIT_US = 10_000  # a contact seen in the trajectories waits this long for its click
CLICK_REPEAT_US = MERGE_US  # two clicks of one pair further apart are two collisions
# a tracker frame may show the struck ball moving this long before the tip's stamp
CUE_GRACE_US = 3_000
CAUSE_US = 40_000  # a contact this recent explains a ball starting to move
# ICD §7 timing figures behind "a contact just after the frame caused the motion it shows":
# tracker exposure stamp σ 100 µs against the acoustic node's 30 µs (the mapping adds < 35 µs
# p99 in quadrature): ~110 µs combined; a contact stamped up to 4.5 σ after the first frame
# that shows a ball moving may have been exposed in it
CAUSE_SLACK_US = 500
# a click in the shot's first milliseconds waits this long at most for the struck ball: the
# frame after the one a 0.4 m/s stroke shows in, and with the timeline's ~35 ms still out
# within the 50 ms live bound
CLICK_HOLD_US = 12_000
# a moving ball this close (along its path) to a resting cluster is about to drive into it
CASCADE_REACH_MM = 30.0
CASCADE_STEPS = 128
# a played collision's time is as good as the struck ball's speed, taken from its frame
PLAY_SLACK_US = 300.0
PLAY_SLACK = 0.25


@njit(cache=True, inline="always")
def acoustic_up(stream: Stream) -> bool:
    """The acoustic node is present and not down: a click may still come to time a
    contact seen in the trajectories, so such a contact waits for it."""
    return node_up(stream, ACOUSTIC)


@njit(cache=True)
def contact_time(first_xy, second_xy, first_v, second_v, diameter, span):
    """When two centres moving straight from ``first_xy``, ``second_xy`` at ``first_v``,
    ``second_v`` (per µs) were one ``diameter`` apart, within [0, ``span``] µs of the frame
    they were there (never: ``span``, the later frame's time)."""
    s = time_at_distance(
        first_xy[X] - second_xy[X],
        first_xy[Y] - second_xy[Y],
        first_v[X] - second_v[X],
        first_v[Y] - second_v[Y],
        diameter,
    )
    if np.isnan(s):
        return span
    return min(max(s, 0.0), span)


@njit(cache=True)
def touched(contacts: Contacts, motion: Motion, hub_t, first, second) -> None:
    """Balls ``first`` and ``second`` touched at ``hub_t`` (a click, a trajectory contact):
    the start of their motion, and the cause of a ball_moved of either waiting since a frame
    stamped no more than the timing uncertainty (``CAUSE_SLACK_US``) before it -- a frame
    exposed the instant the ball was struck shows it moving, undisplaced, and its stamp may
    fall before the click."""
    touched_one(contacts, motion, first, hub_t)
    touched_one(contacts, motion, second, hub_t)


@njit(cache=True, inline="always")
def touched_one(contacts: Contacts, motion: Motion, ball, hub_t) -> None:
    """``ball`` (-1: none) touched at ``hub_t``: its last contact, and the cause of its
    ball_moved waiting since a frame up to ``CAUSE_SLACK_US`` before it (then not emitted)."""
    if 0 <= ball < BALLS:
        contacts.hit_t[ball] = max(contacts.hit_t[ball], hub_t)
        moved = motion.moved
        late = (
            moved[ball, MOVED_SEEN_T] >= 0 and hub_t <= moved[ball, MOVED_SEEN_T] + CAUSE_SLACK_US
        )
        if late and hub_t >= moved[ball, MOVED_FROM_T] - CAUSE_US:
            moved[ball, MOVED_SEEN_T] = -1


@njit(cache=True, inline="always")
def _write_contact(contacts: Contacts, motion: Motion, shot: Shot, out: Out, hub_t, first, second):
    """The contact of ``first`` and ``second`` at ``hub_t``: its event, the pair's and the
    balls' last contact, and activity (a shot without tracker ends after the last)."""
    emit(out, shot, hub_t, EV_BALL_CONTACT, first, second, 0, 0, 0, 0)
    contacts.pair_t[first, second] = hub_t
    touched(contacts, motion, hub_t, first, second)
    shot.state[LAST_ACTIVITY] = max(shot.state[LAST_ACTIVITY], hub_t)


@njit(cache=True)
def held_contact(contacts: Contacts, first, second, hub_t):
    """The held trajectory contact of the pair near ``hub_t``, or -1."""
    held = contacts.held_contacts
    for q in range(contacts.state[CONTACTS_HELD]):
        if (
            held[q, CONTACT_FIRST] == first
            and held[q, CONTACT_SECOND] == second
            and abs(held[q, CONTACT_T] - hub_t) <= CLICK_WAIT_US
        ):
            return q
    return -1


@njit(cache=True, inline="always")
def _forget_held(contacts: Contacts, row) -> None:
    """Held trajectory contact ``q`` is settled: the last one takes its row."""
    contacts.state[CONTACTS_HELD] -= 1
    contacts.held_contacts[row] = contacts.held_contacts[contacts.state[CONTACTS_HELD]]


@njit(cache=True)
def derive(stream, params: Params, contacts, motion, shot, out: Out, hub_t, first, second):
    """A contact seen in the trajectories at ``hub_t``: emitted now, or, with a live acoustic
    node, held ``CLICK_WAIT_US`` for the click that would time it exactly."""
    if hub_t - contacts.pair_t[first, second] <= params.contact_gap_us:
        return
    held = contacts.held_contacts
    if acoustic_up(stream):
        for q in range(contacts.state[CONTACTS_HELD]):
            if (
                held[q, CONTACT_FIRST] == first
                and held[q, CONTACT_SECOND] == second
                and abs(held[q, CONTACT_T] - hub_t) <= params.contact_gap_us
            ):
                return
        if contacts.state[CONTACTS_HELD] < held.shape[0]:
            q = contacts.state[CONTACTS_HELD]
            held[q, CONTACT_T], held[q, CONTACT_FIRST], held[q, CONTACT_SECOND] = (
                hub_t,
                first,
                second,
            )
            contacts.state[CONTACTS_HELD] = q + 1
            touched(contacts, motion, hub_t, first, second)
            return
        out.counters[HELD_FULL] += 1  # no room to wait for its click: out now, at its own time
    _write_contact(contacts, motion, shot, out, hub_t, first, second)


@njit(cache=True)
def release_derived(params: Params, contacts: Contacts, motion: Motion, shot: Shot, out: Out, now):
    """Held trajectory contacts whose click did not come: emitted at their own time, unless
    the pair touched lately (then a second collision would have clicked)."""
    held = contacts.held_contacts
    q = 0
    while q < contacts.state[CONTACTS_HELD]:
        if held[q, CONTACT_T] + CLICK_WAIT_US < now:
            hub_t, first, second = (
                held[q, CONTACT_T],
                held[q, CONTACT_FIRST],
                held[q, CONTACT_SECOND],
            )
            _forget_held(contacts, q)
            if hub_t - contacts.pair_t[first, second] > params.derived_gap_us:
                _write_contact(contacts, motion, shot, out, hub_t, first, second)
        else:
            q += 1


@njit(cache=True)
def contact(
    contacts: Contacts, motion: Motion, shot: Shot, cushions, out: Out, hub_t, first, second
):
    """The click at ``hub_t`` was this pair: if the trajectories saw it too, the click gives
    the time; a frozen ball's held cushion hit it caused follows it."""
    q = held_contact(contacts, first, second, hub_t)
    if q >= 0:
        _forget_held(contacts, q)
    _write_contact(contacts, motion, shot, out, hub_t, first, second)
    if cushions.state[HITS_HELD]:
        pushed_into_cushion(cushions, shot, out, hub_t, first, second)


@njit(cache=True)
def click(state: FusionState, out: Out, hub_t, click_x, click_y, tracked):
    """A BALL_CLICK at (``click_x``, ``click_y``) mm: the pair of balls one diameter apart
    nearest it, or none; without a live tracker, in a shot, a contact of unknown balls."""
    shot = state.shot
    if not tracked:
        if shot.state[IN_SHOT]:
            emit(out, shot, hub_t, EV_BALL_CONTACT, -1, -1, 0, 0, 0, 0)
            shot.state[LAST_ACTIVITY] = hub_t
        return
    positions = np.empty((BALLS, 2))
    on = np.zeros(BALLS, np.bool_)
    penalty = np.empty(BALLS)
    tracker, contacts = state.tracker, state.contacts
    carried(tracker, contacts.hit_t, shot, hub_t, positions, on, penalty)
    reach = np.zeros((BALLS, BALLS), np.bool_)
    known = cascade(state.table, tracker, contacts.hit_t, shot, positions, on, penalty, reach)
    first, second = _click_pair(
        contacts, state.table[G_D], positions, on, penalty, reach, known, hub_t, click_x, click_y
    )
    if first >= 0:
        contact(contacts, state.motion, shot, state.cushions, out, hub_t, first, second)


@njit(cache=True, inline="always")
def _click_pair(
    contacts: Contacts,
    diameter,
    positions,
    on_table,
    penalty,
    reach,
    known,
    hub_t,
    click_x,
    click_y,
):
    """The pair a click at (cx, cy) names: the cheapest of one diameter apart (resting
    pairs only touching, and reached by the impulse when that is ``known``), near the
    click, or a pair held from the trajectories or touched moments ago; (-1, -1): none."""
    xy = positions
    best_i, best_j, best_s = -1, -1, np.inf
    for i in range(BALLS):
        if not on_table[i]:
            continue
        for j in range(i + 1, BALLS):
            if not on_table[j] or hub_t - contacts.pair_t[i, j] <= CLICK_REPEAT_US:
                continue
            gap = abs(np.hypot(xy[i, X] - xy[j, X], xy[i, Y] - xy[j, Y]) - diameter)
            if penalty[i] > 0 and penalty[j] > 0:
                if gap > TOUCHING_MM or (known and not reach[i, j]):
                    continue  # two balls at rest click only if touching and the impulse reaches them
                gap += TOUCHING_MM
            far = np.hypot((xy[i, X] + xy[j, X]) / 2 - click_x, (xy[i, Y] + xy[j, Y]) / 2 - click_y)
            held = held_contact(contacts, i, j, hub_t) >= 0
            # a pair that touched moments ago may collide again (one of them back off a cushion,
            # seed 403): their carried positions still run on the velocities from before
            again = hub_t - contacts.pair_t[i, j] <= CAUSE_US
            if (gap < CLICK_PAIR_GAP_MM or held or again) and far < CLICK_RADIUS_MM:
                cost = (
                    min(gap, CLICK_PAIR_GAP_MM) + 0.2 * far - (CLICK_PAIR_GAP_MM if held else 0.0)
                )
                if cost < best_s:
                    best_i, best_j, best_s = i, j, cost
    return best_i, best_j


@njit(cache=True)
def cascade(table, tracker: Tracker, hit_t, shot: Shot, positions, on_table, penalty, reach):
    """Which resting pairs a moving ball driving into a cluster can set clicking, or none known.

    In a break every contact is within microseconds and the click's 30 mm
    error cannot tell neighbouring pairs apart; what can is the impulse:
    followed from the mover along the lines of centres of touching balls
    (equal masses, restitution ``E_BALL``), it reaches only the pairs that
    close on each other.  A touching pair it leaves parting (a row across a
    straight break, the far side of an off-centre one) exchanges nothing.
    ``reach[i, j]`` (i < j) marks the pairs; returns False when no mover drives
    into a resting ball (nothing known).
    """
    diameter = table[G_D]
    p = np.empty((BALLS, 2))
    v = np.zeros((BALLS, 2))
    moving = np.zeros(BALLS, np.bool_)
    _cascade_start(tracker, hit_t, shot, positions, on_table, penalty, p, v, moving)
    driving = _to_first_touch(diameter, on_table, p, v, moving)
    reach[:, :] = False
    if not driving:
        return False
    for _ in range(CASCADE_STEPS):
        hit = False
        for i in range(BALLS):
            if not moving[i] or not on_table[i]:
                continue
            for j in range(BALLS):
                if j == i or not on_table[j] or (moving[j] and j < i):
                    continue
                dx, dy = p[j, X] - p[i, X], p[j, Y] - p[i, Y]
                g = np.hypot(dx, dy)
                if g - diameter > TOUCH_MM or g <= 0.0:
                    continue
                if not collide(v, i, j, dx, dy, g):
                    continue
                moving[j] = True
                reach[min(i, j), max(i, j)] = True
                hit = True
                break
            if hit:
                break
        if not hit:
            break
    return True


@njit(cache=True, inline="always")
def _cascade_start(
    tracker: Tracker, hit_t, shot: Shot, positions, on_table, penalty, centres, velocities, moving
):
    """The cascade's start: resting balls at their rest average, movers at their carried
    place with the velocity of their last step (``centres``, ``velocities``, ``moving``)."""
    seen = tracker.state[FRAMES_SEEN]
    k = (seen - 1) % HISTORY
    q = (seen - 2) % HISTORY
    frame_t, frame_xy = tracker.frame_t, tracker.frame_xy
    for b in range(BALLS):
        centres[b, X], centres[b, Y] = positions[b, X], positions[b, Y]
        if penalty[b] > 0 and tracker.rest_frames[b] > 0:
            centres[b, X], centres[b, Y] = tracker.rest_xy[b, X], tracker.rest_xy[b, Y]
        elif (
            on_table[b]
            and penalty[b] == 0
            and seen >= 2
            and tracker.frame_on[q, b]
            and frame_t[k] > frame_t[q]
        ):
            velocities[b, X], velocities[b, Y] = step_velocity(
                frame_xy[q, b, X],
                frame_xy[q, b, Y],
                frame_xy[k, b, X],
                frame_xy[k, b, Y],
                step_us(tracker, hit_t, shot, k, q, b),
            )
            moving[b] = velocities[b, X] != 0.0 or velocities[b, Y] != 0.0


@njit(cache=True, inline="always")
def _to_first_touch(diameter, on_table, centres, velocities, moving) -> bool:
    """Each mover within ``CASCADE_REACH_MM`` of a resting ball, moved to where it first
    touches one (carried positions overshoot); True if any was."""
    driving = False
    for i in range(BALLS):
        vv = velocities[i, X] * velocities[i, X] + velocities[i, Y] * velocities[i, Y]
        if not moving[i] or vv <= 0.0:
            continue
        best = np.inf
        for j in range(BALLS):
            if j == i or not on_table[j] or moving[j]:
                continue
            s = time_at_distance(
                centres[i, X] - centres[j, X],
                centres[i, Y] - centres[j, Y],
                velocities[i, X],
                velocities[i, Y],
                diameter,
            )
            if np.isnan(s):
                continue
            if abs(s) * np.sqrt(vv) <= CASCADE_REACH_MM and s < best:
                best = s
        if best < np.inf:
            centres[i, X], centres[i, Y] = carry(
                centres[i, X], centres[i, Y], velocities[i, X], velocities[i, Y], best
            )
            driving = True
    return driving


@njit(cache=True)
def judge_held_clicks(state: FusionState, out: Out, struck, tracked, count):
    """The first ``count`` held clicks, now the struck ball is known (-1: none, or never).

    Each goes to the collision nearest it in time and place of the cluster
    played from the struck ball when :func:`.struck.struck` chose it (a
    frozen cluster struck by the tip: no ball moved before, so nothing else
    tells which of its touching pairs clicked); one that matches none is
    judged as any click.
    """
    contacts = state.contacts
    played = contacts.state[COLLISIONS_PLAYED] if struck >= 0 and tracked else 0
    contacts.state[COLLISIONS_PLAYED] = 0
    pair = _match_clicks(contacts, state.shot.state[CUE_T], count, played)
    held = contacts.held_clicks
    for h in range(count):
        hub_t, x, y = held[h, CLICK_T], held[h, CLICK_X], held[h, CLICK_Y]
        if pair[h] >= 0:
            first = int(contacts.played[pair[h], PLAY_FIRST])
            second = int(contacts.played[pair[h], PLAY_SECOND])
            contact(contacts, state.motion, state.shot, state.cushions, out, hub_t, first, second)
        else:
            click(state, out, hub_t, x, y, tracked)
    left = contacts.state[CLICKS_HELD] - count
    for h in range(left):
        held[h] = held[count + h]
    contacts.state[CLICKS_HELD] = left


@njit(cache=True, inline="always")
def _match_clicks(contacts: Contacts, cue_t, count, played):
    """The first ``count`` held clicks matched one to one to the ``played`` collisions,
    cheapest first (a click's place is ±30 mm, its time µs-exact, a played collision's time
    as good as the stroke fitted): each click's collision, or -1."""
    collisions = contacts.played
    held = contacts.held_clicks
    cost = np.full((count, max(played, 1)), np.inf)
    for h in range(count):
        for q in range(played):
            slack = PLAY_SLACK_US + PLAY_SLACK * collisions[q, PLAY_US]
            late = abs(held[h, CLICK_T] - cue_t - collisions[q, PLAY_US])
            far = np.hypot(
                collisions[q, PLAY_X] - held[h, CLICK_X], collisions[q, PLAY_Y] - held[h, CLICK_Y]
            )
            if far <= CLICK_RADIUS_MM and late <= 3 * slack:
                cost[h, q] = far / ACOUSTIC_SIGMA_MM + late / slack
    pair = np.full(count, -1)
    for _ in range(min(count, played)):
        h, q = divmod(np.argmin(cost), cost.shape[1])
        if cost[h, q] == np.inf:
            break
        pair[h] = q
        cost[h, :] = np.inf
        cost[:, q] = np.inf
    return pair


@njit(cache=True)
def release_held(state: FusionState, out: Out, now):
    """Held clicks nobody will claim: between shots, those no tip contact can take any more
    (judged at their own time); in a shot, all, once the struck ball was awaited too long."""
    tracked = tracker_alive(state.stream, state.tracker)
    contacts = state.contacts
    held = contacts.held_clicks
    if state.shot.state[IN_SHOT]:
        if held[0, CLICK_T] + CLICK_HOLD_US < now:
            judge_held_clicks(state, out, NO_BALL, tracked, contacts.state[CLICKS_HELD])
        return
    old = 0
    while old < contacts.state[CLICKS_HELD] and held[old, CLICK_T] + CUE_GRACE_US < now:
        old += 1
    if old:
        judge_held_clicks(state, out, NO_BALL, tracked, old)


@njit(cache=True)
def ball_click(state: FusionState, out: Out, row, tracked):
    """A BALL_CLICK row: judged at once in a shot whose struck ball is known (:func:`click`).

    Otherwise held (``held_clicks``): the struck ball is not known yet, or, between shots,
    a tip contact stamped just after may own it (a cue ball frozen to others: a cluster
    struck).  A click finding no room to wait is counted and judged at once.
    """
    hub_t, x, y = row[C_HUB], row[BC_X], row[BC_Y]
    shot, contacts = state.shot, state.contacts
    if shot.state[IN_SHOT] and not shot.state[STRUCK_UNKNOWN]:
        click(state, out, hub_t, x, y, tracked)
        return
    h = contacts.state[CLICKS_HELD]
    if h < HELD_CLICKS:
        held = contacts.held_clicks
        held[h, CLICK_T], held[h, CLICK_X], held[h, CLICK_Y] = hub_t, x, y
        contacts.state[CLICKS_HELD] = h + 1
        return
    out.counters[HELD_FULL] += 1  # none can wait: judged at once
    click(state, out, hub_t, x, y, tracked)


@njit(cache=True, inline="always")
def trajectory_contacts(state: FusionState, out: Out, newest, before, span):
    """Contacts seen in the trajectories between frames ``before`` and ``newest`` (``span``
    µs apart).

    Two balls, either moving in ``before``, whose straight-line motion at the velocities of
    the step before (``tracker.velocity``) would overlap in ``newest`` by more than
    ``CONTACT_TOLERANCE_MM``, that did not overlap in ``before`` already (seen then, or a
    tracker merge), and of which one turned off its line by ``DEVIATION_MM`` (two balls
    rolling in touch do not): a contact at the time their centres were one diameter apart
    (:func:`derive`).
    """
    tracker = state.tracker
    diameter = state.table[G_D]
    xy, on, mv, vel = tracker.frame_xy, tracker.frame_on, tracker.frame_moving, tracker.velocity
    k, p = newest, before
    near = diameter - CONTACT_TOLERANCE_MM
    for i in range(BALLS):
        if not (on[k, i] and on[p, i]):
            continue
        for j in range(i + 1, BALLS):
            if not (on[k, j] and on[p, j]) or not (mv[p, i] or mv[p, j]):
                continue
            # predicted from the last velocities: would they overlap now?
            pix, piy = carry(xy[p, i, X], xy[p, i, Y], vel[i, X], vel[i, Y], span)
            pjx, pjy = carry(xy[p, j, X], xy[p, j, Y], vel[j, X], vel[j, Y], span)
            # hypot is never below either leg: a pair apart along x or y is apart (a cheap
            # test first, as most pairs are; the same decision as hypot's alone)
            dx, dy = pix - pjx, piy - pjy
            if abs(dx) >= near or abs(dy) >= near or np.hypot(dx, dy) >= near:
                continue
            if np.hypot(xy[p, i, X] - xy[p, j, X], xy[p, i, Y] - xy[p, j, Y]) < (
                diameter - CONTACT_TOLERANCE_MM
            ):
                continue  # already overlapping in the last frame: seen then, or a tracker merge
            dev = max(
                np.hypot(xy[k, i, X] - pix, xy[k, i, Y] - piy),
                np.hypot(xy[k, j, X] - pjx, xy[k, j, Y] - pjy),
            )
            if dev < DEVIATION_MM:
                continue
            s = contact_time(xy[p, i], xy[p, j], vel[i], vel[j], diameter, span)
            derive(
                state.stream,
                state.params,
                state.contacts,
                state.motion,
                state.shot,
                out,
                tracker.frame_t[p] + np.int64(s),
                i,
                j,
            )
