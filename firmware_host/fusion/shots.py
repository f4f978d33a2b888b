"""Shots: a tip contact starts one, the table standing still ends it.

* A tip contact starts a shot (:func:`new_shot`); its shot_start waits for
  the struck ball (:mod:`.struck`) and carries the layout from the tip
  contact's time.  A second tip contact within ``double_hit_us`` of the
  first is part of the same stroke (item 18); a later one while balls still
  move ends the shot as ``interrupted`` (14.2) and starts the next
  (:func:`cue_contact`).
* A shot ends when every ball is still (spinning counts as moving) for
  ``still_frames`` frames, at the first still frame (:func:`still_table`);
  without a live tracker, ``quiet_us`` after the last sensor activity,
  ``certain: false`` (:func:`quiet_end`).  Its shot_end carries the layout
  and each moved ball's path.
* Outside a shot, balls moved by hand come to **rest** after
  ``rest_frames`` still frames: a rest event with the layout.
"""

from __future__ import annotations

from numba import njit

from firmware_host.timing.rows import C_HUB, cols

from .contacts import CUE_GRACE_US, judge_held_clicks
from .lines import judge_lines
from .records import (
    EV_CUE_CONTACT,
    EV_REST,
    EV_SHOT_END,
    EV_SHOT_START,
    FLAG_CERTAIN,
    FLAG_INTERRUPTED,
    NO_BALL,
    NO_FLAGS,
    O_FLAGS,
    SHOT_FRAMES_DROPPED,
    TRACKED,
    UNTRACKED,
    Out,
    emit,
    take_layout,
    write_layout,
    write_paths,
)
from .soft_touches import arm_all_but_frozen, stop_watching
from .state import (
    BALLS,
    CLICK_T,
    CLICKS_HELD,
    CUE_DURATION,
    CUE_T,
    FIRST_CUE_T,
    FRAMES_KEPT,
    FRAMES_SEEN,
    HISTORY,
    IN_SHOT,
    LAST_ACTIVITY,
    LAYOUT_CHANGED,
    LINES_HELD,
    MOVED_SEEN_T,
    SHOT_FRAMES,
    SHOT_NUMBER,
    SOMETHING_MOVED,
    STILL_RUN,
    STILL_T,
    STRUCK_UNKNOWN,
    FusionState,
    Shot,
    Tracker,
    X,
    Y,
)
from .struck import struck
from .tracker import tracker_alive

CUE_DUR, CUE_FORCE = cols("CUE_CONTACT", "duration_us", "peak_force_dn")


@njit(cache=True)
def cue_contact(state: FusionState, out: Out, row, tracked):
    """A CUE_CONTACT row: the tip struck; then its cue_contact event.

    Within ``double_hit_us`` of the shot's first tip contact it is the same stroke (item
    18).  Otherwise held curtain reports are settled with what is known (their balls are
    struck again), a shot still running ends ``interrupted`` (14.2; its struck ball never
    known: none), and a new shot starts (:func:`new_shot`).
    """
    hub_t = row[C_HUB]
    shot = state.shot
    first_cue_t = shot.state[FIRST_CUE_T]
    same_stroke = shot.state[IN_SHOT] and hub_t - first_cue_t <= state.params.double_hit_us
    if not same_stroke:
        if state.lines.state[LINES_HELD]:
            judge_lines(state.table, state.tracker, shot, state.lines, out, True)
        if shot.state[IN_SHOT]:
            if shot.state[STRUCK_UNKNOWN]:
                start_shot_event(state, out, NO_BALL, tracked)
            flags = FLAG_CERTAIN | FLAG_INTERRUPTED if tracked else NO_FLAGS
            end_shot(state.table, state.tracker, shot, out, hub_t, flags, tracked)
        new_shot(state, out, hub_t, row[CUE_DUR], tracked)
    emit(out, shot, hub_t, EV_CUE_CONTACT, -1, row[CUE_DUR], row[CUE_FORCE], 0, 0, 0)
    shot.state[LAST_ACTIVITY] = hub_t


@njit(cache=True)
def new_shot(state: FusionState, out: Out, hub_t, duration, tracked):
    """A new shot from a tip contact at ``hub_t`` that lasted ``duration`` µs.

    Clicks held in the last ``CUE_GRACE_US`` are the sensors' jitter around the tip
    contact: part of the shot, from its start.  With the tracker alive, the layout before
    the shot is kept until the struck ball is known (``layout_before``), every cushion a
    ball does not rest against is armed for soft touches, a frame may already show the
    struck ball (up to ``CUE_GRACE_US`` before the stamp), and the last frame is the
    shot's first (for paths).  Without it the shot starts at once, struck ball unknown.
    """
    shot, tracker = state.shot, state.tracker
    shot.state[SHOT_NUMBER] += 1
    shot.state[IN_SHOT] = 1
    shot.state[FIRST_CUE_T] = hub_t
    shot.state[CUE_T] = hub_t
    shot.state[CUE_DURATION] = duration
    state.contacts.held_clicks[: state.contacts.state[CLICKS_HELD], CLICK_T] = hub_t
    shot.state[SOMETHING_MOVED] = 0
    shot.state[STILL_RUN] = 0
    shot.state[FRAMES_KEPT] = 0
    stop_watching(state.cushions, True)
    if not tracked:
        start_shot_event(state, out, NO_BALL, UNTRACKED)
        return
    write_layout(tracker, state.table, shot.layout_before, shot.frozen_before, 0, hub_t)
    shot.state[STRUCK_UNKNOWN] = 1
    arm_all_but_frozen(
        state.table, state.cushions, shot.frozen_before[0], shot.layout_before[0], tracker
    )
    early = struck(state, out, hub_t - CUE_GRACE_US)
    if early >= 0:
        state.motion.moved[early, MOVED_SEEN_T] = -1
        start_shot_event(state, out, early, TRACKED)
    newest = (tracker.state[FRAMES_SEEN] - 1) % HISTORY
    shot.frame_t[0] = tracker.frame_t[newest]
    for b in range(BALLS):
        shot.frame_xy[0, b, X] = tracker.frame_xy[newest, b, X]
        shot.frame_xy[0, b, Y] = tracker.frame_xy[newest, b, Y]
        shot.frame_on[0, b] = tracker.frame_on[newest, b]
        shot.frame_moving[0, b] = 0
    shot.state[FRAMES_KEPT] = 1


@njit(cache=True)
def start_shot_event(state: FusionState, out: Out, ball, with_tracker):
    """The struck ball is decided (``ball``, -1: not known): the shot_start event, at the
    tip contact's time with the layout kept from then (``layout_before``); the clicks held
    for this decision are judged now that the struck ball is known."""
    shot = state.shot
    at = emit(out, shot, shot.state[CUE_T], EV_SHOT_START, ball, 0, 0, 0, 0, 0)
    if at >= 0 and with_tracker:
        layout = take_layout(out, at)
        if layout >= 0:
            out.layouts[layout] = shot.layout_before[0]
            out.frozen[layout] = shot.frozen_before[0]
    if ball >= 0:
        state.contacts.hit_t[ball] = shot.state[CUE_T]
    if state.contacts.state[CLICKS_HELD]:
        judge_held_clicks(state, out, ball, with_tracker, state.contacts.state[CLICKS_HELD])
    shot.state[STRUCK_UNKNOWN] = 0


@njit(cache=True)
def end_shot(table, tracker: Tracker, shot: Shot, out: Out, hub_t, flags, with_tracker):
    """The shot ends at ``hub_t``: a shot_end event with ``flags`` and, with the tracker,
    the layout then and each moved ball's path (a full ``out.layouts`` is counted, and then
    no paths are written); the shot's state is cleared."""
    at = emit(out, shot, hub_t, EV_SHOT_END, NO_BALL, 0, 0, 0, 0, 0)
    if at >= 0:
        out.events[at, O_FLAGS] = flags
        if with_tracker:
            layout = take_layout(out, at)
            if layout >= 0:
                write_layout(tracker, table, out.layouts, out.frozen, layout, hub_t)
                write_paths(out, shot, at)
    shot.state[IN_SHOT] = 0
    shot.state[STRUCK_UNKNOWN] = 0
    shot.state[LAYOUT_CHANGED] = 0
    shot.state[FRAMES_KEPT] = 0


@njit(cache=True, inline="always")
def still_table(state: FusionState, out: Out, hub_t, any_moving) -> None:
    """The still-table check after a frame at ``hub_t``.

    Every ball still (spinning counts as moving) for ``still_frames`` frames ends the shot,
    at the first still frame, once its struck ball is decided and something moved; outside
    a shot, ``rest_frames`` of them after a change (``LAYOUT_CHANGED``) are a rest event
    with the layout.  A frame with motion, or a layout change (``STILL_RUN`` -1), starts
    the count again.
    """
    shot = state.shot
    if any_moving or shot.state[STILL_RUN] < 0:
        shot.state[STILL_RUN] = 0
        return
    if shot.state[STILL_RUN] == 0:
        shot.state[STILL_T] = hub_t
    shot.state[STILL_RUN] += 1
    if shot.state[IN_SHOT] and shot.state[STILL_RUN] >= state.params.still_frames:
        if not shot.state[STRUCK_UNKNOWN] and shot.state[SOMETHING_MOVED]:
            still_t = shot.state[STILL_T]
            end_shot(state.table, state.tracker, shot, out, still_t, FLAG_CERTAIN, TRACKED)
    elif (
        not shot.state[IN_SHOT]
        and shot.state[STILL_RUN] >= state.params.rest_frames
        and shot.state[LAYOUT_CHANGED]
    ):
        at = emit(out, shot, shot.state[STILL_T], EV_REST, NO_BALL, 0, 0, 0, 0, 0)
        if at >= 0:
            layout = take_layout(out, at)
            if layout >= 0:
                write_layout(state.tracker, state.table, out.layouts, out.frozen, layout, hub_t)
        shot.state[LAYOUT_CHANGED] = 0


@njit(cache=True)
def quiet_end(state: FusionState, out: Out, upto):
    """No live tracker: a shot ends ``quiet_us`` after the last sensor activity (uncertain),
    once ``upto`` has passed it."""
    shot = state.shot
    if shot.state[IN_SHOT] and not tracker_alive(state.stream, state.tracker):
        deadline = shot.state[LAST_ACTIVITY] + state.params.quiet_us
        if deadline <= upto:
            if shot.state[STRUCK_UNKNOWN]:
                start_shot_event(state, out, NO_BALL, UNTRACKED)
            end_shot(state.table, state.tracker, shot, out, deadline, NO_FLAGS, UNTRACKED)


@njit(cache=True, inline="always")
def keep_shot_frame(tracker: Tracker, shot: Shot, out: Out, newest, hub_t) -> None:
    """Tracker frame ``newest`` (at ``hub_t``) kept as the shot's next (``frame_*``) for its
    balls' paths; beyond ``SHOT_FRAMES`` a frame is counted (``SHOT_FRAMES_DROPPED``): the
    paths end there."""
    i = shot.state[FRAMES_KEPT]
    if i >= SHOT_FRAMES:
        out.counters[SHOT_FRAMES_DROPPED] += 1
        return
    shot.frame_t[i] = hub_t
    for b in range(BALLS):
        shot.frame_xy[i, b, X] = tracker.frame_xy[newest, b, X]
        shot.frame_xy[i, b, Y] = tracker.frame_xy[newest, b, Y]
        shot.frame_on[i, b] = tracker.frame_on[newest, b]
        shot.frame_moving[i, b] = tracker.frame_moving[newest, b]
    shot.state[FRAMES_KEPT] = i + 1
