"""Cushion hits from the rails: the ring-down, the ball it was, a frozen ball pushed in.

* **Ring-down** (:func:`ring_down`): ICD §7 rails: one impact may retrigger
  on its cushion within 4 ms at under 40 % of its amplitude
  (``debounce_ratio_pct``); both stamps jitter (σ 50 µs), so the window
  (``debounce_us``) is 4 ms plus 4σ√2 of their difference, 4.28 ms.  That is one impact ringing at one
  place: a hit more than half a ball from an accepted one (two balls at one
  cushion are a diameter apart), or one the tracker puts on another ball at
  the cushion, is a new hit even within those bounds.
* **Attribution**: the ball carried nearest the contact point
  (:mod:`.tracker`); the rails reporting a touch also close that ball's
  watch for a touch too soft for them (:mod:`.soft_touches`).
* **Frozen hits**: a ball resting against the cushion it hits was pushed
  in by a contact; the hit waits ``FROZEN_PUSH_US`` for that contact (its
  click may be stamped a little later) and is written at the contact's
  time, after it, or at its own time if none comes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from firmware_host.timing.rows import C_HUB, cols

from .geometry import G_D, G_L, G_W, cushion_contact, frozen_mask, nearest_ball
from .records import CUSHION_HITS_FORGOTTEN, EV_CUSHION, NO_BALL, O_SHOT, Out, emit
from .state import (
    BALLS,
    CUSHION_MEMORY,
    HELD_HIT_CUSHION,
    HELD_HIT_SHOT,
    HELD_HIT_T,
    HIT_AMPLITUDE,
    HIT_BALL,
    HIT_POS,
    HIT_T,
    HITS_HELD,
    IN_SHOT,
    LAST_ACTIVITY,
    SHOT_NUMBER,
    WATCH_ARMED,
    WATCH_CUSHION,
    Cushions,
    Params,
    Shot,
    Tracker,
    X,
    Y,
)
from .tracker import ATTRIBUTION_LIMIT_MM, carried

CH_CUSHION, CH_POS, CH_AMP = cols("CUSHION_HIT", "cushion", "pos_mm", "amplitude")
# a cushion hit of a ball resting against that cushion is that ball pushed into it by a
# contact: a contact stamped up to this much later caused it (rails σ 50 µs, acoustic σ 30 µs,
# mapping < 35 µs p99: ~70 µs combined; 500 µs is 7 σ), so the hit is written at the
# contact's time, after it
FROZEN_PUSH_US = 500


@njit(cache=True)
def cushion_hit(
    params: Params, table, tracker: Tracker, hit_t, shot: Shot, cushions, out, row, tracked
):
    """A CUSHION_HIT row: a new impact (emitted and remembered), or one ringing.

    ``pos_mm`` beyond the piece is no position.  A new impact of a ball
    resting against that cushion is held for the contact that pushed it in.
    """
    hub_t, cushion, pos, amplitude = row[C_HUB], row[CH_CUSHION], row[CH_POS], row[CH_AMP]
    if not 0 <= cushion < 6:
        return
    extent = table[G_W] if cushion == 0 or cushion == 3 else table[G_L]
    given = pos <= extent
    ball, at_cushion = NO_BALL, False
    if tracked:
        ball, at_cushion = _attribute(
            table, tracker, hit_t, shot, cushions, hub_t, cushion, float(pos), given
        )
    hits = cushions.hits[cushion]
    slot = ring_down(params, hits, hub_t, pos, amplitude, given, ball, at_cushion, table[G_D])
    if slot < 0:
        return  # that impact ringing
    if hub_t - hits[slot, HIT_T] <= params.debounce_us:
        out.counters[CUSHION_HITS_FORGOTTEN] += 1  # more hits on one cushion within 4 ms than balls
    hits[slot, HIT_T], hits[slot, HIT_AMPLITUDE] = hub_t, amplitude
    hits[slot, HIT_POS], hits[slot, HIT_BALL] = pos if given else -1, ball
    shot.state[LAST_ACTIVITY] = hub_t
    if (
        tracked
        and ball >= 0
        and tracker.carried_penalty[ball] > 0
        and tracker.rest_frames[ball] > 0
        and (frozen_mask(table, tracker.rest_xy[ball, X], tracker.rest_xy[ball, Y]) >> cushion) & 1
    ):
        _hold_frozen_hit(cushions, shot, out, ball, hub_t, cushion)
        return
    emit(out, shot, hub_t, EV_CUSHION, ball, cushion, 0, 0, 0, 0)


@njit(cache=True, inline="always")
def ring_down(params: Params, hits, hub_t, pos, amplitude, given, ball, at_cushion, diameter):
    """The ring-down test against the cushion's accepted ``hits``: -1 if this hit is one of
    them ringing (within ``debounce_us``, under ``debounce_ratio_pct`` of its amplitude, at
    its place, and not another ball at the cushion), else the slot a new hit takes (the
    oldest)."""
    oldest = 0
    for h in range(CUSHION_MEMORY):
        if hits[h, HIT_T] < hits[oldest, HIT_T]:
            oldest = h
        if hub_t - hits[h, HIT_T] > params.debounce_us:
            continue
        if amplitude * 100 >= hits[h, HIT_AMPLITUDE] * params.debounce_ratio_pct:
            continue
        if given and hits[h, HIT_POS] >= 0 and abs(pos - hits[h, HIT_POS]) > diameter / 2:
            continue  # another place
        if at_cushion and hits[h, HIT_BALL] >= 0 and ball != hits[h, HIT_BALL]:
            continue  # another ball, at the cushion
        return -1
    return oldest


@njit(cache=True, inline="always")
def _attribute(table, tracker: Tracker, hit_t, shot: Shot, cushions, hub_t, cushion, pos, given):
    """The ball carried nearest the hit's contact point, and whether it is at the cushion.

    The rails reported this touch: the ball it is given to, or any ball at its place, is not
    watched for it (:mod:`.soft_touches`) and must leave the cushion to be watched again.
    """
    xy, on, penalty = tracker.carried_xy, tracker.carried_on, tracker.carried_penalty
    radius = table[G_D] / 2
    cx, cy = cushion_contact(table, cushion, pos)
    carried(tracker, hit_t, shot, hub_t, xy, on, penalty)
    ball = nearest_ball(xy, on, penalty, cx, cy, ATTRIBUTION_LIMIT_MM)
    at_cushion = False
    if ball >= 0:
        at_cushion = np.hypot(xy[ball, X] - cx, xy[ball, Y] - cy) <= radius
    watch = cushions.watch
    for o in range(BALLS):
        here = given and on[o] and np.hypot(xy[o, X] - cx, xy[o, Y] - cy) <= radius
        if o == ball or here:
            watch[o, WATCH_ARMED] &= ~(np.int64(1) << cushion)
            if watch[o, WATCH_CUSHION] == cushion:
                watch[o, WATCH_CUSHION] = -1
    return ball, at_cushion


@njit(cache=True, inline="always")
def _hold_frozen_hit(cushions: Cushions, shot: Shot, out: Out, ball, hub_t, cushion) -> None:
    """A ball resting against this cushion hits it only when a contact drives it in: the hit
    is held for that contact, whose click may be stamped a little later (sensor jitter)."""
    held = cushions.held_hits
    if held[ball, HELD_HIT_T] >= 0:
        write_frozen_hit(cushions, shot, out, ball, held[ball, HELD_HIT_T])
    held[ball, HELD_HIT_T], held[ball, HELD_HIT_CUSHION] = hub_t, cushion
    held[ball, HELD_HIT_SHOT] = shot.state[SHOT_NUMBER] if shot.state[IN_SHOT] else -1
    cushions.state[HITS_HELD] += 1


@njit(cache=True)
def write_frozen_hit(cushions: Cushions, shot: Shot, out: Out, ball, hub_t) -> None:
    """``ball``'s held cushion hit, written at ``hub_t`` (its own, or its contact's), in the
    shot it was held in."""
    held = cushions.held_hits
    at = emit(out, shot, hub_t, EV_CUSHION, ball, held[ball, HELD_HIT_CUSHION], 0, 0, 0, 0)
    if at >= 0:
        out.events[at, O_SHOT] = held[ball, HELD_HIT_SHOT]
    held[ball, HELD_HIT_T] = -1
    cushions.state[HITS_HELD] -= 1


@njit(cache=True)
def pushed_into_cushion(cushions: Cushions, shot: Shot, out: Out, hub_t, first, second) -> None:
    """A contact of balls ``first`` and ``second`` at ``hub_t``: a held cushion hit of either,
    stamped up to ``FROZEN_PUSH_US`` before it, was that contact pushing the ball into its
    cushion: it is written at the contact's time, so after it (the contact's type sorts first)."""
    held = cushions.held_hits
    for b in (first, second):
        if (
            0 <= b < BALLS
            and held[b, HELD_HIT_T] >= 0
            and 0 <= hub_t - held[b, HELD_HIT_T] <= FROZEN_PUSH_US
        ):
            write_frozen_hit(cushions, shot, out, b, hub_t)


@njit(cache=True)
def release_frozen(cushions: Cushions, shot: Shot, out: Out, now) -> None:
    """Held cushion hits of frozen balls whose contact did not come: at their own time."""
    held = cushions.held_hits
    for b in range(BALLS):
        if held[b, HELD_HIT_T] >= 0 and held[b, HELD_HIT_T] + FROZEN_PUSH_US < now:
            write_frozen_hit(cushions, shot, out, b, held[b, HELD_HIT_T])
