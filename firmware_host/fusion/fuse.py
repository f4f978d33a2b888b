"""The fusion's driver: hub-ordered rows in, event records out, one step per row type.

:func:`fuse` walks the rows the timeline released (hub-time order), as
``rules.referee.Referee.feed`` walks events: before each row the timers
that are armed fire at its hub time (held contacts and clicks, ball_moved
candidates, frozen balls' cushion hits, the quiet end of a shot without
tracker); then the row goes to the step for its type:

===============  ====================================================
BALL_TRACK       :func:`track_frame` (motion, contacts, shots' ends, soft touches)
CUSHION_HIT      :func:`.cushions.cushion_hit` (ring-down, frozen hits)
POCKET_DROP      :func:`pocket_drop`
LINE_CROSS       :func:`.lines.line_cross`
BALL_CLICK       :func:`.contacts.ball_click`
CUE_CONTACT      :func:`.shots.cue_contact`
KEYPAD           a keypad event
NODE_STATUS      :func:`node_status` (and the timeline's NODE_SILENT / NODE_BACK,
                 the rate limit's NODE_FLOODED / NODE_CALM)
HELLO            :func:`hello` (the hub booted)
===============  ====================================================

Events come out in emission order, each with its hub time; some carry a
time in the recent past (a derived contact between two frames), so the
caller re-sorts them and releases only those before the ``safe`` time
:func:`fuse` returns (:func:`safe_time`: the earliest a later emission
could still carry).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from firmware_host.timing.rows import (
    C_HUB,
    C_TRACK,
    C_TYPE,
    CLOCK_STEP,
    NODE_BACK,
    NODE_CALM,
    NODE_FLOODED,
    NODE_SILENT,
    P0,
    RELEASED_TYPES,
    col,
    cols,
    type_of,
)

from .contacts import ball_click, release_derived, release_held
from .cushions import cushion_hit, release_frozen, write_frozen_hit
from .geometry import G_D, G_L, G_W, nearest_ball, pocket_xy
from .lines import judge_lines, line_cross, line_sides
from .motion import frame_motion, release_moved
from .records import (
    EV_BOOT,
    EV_KEYPAD,
    EV_NODE_STATUS,
    EV_POCKET,
    NO_BALL,
    NO_FLAGS,
    STATUS_FLOOD,
    STATUS_FROM_HUB,
    STATUS_SILENT,
    TRACKED,
    UNTRACKED,
    Out,
    emit,
)
from .shots import cue_contact, end_shot, keep_shot_frame, quiet_end, start_shot_event, still_table
from .soft_touches import soft_touches, stop_watching, watching
from .state import (
    BALLS,
    CLICK_T,
    CLICKS_HELD,
    CONTACT_T,
    CONTACTS_HELD,
    CUE_T,
    FRAMES_SEEN,
    HELD_HIT_T,
    HELD_LINE_T,
    HISTORY,
    HITS_HELD,
    IN_SHOT,
    LAST_ACTIVITY,
    LAYOUT_CHANGED,
    LINES_HELD,
    MOVED_FROM_T,
    MOVED_SEEN_T,
    MOVED_WAITING,
    NODES_DOWN,
    NODES_FLOODED,
    NODES_PRESENT,
    NOW,
    RING_SEEN,
    SOMETHING_MOVED,
    STILL_RUN,
    STILL_T,
    STRUCK_UNKNOWN,
    TRACKER,
    WATCH_CUSHION,
    WATCH_SINCE,
    FusionState,
)
from .tracker import (
    ATTRIBUTION_LIMIT_MM,
    alive,
    any_moving,
    average_rest,
    carried,
    layout_changed,
    record_frame,
    tracker_alive,
    tracker_up,
)

# the rows the timeline releases, in RELEASED_TYPES' order
T_HELLO, T_NODE_STATUS, T_CUE, T_CUSHION, T_POCKET, T_TRACK, T_LINE, T_CLICK, T_KEYPAD = (
    type_of(n) for n in RELEASED_TYPES
)
H_BOOT, H_PRESENT, H_LEN, H_WID, H_BALL = cols(
    "HELLO", "boot_id", "nodes_present", "table_length_mm", "table_width_mm", "ball_diameter_um"
)
S_PEER, S_CODE = cols("NODE_STATUS", "peer", "code")
PD_POCKET, PD_COLOUR = cols("POCKET_DROP", "pocket", "colour")
KP_KEY, KP_ARG = cols("KEYPAD", "key", "arg")
BT_COUNT = col("BALL_TRACK", "count")


@njit(cache=True)
def fuse(state: FusionState, store, synthetic, index, tracks, upto, out: Out):
    """Rows in hub order -> event records in ``out``; returns the safe time.

    The rows are ``store[index[i]]`` (``synthetic[index[i] - len(store)]``
    past the store): the timeline's release order, without copying rows;
    ``tracks`` holds the BALL_TRACK rows' ball lists.  At ``upto`` (the hub
    time the timeline released up to) the timers fire once more and the safe
    time is taken (:func:`safe_time`).
    """
    n_store = len(store)
    for i in range(len(index)):
        r = index[i]
        row = store[r] if r < n_store else synthetic[r - n_store]
        hub_t = row[C_HUB]
        mtype = row[C_TYPE]
        # the timers cannot change whether the tracker is alive: taken once, before them
        tracked = alive(state.stream.state, state.tracker.state)
        if (
            (state.shot.state[IN_SHOT] and not tracked)
            or state.contacts.state[CONTACTS_HELD]
            or state.motion.state[MOVED_WAITING]
            or state.contacts.state[CLICKS_HELD]
            or state.cushions.state[HITS_HELD]
        ):
            _armed_timers(state, out, hub_t, tracked)
        state.stream.state[NOW] = max(state.stream.state[NOW], hub_t)
        if mtype == T_TRACK:
            if tracker_up(state.stream):
                track_frame(state, out, row, tracks)
        elif mtype == T_CUSHION:
            cushion_hit(
                state.params,
                state.table,
                state.tracker,
                state.contacts.hit_t,
                state.shot,
                state.cushions,
                out,
                row,
                tracked,
            )
        elif mtype == T_POCKET:
            pocket_drop(state, out, row, tracked)
        elif mtype == T_LINE:
            line_cross(state, out, row, tracked)
        elif mtype == T_CLICK:
            ball_click(state, out, row, tracked)
        elif mtype == T_CUE:
            cue_contact(state, out, row, tracked)
        elif mtype == T_KEYPAD:
            emit(out, state.shot, hub_t, EV_KEYPAD, -1, row[KP_KEY], row[KP_ARG], 0, 0, 0)
        elif mtype == T_NODE_STATUS or NODE_SILENT <= mtype <= NODE_CALM and mtype != CLOCK_STEP:
            node_status(state, out, row, mtype)  # the hub's, the timeline's, the rate limit's
        elif mtype == T_HELLO:
            hello(state, out, row, tracked)
    quiet_end(state, out, upto)
    release_derived(state.params, state.contacts, state.motion, state.shot, out, upto)
    release_moved(state.shot, state.motion, out, upto)
    if state.contacts.state[CLICKS_HELD]:
        release_held(state, out, upto)
    if state.cushions.state[HITS_HELD]:
        release_frozen(state.cushions, state.shot, out, upto)
    state.stream.state[NOW] = max(state.stream.state[NOW], upto)
    return safe_time(state)


@njit(cache=True)
def _armed_timers(state: FusionState, out: Out, now, tracked) -> None:
    """The timers armed before a row at hub time ``now`` fire; each is called only when
    armed.  :func:`fuse` calls this only when one is: a step given the state counts a
    reference to each of its forty arrays as it starts and ends: done for every row (and
    ``quiet_end`` for every row of a shot) that was 7 % of the timeline's and the fusion's
    CPU on a busy table (docs/speed.md).  A shot ends by
    :func:`.shots.quiet_end` only without a live tracker (``tracked``)."""
    if state.shot.state[IN_SHOT] and not tracked:
        quiet_end(state, out, now)
    if state.contacts.state[CONTACTS_HELD]:
        release_derived(state.params, state.contacts, state.motion, state.shot, out, now)
    if state.motion.state[MOVED_WAITING]:
        release_moved(state.shot, state.motion, out, now)
    if state.contacts.state[CLICKS_HELD]:
        release_held(state, out, now)
    if state.cushions.state[HITS_HELD]:
        release_frozen(state.cushions, state.shot, out, now)


@njit(cache=True)
def track_frame(state: FusionState, out: Out, row, tracks):
    """A BALL_TRACK frame: every decision the tracker drives, in order.

    1. the frame into the tracker's history and ring (:func:`.tracker.record_frame`);
    2. between shots, a ball put on or taken off the table: the layout changed;
    3. a ball moving in this frame or the last: :func:`.motion.frame_motion` (contacts from
       the trajectories, line crossings without the curtain, the struck ball, why a ball
       started moving);
    4. a struck ball awaited longer than ``cue_wait_us``: the shot starts without one;
       held curtain reports and soft cushion touches judged with this frame;
    5. rest averages and line sides, and in a shot the frame kept for its paths;
    6. the still-table check: the shot ends, or the table rests
       (:func:`.shots.still_table`).

    ``row`` is the row, ``tracks[row[C_TRACK]]`` its ball records.  The steps run on
    every frame are ``inline="always"``: a call passing the state costs per frame (the
    fusion of the hour capture took a fifth longer with them as calls).
    """
    tracker, shot = state.tracker, state.shot
    hub_t = row[C_HUB]
    seen = tracker.state[FRAMES_SEEN]  # frames before this one: it goes to k, the one before is p
    k, p = seen % HISTORY, (seen - 1) % HISTORY
    record_frame(tracker, tracks[row[C_TRACK]], min(row[BT_COUNT], BALLS), hub_t)
    on, moving = tracker.frame_on, tracker.frame_moving
    if seen >= 1 and not shot.state[IN_SHOT] and layout_changed(on[k], on[p]):
        shot.state[LAYOUT_CHANGED] = 1  # a ball put on (or taken off) the table
        shot.state[STILL_RUN] = -1  # the layout changed: count still frames again
    now_moving = any_moving(on[k], moving[k])
    if now_moving:
        shot.state[LAST_ACTIVITY] = hub_t
        if shot.state[IN_SHOT]:
            shot.state[SOMETHING_MOVED] = 1
    if seen >= 1 and (now_moving or any_moving(on[p], moving[p])):
        frame_motion(state, out, hub_t)
    if shot.state[STRUCK_UNKNOWN] and hub_t > shot.state[CUE_T] + state.params.cue_wait_us:
        start_shot_event(state, out, NO_BALL, TRACKED)
    if state.lines.state[LINES_HELD]:  # curtain reports waiting for where their ball stops
        judge_lines(state.table, tracker, shot, state.lines, out, False)
    if shot.state[IN_SHOT] or watching(state.cushions):  # touches too soft for the rails
        soft_touches(state.table, tracker, state.contacts.hit_t, shot, state.cushions, out)
    average_rest(on[k], moving[k], tracker.frame_xy[k], tracker.rest_xy, tracker.rest_frames)
    line_sides(state.table, on[k], tracker.frame_xy[k], state.lines.side)
    if shot.state[IN_SHOT]:
        keep_shot_frame(tracker, shot, out, k, hub_t)
    still_table(state, out, hub_t, now_moving)


@njit(cache=True)
def pocket_drop(state: FusionState, out: Out, row, tracked):
    """A POCKET_DROP row: a pocket event, given (tracker alive) to the ball carried nearest
    the pocket, with its colour (0, 1; else -1: not known)."""
    hub_t, pocket = row[C_HUB], row[PD_POCKET]
    if not 0 <= pocket < 6:
        return
    ball = -1
    if tracked:
        tracker = state.tracker
        xy, on, penalty = tracker.carried_xy, tracker.carried_on, tracker.carried_penalty
        carried(tracker, state.contacts.hit_t, state.shot, hub_t, xy, on, penalty)
        px, py = pocket_xy(state.table, pocket)
        ball = nearest_ball(xy, on, penalty, px, py, ATTRIBUTION_LIMIT_MM)
    colour = row[PD_COLOUR]
    emit(out, state.shot, hub_t, EV_POCKET, ball, pocket, colour if colour <= 1 else -1, 0, 0, 0)
    state.shot.state[LAST_ACTIVITY] = hub_t


@njit(cache=True)
def node_status(state: FusionState, out: Out, row, mtype):
    """A node's status row: NODE_STATUS from the hub, the timeline's NODE_SILENT /
    NODE_BACK, or the decoder's rate limit's NODE_FLOODED / NODE_CALM (a bit of its own:
    the hub calling a flooding node online does not take it back).  Code 1 marks the node
    down, 0 up again; the tracker going down settles held curtain reports and drops its
    history (stale when it comes back) and the touch watches.  Then the node_status event
    (``O_C``: who said so)."""
    if mtype == T_NODE_STATUS:
        node, code, who = row[S_PEER], row[S_CODE], STATUS_FROM_HUB
    elif mtype == NODE_SILENT or mtype == NODE_BACK:
        node, code, who = row[P0], 1 if mtype == NODE_SILENT else 0, STATUS_SILENT
    else:
        node, code, who = row[P0], 1 if mtype == NODE_FLOODED else 0, STATUS_FLOOD
    stream = state.stream
    if 0 <= node < 16:
        bits = NODES_FLOODED if who == STATUS_FLOOD else NODES_DOWN
        if code == 1:
            stream.state[bits] |= np.int64(1) << node
        elif code == 0:
            stream.state[bits] &= ~(np.int64(1) << node)
        if node == TRACKER and code == 1:
            if state.lines.state[LINES_HELD]:
                judge_lines(state.table, state.tracker, state.shot, state.lines, out, True)
            state.tracker.state[FRAMES_SEEN] = 0  # its history is stale when it comes back
            state.tracker.state[RING_SEEN] = 0
            stop_watching(state.cushions, True)
    emit(out, state.shot, row[C_HUB], EV_NODE_STATUS, -1, node, code, who, 0, 0)


@njit(cache=True)
def hello(state: FusionState, out: Out, row, tracked):
    """A HELLO row: the hub (re)booted.  A running shot ends (uncertain), held curtain
    reports are settled, the nodes present are taken from it, none down; the tracker's
    history, touch watches and rest averages restart (a run of still frames across the boot
    is no rest); the table's size is taken when it gives one.  Then the boot event."""
    hub_t = row[C_HUB]
    shot, tracker, table = state.shot, state.tracker, state.table
    if shot.state[IN_SHOT]:
        if shot.state[STRUCK_UNKNOWN]:
            start_shot_event(state, out, NO_BALL, tracked)
        end_shot(table, tracker, shot, out, hub_t, NO_FLAGS, UNTRACKED)
    if state.lines.state[LINES_HELD]:
        judge_lines(table, tracker, shot, state.lines, out, True)
    state.stream.state[NODES_PRESENT] = row[H_PRESENT] | 1
    state.stream.state[NODES_DOWN] = 0
    state.stream.state[NODES_FLOODED] = 0  # the decoder's rate limits start afresh too
    tracker.state[FRAMES_SEEN] = 0
    tracker.state[RING_SEEN] = 0
    stop_watching(state.cushions, True)
    shot.state[STILL_RUN] = 0
    tracker.rest_frames[:] = 0
    if row[H_LEN] > 0 and row[H_WID] > 0 and row[H_BALL] > 0:
        table[G_L] = row[H_LEN]
        table[G_W] = row[H_WID]
        table[G_D] = row[H_BALL] / 1000.0
    boot, present = row[H_BOOT], row[H_PRESENT]
    length, width, ball_um = row[H_LEN], row[H_WID], row[H_BALL]
    emit(out, shot, hub_t, EV_BOOT, -1, boot, present, length, width, ball_um)


@njit(cache=True)
def safe_time(state: FusionState):
    """The earliest hub time a later emission may still carry: ``NOW``, held back by every
    decision still open -- trajectory contacts and clicks held, ball_moved candidates, the
    newest tracker frame and a still run that may end the shot or rest the table, a struck
    ball awaited, curtain reports held, touch watches, cushion hits of frozen balls held."""
    shot, tracker, contacts = state.shot, state.tracker, state.contacts
    safe = state.stream.state[NOW]
    for q in range(contacts.state[CONTACTS_HELD]):
        safe = min(safe, contacts.held_contacts[q, CONTACT_T])
    if contacts.state[CLICKS_HELD]:
        safe = min(safe, contacts.held_clicks[0, CLICK_T])
    moved = state.motion.moved
    for b in range(BALLS):
        if moved[b, MOVED_SEEN_T] >= 0:
            safe = min(safe, moved[b, MOVED_FROM_T])
    if tracker_alive(state.stream, tracker):
        safe = min(safe, tracker.frame_t[(tracker.state[FRAMES_SEEN] - 1) % HISTORY])
        if shot.state[STILL_RUN] > 0 and (shot.state[IN_SHOT] or shot.state[LAYOUT_CHANGED]):
            safe = min(safe, shot.state[STILL_T])
    if shot.state[STRUCK_UNKNOWN]:
        safe = min(safe, shot.state[CUE_T])
    for h in range(state.lines.state[LINES_HELD]):
        safe = min(safe, state.lines.held[h, HELD_LINE_T])
    watch, held_hits = state.cushions.watch, state.cushions.held_hits
    for b in range(BALLS):
        if watch[b, WATCH_CUSHION] >= 0:
            safe = min(safe, watch[b, WATCH_SINCE])
        if held_hits[b, HELD_HIT_T] >= 0:
            safe = min(safe, held_hits[b, HELD_HIT_T])
    return safe


@njit(cache=True)
def settle(state: FusionState, out: Out):
    """End of the input: the curtain reports still held are decided with what is known
    (:func:`.lines.judge_lines`), held cushion hits of frozen balls written at their own
    time, and touches still watched for given up (undecided: none); ``out.events`` needs
    room for ``LINE_HELD`` + 16."""
    judge_lines(state.table, state.tracker, state.shot, state.lines, out, True)
    held_hits = state.cushions.held_hits
    for b in range(BALLS):
        if held_hits[b, HELD_HIT_T] >= 0:
            write_frozen_hit(state.cushions, state.shot, out, b, held_hits[b, HELD_HIT_T])
    stop_watching(state.cushions, False)
