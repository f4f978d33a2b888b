"""The fusion state machine: hub-ordered rows in, EVENTS.md event records out.

One numba kernel walks the rows the timeline released (hub-time order) and
keeps everything it needs across calls in arrays (:class:`FusionArrays`), so
a capture in one call and a live stream in many calls emit the same events.
Decisions, in the order ICD §7 and RULES.md force them:

* **Cushion ring-down**: a hit on the cushion of an accepted hit, within
  4 ms and under 40 % of its amplitude, is that impact ringing -- if it is
  at the same place (within half a ball of it) and the tracker does not put
  another ball at the cushion there; otherwise it is a new hit.
* **Attribution** (tracker present and alive): the ball whose position,
  carried from its last two tracker frames to the event's hub time, is
  nearest the place the sensor names (cushion contact point, pocket, line
  crossing point, click position); balls at rest pay a penalty since they
  do not hit cushions or fall.  No tracker: ``ball`` is -1 (null).
* **Ball-ball contacts**: a click is matched to the pair of balls whose
  carried positions are one diameter apart nearest the click; with no click
  (acoustic node absent, or the ~1 % soft contacts it misses) a contact is
  derived from the trajectories: two balls whose straight-line motion since
  the last frame would overlap, at the time their centres were one diameter
  apart; and a ball at rest that starts moving next to a moving ball was
  hit by it (a frozen cluster, the rack).  A click never doubles a contact.
  A click of two balls at rest while a moving ball drives into their cluster
  names only a pair the impulse, followed from the mover along the lines of
  centres, closes on each other (a rack break: the same microsecond for
  every contact, and the click's 30 mm error spans neighbouring pairs).
  A cluster struck by the tip has no mover to follow: its clicks wait for
  the first tracker frame that shows the motion, the stroke is played
  forward (:mod:`.impulse`) from each candidate struck ball and fitted to
  that frame, and the clicks go to the best play's collisions.
* **Line crossings** come from the curtain; without it, from a ball centre
  changing side of x = L/2 or L/4 between two frames (time interpolated).
  A report of a ball too slow to be sure it will not stop within the
  curtain's 1 mm of ambiguity is held until the tracker shows the ball clear
  of the line, or at rest: then its averaged rest position settles the
  crossing where it is decisive, and the event says ``certain: false``
  where neither is.
* **Shots**: a tip contact starts one (``cue_ball`` = the ball that starts
  moving first after it); a second tip contact within ``double_hit_us`` of
  the first is part of the same stroke (item 18), a later one while balls
  still move ends the shot as ``interrupted`` (14.2) and starts the next.
  A shot ends when every ball is still (spinning counts as moving) for
  ``still_frames`` frames, at the first still frame; without a live tracker,
  ``quiet_us`` after the last sensor activity, ``certain: false``.
* **ball_moved**: a ball at rest starts moving with no tip contact and no
  contact to cause it -- none before its frame, no mover passing it between
  the frames, and no contact of it stamped within the timing uncertainty
  after the frame (a frame exposed the instant it was struck); **rest**: the
  table still again after that, outside a shot.

Events come out of the kernel in emission order, each with its hub time;
some carry a time in the recent past (a derived contact between two
frames), so the caller re-sorts them and releases only those before
``safe`` (the earliest time a later emission could still carry).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from firmware_host.timing.rows import (
    C_HUB,
    C_TRACK,
    C_TYPE,
    NODE_BACK,
    NODE_SILENT,
    P0,
    col,
    cols,
    type_of,
)
from firmware_host.timing.timeline import RELEASED_TYPES

from .geometry import (
    G_D,
    G_L,
    G_W,
    carry,
    carry_step,
    cushion_contact,
    frozen_mask,
    line_x,
    nearest_ball,
    pocket_xy,
    step_velocity,
    time_at_distance,
)
from .impulse import MERGE_US, TOUCH_MM, collide, fit_stroke
from .paths import PATH_TOLERANCE_MM, simplify
from .touch import (
    FT_H,
    FT_IN,
    FT_POST,
    FT_PRE,
    FT_SE_H,
    FT_SE_IN,
    FT_SSR,
    N_FIT,
    TRACK_SIGMA_MM,
    fit_apex,
    nose_gap,
)

# Event type codes, in the order events of the same hub time are written
# (a shot ends before the next starts; a shot starts before its tip contact).
(
    EV_BOOT,
    EV_NODE_STATUS,
    EV_KEYPAD,
    EV_SHOT_END,
    EV_REST,
    EV_SHOT_START,
    EV_CUE_CONTACT,
    EV_BALL_CONTACT,
    EV_CUSHION,
    EV_POCKET,
    EV_LINE_CROSS,
    EV_BALL_MOVED,
) = range(12)
EVENT_NAMES = (
    "boot",
    "node_status",
    "keypad",
    "shot_end",
    "rest",
    "shot_start",
    "cue_contact",
    "ball_contact",
    "cushion",
    "pocket",
    "line_cross",
    "ball_moved",
)

# Event record columns
O_T, O_TYPE, O_SEQ, O_SHOT, O_BALL, O_A, O_B, O_C, O_D, O_E, O_SNAP, O_PATH0, O_PATH1, O_FLAGS = (
    range(14)
)
N_OUT = 14
FLAG_CERTAIN, FLAG_INTERRUPTED = np.int64(1), np.int64(2)
# Arguments as numpy scalars, not Python literals: numba compiles a function once per literal
# value it is called with (a cold compile took half as long again)
NO_BALL, NO_FLAGS = np.int64(-1), np.int64(0)
TRACKED, UNTRACKED = np.bool_(True), np.bool_(False)
STATUS_FROM_HUB, STATUS_SILENT = 0, 1  # O_C of node_status: who said so

# Scalar state
(
    F_SHOT,
    F_IN_SHOT,
    F_FIRST_CUE_T,
    F_LAST_ACT,
    F_STRUCK_UNKNOWN,  # a shot started, its struck ball not decided yet (layout_before kept)
    F_CUE_T,
    F_PRESENT,
    F_DOWN,
    F_STILL_RUN,
    F_STILL_T,
    F_DIRTY,
    F_NOW,
    F_TRK_N,
    F_SHOT_FRAMES_N,  # the shot's tracker frames kept in shot_* (for its paths)
    F_SEQ,
    F_MOVED,
    F_PATHS_CUT,
    F_EV_CUT,
    F_HELD_CONTACTS_N,  # trajectory contacts waiting for their click (held_contacts)
    F_MOVED_N,  # ball_moved decisions may be waiting (recounted when released)
    F_HELD_CLICKS_N,  # clicks held for a tip contact that may claim them, or for the struck ball
    F_CUE_DUR,  # the shot's tip contact lasted this long (µs): it pushes on through a ball met then
    F_PLAYED_N,  # collisions in ``played`` for the struck ball just chosen (0: none played)
    F_HELD_LINES_N,  # curtain reports held until the tracker shows where their ball stops
    F_SNAPS_CUT,  # overflow counters (the caller sized a buffer too small, or more happened
    F_SHOT_FRAMES_CUT,  # than a fixed buffer holds): snapshots, a shot's tracker frames beyond
    F_HELD_CUT,  # SHOT_FRAMES, clicks or trajectory contacts that found no room to wait,
    F_PLAYED_CUT,  # played collisions beyond PLAYED, accepted cushion hits pushed out of
    F_HITS_CUT,  # the ring-down memory while still within its window
    F_FIT_N,  # tracker frames written into the ring ``fit_*`` (soft cushion touches)
    F_HELD_HITS_N,  # cushion hits of frozen balls held for the contact that pushed them
) = range(31)
N_F = 31
# Parameters
(
    PR_DEBOUNCE_US,
    PR_DEBOUNCE_RATIO_PCT,
    PR_DOUBLE_HIT_US,
    PR_QUIET_US,
    PR_STILL_FRAMES,
    PR_CUE_WAIT_US,
    PR_CONTACT_GAP_US,
    PR_REST_FRAMES,
    PR_DERIVED_GAP_US,
) = range(9)

TRACKER, LINES, ACOUSTIC = 4, 5, 6
MOVING_BITS = 3  # BALL_TRACK.state: moving | spinning in place (item 14.1: spinning is moving)
HISTORY = 3  # tracker frames kept
SHOT_FRAMES = 16384  # tracker frames kept per shot for its paths (136 s at 120 Hz)

# the rows the timeline releases, in RELEASED_TYPES' order
T_HELLO, T_NODE_STATUS, T_CUE, T_CUSHION, T_POCKET, T_TRACK, T_LINE, T_CLICK, T_KEYPAD = (
    type_of(n) for n in RELEASED_TYPES
)
H_BOOT, H_PRESENT, H_LEN, H_WID, H_BALL = cols(
    "HELLO", "boot_id", "nodes_present", "table_length_mm", "table_width_mm", "ball_diameter_um"
)
S_PEER, S_CODE = cols("NODE_STATUS", "peer", "code")
CUE_DUR, CUE_FORCE = cols("CUE_CONTACT", "duration_us", "peak_force_dn")
CH_CUSHION, CH_POS, CH_AMP = cols("CUSHION_HIT", "cushion", "pos_mm", "amplitude")
PD_POCKET, PD_COLOUR = cols("POCKET_DROP", "pocket", "colour")
LC_LINE, LC_POS, LC_DIR = cols("LINE_CROSS", "line", "pos_mm", "direction")
BC_X, BC_Y = cols("BALL_CLICK", "x_mm", "y_mm")
KP_KEY, KP_ARG = cols("KEYPAD", "key", "arg")
BT_COUNT = col("BALL_TRACK", "count")

# A ball at rest hits a cushion or drops only when driven (a frozen ball pushed into
# its cushion): a small handicap, so position (the sensor's pos_mm) decides.
AT_REST_PENALTY_MM = 20.0
ATTRIBUTION_LIMIT_MM = 300.0
CONTACT_TOLERANCE_MM = 3.0  # overlap beyond the tracker noise that proves a contact
CLICK_PAIR_GAP_MM = 20.0
CLICK_RADIUS_MM = 200.0  # acoustic position σ 30 mm, plus the pair's spread
NEIGHBOUR_MM = 10.0  # a ball starting to move this close to a mover was hit by it
DEVIATION_MM = 1.5  # a contact turns a ball off its straight line by more than the tracker noise
TOUCHING_MM = 5.0  # two balls at rest this close may click when a third drives into them
CLICK_WAIT_US = 10_000  # a contact seen in the trajectories waits this long for its click
# a tracker frame may show the struck ball moving this long before the tip's stamp
CUE_GRACE_US = 3_000
CAUSE_US = 40_000  # a contact this recent explains a ball starting to move
CLICK_REPEAT_US = MERGE_US  # two clicks of one pair further apart are two collisions
SHOWN_MM = 3.0  # how far the struck ball must have moved before the tracker can tell which it was
# a moving ball this close (along its path) to a resting cluster is about to drive into it
CASCADE_REACH_MM = 30.0
CASCADE_STEPS = 128
HELD_CONTACTS = 64
HELD_CLICKS = 32
# a click in the shot's first milliseconds waits this long at most for the struck ball: the
# frame after the one a 0.4 m/s stroke shows in, and with the timeline's ~35 ms still out
# within the 50 ms live bound
CLICK_HOLD_US = 12_000
PLAYED = 64  # collisions of a struck cluster matched to its clicks
# ICD §7 timing figures behind "a contact just after the frame caused the motion it shows":
# tracker exposure stamp σ 100 µs against the acoustic node's 30 µs (the mapping adds < 35 µs
# p99 in quadrature): ~110 µs combined; a contact stamped up to 4.5 σ after the first frame
# that shows a ball moving may have been exposed in it
CAUSE_SLACK_US = 500
# a ball still in one frame and moving in the next, struck by a contact between them, has moved
# since that contact: its speed is its step over that time (at least this long: a step of
# tracker noise over a few µs is no speed)
START_SPAN_US = 1_000
CUSHION_MEMORY = 16  # accepted hits per cushion a ring-down may belong to (one per ball)
# ICD §7 lines: a ball centre within 1 mm of the line when it stops may be reported either
# way; tracker: position σ 0.7 mm per frame
LINE_EITHER_WAY_MM = 1.0
LINE_SIGMAS = 4.0  # the tracker is decisive about a side this many standard errors away
LINE_ZONE_MM = LINE_EITHER_WAY_MM + LINE_SIGMAS * TRACK_SIGMA_MM  # one frame clear of it
# a ball crossing faster than this rolls on > 7 mm (cloth rolling resistance ~0.01 g): it
# cannot stop within the curtain's 1 mm; measured over this many frames (σ 0.02 m/s)
LINE_FAST_MM_PER_US = 1.2e-4
LINE_SPEED_FRAMES = 6
LINE_HELD = 32  # one held report per ball and line
LH_T, LH_BALL, LH_LINE, LH_DIR, LH_SHOT, LH_FROM = range(6)
AS_SAID, BY_TRACKER, UNDECIDED, WAIT = range(4)
ACOUSTIC_SIGMA_MM = 30.0
# a played collision's time is as good as the struck ball's speed, taken from its frame
PLAY_SLACK_US = 300.0
PLAY_SLACK = 0.25
# a still ball's position is the mean of this many frames (0.7 mm noise each: 0.05 mm): the
# 0.1–0.5 mm gaps of a leftover cluster then time its collisions when the tip strikes it
REST_AVERAGE_FRAMES = 256
# A cushion touch the rails did not report (ICD §7 rails: "impacts with normal speed under
# 0.05 m/s are not reported"; RULES.md counts any touch), from the tracker (touch.py). An armed
# ball (not resting against that cushion since it last left it) that a frame shows within
# SOFT_ZONE_MM of a cushion's nose, moving, is watched: every frame its gap to the nose is
# fitted by an apex (approach, then rebound or none), and a touch is written when the fit is
# decisive: at least SOFT_POST_FRAMES frames after the apex and SOFT_PRE_FRAMES before it, the
# apex gap within SOFT_Z standard errors of 0 and SOFT_NEAR_Z of them under SOFT_NEAR_MM, and an
# approach SOFT_Z standard errors faster than a ball rolling to a stop there could have had.
SOFT_ZONE_MM = 1.0 + LINE_SIGMAS * TRACK_SIGMA_MM  # 3.8 mm: one frame, 4 σ, plus 1 mm
SOFT_ARM_MM = 6.0  # a frame this far off: the ball has left the cushion, a touch is new again
SOFT_DECIDE_US = 80_000  # decided within this long of the touch or never: the most it holds
SOFT_PRE_US = 120_000  # approach fitted over at most this long (rolling: straight enough)
SOFT_POST_FRAMES = 6  # 50 ms at 120 Hz: a sliding ball curving off 1-2 mm short shows as such
SOFT_PRE_FRAMES = 3
SOFT_Z = 3.0
SOFT_NEAR_MM = 1.0
SOFT_NEAR_Z = 2.0
# a ball rolling to a stop slows by the cloth's rolling resistance (≈ 0.01 g; the ICD has no
# friction figure): the approach must be faster than twice that allows over the fitted span
ROLL_DECEL_MM_PER_MS2 = 2e-4
SOFT_STEP_US = 1_000  # the apex time is searched on this grid
FIT_FRAMES = 64  # tracker frames kept for the fits (533 ms at 120 Hz)
SW_C, SW_T0, SW_SHOT, SW_ARMED, SW_STILL = range(5)
SOURCE_TRACKER = 1  # O_B of a cushion event: derived from the tracker (EVENTS.md "source")
OCCLUDED = 4  # BALL_TRACK.state bit 2: position predicted, not seen
ALL_CUSHIONS = 0b111111
# a cushion hit of a ball resting against that cushion is that ball pushed into it by a
# contact: a contact stamped up to this much later caused it (rails σ 50 µs, acoustic σ 30 µs,
# mapping < 35 µs p99: ~70 µs combined; 500 µs is 7 σ), so the hit is written at the
# contact's time, after it
FROZEN_PUSH_US = 500


class FusionArrays(NamedTuple):
    """Everything the kernel keeps between calls, one argument (built by :func:`events.fusion_arrays`)."""

    fs: np.ndarray  # scalar state, F_*
    prm: np.ndarray  # parameters, PR_*
    geo: np.ndarray  # table geometry (geometry.G_*)
    trk_t: np.ndarray  # last HISTORY tracker frames: hub time,
    trk_xy: np.ndarray  # positions (mm),
    trk_on: np.ndarray  # on the table,
    trk_mv: np.ndarray  # moving or spinning
    rest_xy: np.ndarray  # each ball's averaged rest position
    rest_n: np.ndarray  # and how many still frames it averages
    pair_t: np.ndarray  # (16, 16) hub time of each pair's last contact
    hit_t: np.ndarray  # (16,) hub time of each ball's last contact (tip, click or derived)
    cushion_hits: np.ndarray  # (6, CUSHION_MEMORY, 4) accepted hits: time, amplitude, pos, ball
    line_side: np.ndarray  # (16, 2) side of each line a ball was last seen clear of it: -1, +1, 0
    held_lines: np.ndarray  # (LINE_HELD, 6) curtain reports held (F_HELD_LINES_N): LH_*
    # (1, 16, 3) the layout before a shot whose struck ball is not decided yet, and (1, 16)
    # its frozen cushions (F_STRUCK_UNKNOWN)
    layout_before: np.ndarray
    frozen_before: np.ndarray
    shot_t: np.ndarray  # (SHOT_FRAMES,) the shot's tracker frames (for paths): time,
    shot_xy: np.ndarray  # positions,
    shot_on: np.ndarray  # on the table,
    shot_mv: np.ndarray  # moving (F_SHOT_FRAMES_N of them)
    # (HELD_CONTACTS, 3) trajectory contacts waiting for their click: time, ball, ball
    held_contacts: np.ndarray
    held_clicks: np.ndarray  # (HELD_CLICKS, 3) clicks waiting (F_HELD_CLICKS_N): time, x, y
    played: np.ndarray  # (PLAYED, 5) the struck ball's stroke played forward (impulse.play)
    # (16, 3) ball_moved waiting for a tip contact: event time, frame time; last start
    moved: np.ndarray
    started: np.ndarray  # (16,) per-frame scratch: balls still in the last frame, moving now
    velocity: np.ndarray  # (16, 2) per-frame scratch: velocities (mm/µs) of the pair before
    carried_xy: np.ndarray  # (16, 2) scratch: each ball carried to an event's hub time (mm),
    carried_on: np.ndarray  # (16,) on the table,
    carried_pen: np.ndarray  # (16,) its attribution penalty (mm): _carried
    fit_t: np.ndarray  # (FIT_FRAMES,) ring of the last tracker frames (F_FIT_N): hub time,
    fit_xy: np.ndarray  # positions,
    fit_ok: np.ndarray  # on the table and seen (not occluded)
    soft: np.ndarray  # (16, 5) each ball's watch for an unreported cushion touch: SW_*
    # (16, 3) a frozen ball's cushion hit held for its contact (F_HELD_HITS_N): time,
    # cushion, shot
    held_hits: np.ndarray


@njit(cache=True, inline="always")
def _emit(st, ev, nev, t, etype, ball, a, b, c, d, e):
    """Write event record ``nev``; returns its row, or -1 when ``ev`` is full.

    A full buffer is counted (``F_EV_CUT``) and nothing is written: a caller
    that adds to the record (a snapshot, paths, flags) writes only into the
    row returned, never into ``ev[nev - 1]``, an earlier event.

    Inlined into its caller, where every field becomes an int64: numba compiles a
    function once per tuple of argument types (a literal 0, a constant, an int64 are three
    types), so :func:`_write_event` behind it is compiled once, not once per call shape.
    """
    return _write_event(
        st,
        ev,
        np.int64(nev),
        np.int64(t),
        np.int64(etype),
        np.int64(ball),
        np.int64(a),
        np.int64(b),
        np.int64(c),
        np.int64(d),
        np.int64(e),
    )


@njit(cache=True)
def _write_event(st, ev, nev, t, etype, ball, a, b, c, d, e):
    """:func:`_emit`'s body, every field an int64 (one compiled specialisation)."""
    if nev >= ev.shape[0]:
        st.fs[F_EV_CUT] += 1  # the caller sized ev too small: counted, never written past
        return np.int64(-1)
    ev[nev, O_T] = t
    ev[nev, O_TYPE] = etype
    ev[nev, O_SEQ] = st.fs[F_SEQ]
    st.fs[F_SEQ] += 1
    ev[nev, O_SHOT] = st.fs[F_SHOT] if st.fs[F_IN_SHOT] else -1
    ev[nev, O_BALL] = ball
    ev[nev, O_A] = a
    ev[nev, O_B] = b
    ev[nev, O_C] = c
    ev[nev, O_D] = d
    ev[nev, O_E] = e
    ev[nev, O_SNAP] = -1
    ev[nev, O_PATH0] = 0
    ev[nev, O_PATH1] = 0
    ev[nev, O_FLAGS] = 0
    return nev


@njit(cache=True, inline="always")
def _push(st, ev, nev, t, etype, ball, a, b, c, d, e):
    """:func:`_emit` for a record nobody adds to: the event count after it (inlined, as
    :func:`_emit` is, so it adds no specialisation of its own)."""
    row = _emit(st, ev, nev, t, etype, ball, a, b, c, d, e)
    return nev if row < 0 else row + 1


@njit(cache=True, inline="always")
def _tracker_up(st):
    """The tracker node is present (HELLO) and not reported down: its frames are used."""
    return ((st.fs[F_PRESENT] >> TRACKER) & 1) != 0 and ((st.fs[F_DOWN] >> TRACKER) & 1) == 0


@njit(cache=True, inline="always")
def _tracker_alive(st):
    """The tracker is up and has sent a frame since it came up: events are attributed to
    balls (its positions are not stale)."""
    return _tracker_up(st) and st.fs[F_TRK_N] > 0


@njit(cache=True)
def _step_us(st, k, p, b):
    """µs of motion behind ball b's step from frame p to frame k.

    The frames' interval, unless b was still in frame p and a contact (the
    tip, a click, a trajectory contact) set it going between them: then the
    time since that contact (a ball struck 1 ms before frame k has moved
    1 ms worth, not a frame's worth: its speed taken over the whole interval
    was 6 times too low, and a click 8 ms later was given to the wrong pair).
    """
    span = st.trk_t[k] - st.trk_t[p]
    if not st.trk_mv[p, b]:
        start = st.hit_t[b]
        if st.fs[F_IN_SHOT] and st.fs[F_CUE_T] < st.trk_t[k]:
            start = max(start, st.fs[F_CUE_T])
        if st.trk_t[p] < start < st.trk_t[k]:
            span = max(st.trk_t[k] - start, min(START_SPAN_US, span))
    return span


@njit(cache=True)
def _carried(st, t, out_xy, out_on, penalty):
    """Every ball's position carried from its last two frames to hub time ``t``."""
    n = st.fs[F_TRK_N]
    k = (n - 1) % HISTORY
    p = (n - 2) % HISTORY
    for b in range(16):
        out_on[b] = st.trk_on[k, b]
        out_xy[b, 0] = st.trk_xy[k, b, 0]
        out_xy[b, 1] = st.trk_xy[k, b, 1]
        penalty[b] = 0.0 if st.trk_mv[k, b] else AT_REST_PENALTY_MM
        if (
            n >= 2
            and st.trk_on[k, b]
            and st.trk_on[p, b]
            and st.trk_mv[k, b]
            and st.trk_t[k] > st.trk_t[p]
        ):
            f = (t - st.trk_t[k]) / _step_us(st, k, p, b)
            out_xy[b, 0], out_xy[b, 1] = carry_step(
                st.trk_xy[p, b, 0], st.trk_xy[p, b, 1], out_xy[b, 0], out_xy[b, 1], f
            )


@njit(cache=True)
def _snapshot(st, snaps, frozen, nsnap, t):
    """Positions at hub time t (rest average where the ball is still, carried on where it
    moves) and frozen cushions of every present ball."""
    n = st.fs[F_TRK_N]
    k = (n - 1) % HISTORY
    p = (n - 2) % HISTORY
    for b in range(16):
        on = n > 0 and st.trk_on[k, b]
        snaps[nsnap, b, 2] = 1.0 if on else 0.0
        if st.rest_n[b] > 0:
            x, y = st.rest_xy[b, 0], st.rest_xy[b, 1]
        else:
            x, y = st.trk_xy[k, b, 0], st.trk_xy[k, b, 1]
            if n >= 2 and st.trk_on[p, b] and st.trk_mv[k, b] and st.trk_t[k] > st.trk_t[p]:
                f = (t - st.trk_t[k]) / (st.trk_t[k] - st.trk_t[p])
                x, y = carry_step(st.trk_xy[p, b, 0], st.trk_xy[p, b, 1], x, y, f)
        snaps[nsnap, b, 0] = x
        snaps[nsnap, b, 1] = y
        frozen[nsnap, b] = frozen_mask(st.geo, x, y) if on and st.rest_n[b] > 0 else 0
    return nsnap + 1


@njit(cache=True)
def _end_shot(st, ev, nev, t, flags, snaps, frozen, nsnap, paths, npath, with_tracker):
    """The shot ends at hub time t: a shot_end event with ``flags`` and, with the tracker,
    the layout at t and each moved ball's path (a full ``snaps`` is counted, not written);
    the shot's state is cleared.  Returns (events, snapshots, path points)."""
    row = _emit(st, ev, nev, t, EV_SHOT_END, NO_BALL, 0, 0, 0, 0, 0)
    if row >= 0:
        nev = row + 1
        ev[row, O_FLAGS] = flags
        if with_tracker and nsnap >= snaps.shape[0]:
            st.fs[F_SNAPS_CUT] += 1
        elif with_tracker:
            ev[row, O_SNAP] = nsnap
            nsnap = _snapshot(st, snaps, frozen, nsnap, t)
            ev[row, O_PATH0] = npath
            npath = _shot_paths(st, paths, npath)
            ev[row, O_PATH1] = npath
    st.fs[F_IN_SHOT] = 0
    st.fs[F_STRUCK_UNKNOWN] = 0
    st.fs[F_DIRTY] = 0
    st.fs[F_SHOT_FRAMES_N] = 0
    return nev, nsnap, npath


@njit(cache=True)
def _shot_paths(st, paths, npath):
    """Each ball that moved in the shot: its tracked path simplified, appended to ``paths``
    (points past its end are counted in ``F_PATHS_CUT``); returns the new count."""
    n = st.fs[F_SHOT_FRAMES_N]
    keep = np.empty(n, np.bool_)
    xs = np.empty(n)
    ys = np.empty(n)
    ts = np.empty(n, np.int64)
    for b in range(16):
        first, last = -1, -1
        for i in range(n):
            if st.shot_mv[i, b]:
                if first < 0:
                    first = i
                last = i
        if first < 0:
            continue
        m = 0
        for i in range(max(first - 1, 0), min(last + 2, n)):
            if st.shot_on[i, b]:
                xs[m], ys[m], ts[m] = st.shot_xy[i, b, 0], st.shot_xy[i, b, 1], st.shot_t[i]
                m += 1
        simplify(xs[:m], ys[:m], PATH_TOLERANCE_MM, keep)
        for i in range(m):
            if keep[i]:
                if npath >= paths.shape[0]:
                    st.fs[F_PATHS_CUT] += 1
                    break
                paths[npath, 0] = b
                paths[npath, 1] = ts[i]
                paths[npath, 2] = xs[i]
                paths[npath, 3] = ys[i]
                npath += 1
    return npath


@njit(cache=True)
def _start_shot_event(st, ev, nev, ball, snaps, frozen, nsnap, with_tracker):
    """The struck ball is decided (``ball``, -1: not known): the shot_start event, at the
    tip contact's time with the layout kept from then (``layout_before``); the clicks held
    for this decision are judged now that the struck ball is known."""
    row = _emit(st, ev, nev, st.fs[F_CUE_T], EV_SHOT_START, ball, 0, 0, 0, 0, 0)
    if row >= 0:
        nev = row + 1
        if with_tracker and nsnap >= snaps.shape[0]:
            st.fs[F_SNAPS_CUT] += 1
        elif with_tracker:
            ev[row, O_SNAP] = nsnap
            snaps[nsnap] = st.layout_before[0]
            frozen[nsnap] = st.frozen_before[0]
            nsnap += 1
    if ball >= 0:
        st.hit_t[ball] = st.fs[F_CUE_T]
    if st.fs[F_HELD_CLICKS_N]:
        nev = _judge_held_clicks(st, ev, nev, ball, with_tracker, st.fs[F_HELD_CLICKS_N])
    st.fs[F_STRUCK_UNKNOWN] = 0
    return nev, nsnap


@njit(cache=True)
def _contact_time(pi, pj, vi, vj, D, span):
    """When two centres moving straight from pi, pj at vi, vj (per µs) were D apart, within
    [0, span] µs of the frame they were at pi, pj (never: span, the later frame's time)."""
    s = time_at_distance(pi[0] - pj[0], pi[1] - pj[1], vi[0] - vj[0], vi[1] - vj[1], D)
    if np.isnan(s):
        return span
    return min(max(s, 0.0), span)


@njit(cache=True, inline="always")
def _acoustic_up(st):
    """The acoustic node is present and not down: a click may still come to time a
    contact seen in the trajectories, so such a contact waits for it."""
    return ((st.fs[F_PRESENT] >> ACOUSTIC) & 1) != 0 and ((st.fs[F_DOWN] >> ACOUSTIC) & 1) == 0


@njit(cache=True)
def _held(st, i, j, t):
    """The held trajectory contact of pair (i, j) near hub time t, or -1."""
    for q in range(st.fs[F_HELD_CONTACTS_N]):
        if (
            st.held_contacts[q, 1] == i
            and st.held_contacts[q, 2] == j
            and abs(st.held_contacts[q, 0] - t) <= CLICK_WAIT_US
        ):
            return q
    return -1


@njit(cache=True)
def _derive(st, ev, nev, tau, i, j):
    """A contact seen in the trajectories: emitted now, or, with a live acoustic node,
    held ``CLICK_WAIT_US`` for the click that would time it exactly."""
    if tau - st.pair_t[i, j] <= st.prm[PR_CONTACT_GAP_US]:
        return nev
    if _acoustic_up(st):
        for q in range(st.fs[F_HELD_CONTACTS_N]):
            if (
                st.held_contacts[q, 1] == i
                and st.held_contacts[q, 2] == j
                and abs(st.held_contacts[q, 0] - tau) <= st.prm[PR_CONTACT_GAP_US]
            ):
                return nev
        if st.fs[F_HELD_CONTACTS_N] < st.held_contacts.shape[0]:
            q = st.fs[F_HELD_CONTACTS_N]
            st.held_contacts[q, 0], st.held_contacts[q, 1], st.held_contacts[q, 2] = tau, i, j
            st.fs[F_HELD_CONTACTS_N] = q + 1
            _touched(st, i, j, tau)
            return nev
        st.fs[F_HELD_CUT] += 1  # no room to wait for its click: out now, at its own time
    nev = _push(st, ev, nev, tau, EV_BALL_CONTACT, i, j, 0, 0, 0, 0)
    st.pair_t[i, j] = tau
    _touched(st, i, j, tau)
    st.fs[F_LAST_ACT] = max(st.fs[F_LAST_ACT], tau)
    return nev


@njit(cache=True)
def _touched(st, i, j, t):
    """Balls i and j touched at hub time t (a click, a trajectory contact): the start of their
    motion, and the cause of a ball_moved of either waiting since a frame stamped no more than
    the timing uncertainty (``CAUSE_SLACK_US``) before t -- a frame exposed the instant the
    ball was struck shows it moving, undisplaced, and its stamp may fall before the click."""
    _touched_one(st, i, t)
    _touched_one(st, j, t)


@njit(cache=True, inline="always")
def _touched_one(st, b, t):
    """Ball b (-1: none) touched at hub time t: its last contact, and the cause of its
    ball_moved waiting since a frame up to ``CAUSE_SLACK_US`` before t (then not emitted)."""
    if 0 <= b < 16:
        st.hit_t[b] = max(st.hit_t[b], t)
        late = st.moved[b, 1] >= 0 and t <= st.moved[b, 1] + CAUSE_SLACK_US
        if late and t >= st.moved[b, 0] - CAUSE_US:
            st.moved[b, 1] = -1


@njit(cache=True)
def _release_derived(st, ev, nev, now):
    """Held trajectory contacts whose click did not come: emitted at their own time, unless
    the pair touched lately (then a second collision would have clicked)."""
    q = 0
    while q < st.fs[F_HELD_CONTACTS_N]:
        if st.held_contacts[q, 0] + CLICK_WAIT_US < now:
            tau, i, j = st.held_contacts[q, 0], st.held_contacts[q, 1], st.held_contacts[q, 2]
            st.fs[F_HELD_CONTACTS_N] -= 1
            st.held_contacts[q] = st.held_contacts[st.fs[F_HELD_CONTACTS_N]]
            if tau - st.pair_t[i, j] > st.prm[PR_DERIVED_GAP_US]:
                nev = _push(st, ev, nev, tau, EV_BALL_CONTACT, i, j, 0, 0, 0, 0)
                st.pair_t[i, j] = tau
                _touched(st, i, j, tau)
                st.fs[F_LAST_ACT] = max(st.fs[F_LAST_ACT], tau)
        else:
            q += 1
    return nev


@njit(cache=True)
def _release_moved(st, ev, nev, now):
    """Balls that started moving with no cause, once no tip contact can claim them any more."""
    if st.fs[F_STRUCK_UNKNOWN]:
        return nev  # the struck ball is being decided: it may be one of them
    waiting = 0
    for b in range(16):
        if st.moved[b, 1] >= 0 and st.moved[b, 1] + CUE_GRACE_US < now:
            nev = _push(st, ev, nev, st.moved[b, 0], EV_BALL_MOVED, b, 0, 0, 0, 0, 0)
            st.moved[b, 1] = -1
        elif st.moved[b, 1] >= 0:
            waiting += 1
    st.fs[F_MOVED_N] = waiting
    return nev


@njit(cache=True)
def _struck(st, since):
    """Of the balls that started moving since ``since``, the one the tip struck, or -1.

    One ball: that one. Under a few mm of motion the tracker's noise would
    decide: -1, wait for a frame that shows it. A cluster (several started
    together) after the tip's stamp: the ball whose stroke, played through
    the cluster, best gives the frame; the candidates are the balls that
    moved and those touching them (a ball struck straight into a touching
    neighbour passes nearly all of it on and may never show as moving).
    In a frame before the stamp (its jitter): the ball that drove a touching
    neighbour away along their line of centres while itself moving towards
    it; failing that, the one that moved most.
    """
    k = (st.fs[F_TRK_N] - 1) % HISTORY
    D = st.geo[G_D]
    moved = st.moved[:, 2] >= since
    biggest = 0.0
    for b in range(16):
        if moved[b]:
            biggest = max(
                biggest,
                np.hypot(
                    st.trk_xy[k, b, 0] - st.rest_xy[b, 0], st.trk_xy[k, b, 1] - st.rest_xy[b, 1]
                ),
            )
    st.fs[F_PLAYED_N] = 0
    if biggest < SHOWN_MM:
        return -1
    best = -1
    after_tip = st.fs[F_STRUCK_UNKNOWN] and st.trk_t[k] > st.fs[F_CUE_T]
    if moved.sum() > 1 and after_tip:
        start = st.layout_before[0]
        contacts = np.empty((PLAYED, 5))
        best_e, best_n = np.inf, 0
        for c in range(16):
            near = moved[c]
            for o in range(16):
                if moved[o] and o != c and start[o, 2] > 0:
                    g = np.hypot(start[o, 0] - start[c, 0], start[o, 1] - start[c, 1])
                    near = near or g <= D + TOUCH_MM
            if not near or start[c, 2] == 0 or not st.trk_on[k, c]:
                continue
            n, e = _fit(st, k, moved, c, contacts)
            if e < best_e:
                best, best_e, best_n = c, e, n
                st.played[:] = contacts  # kept for the held clicks: not played again
        if best >= 0:
            _played(st, best_n)
        return best
    best_d, pusher = -1.0, False
    for b in range(16):
        if not moved[b]:
            continue
        dbx, dby = st.trk_xy[k, b, 0] - st.rest_xy[b, 0], st.trk_xy[k, b, 1] - st.rest_xy[b, 1]
        d = np.hypot(dbx, dby)
        pushes = False
        for o in range(16):
            if o == b or not moved[o]:
                continue
            ux, uy = st.rest_xy[o, 0] - st.rest_xy[b, 0], st.rest_xy[o, 1] - st.rest_xy[b, 1]
            gap = np.hypot(ux, uy)
            if gap > D + NEIGHBOUR_MM or gap <= 0.0:
                continue
            dox, doy = st.trk_xy[k, o, 0] - st.rest_xy[o, 0], st.trk_xy[k, o, 1] - st.rest_xy[o, 1]
            away = (dox * ux + doy * uy) / gap > 0.7 * np.hypot(dox, doy)
            if away and dbx * ux + dby * uy > 0.0:
                pushes = True
        if (pushes and not pusher) or (pushes == pusher and d > best_d):
            best, best_d, pusher = b, d, pushes
    if best >= 0 and after_tip and st.fs[F_HELD_CLICKS_N]:
        _played(st, _fit(st, k, moved, best, st.played)[0])
    return best


@njit(cache=True, inline="always")
def _played(st, n):
    """``n`` collisions played for the chosen struck ball: those past ``PLAYED`` were not
    written (counted)."""
    st.fs[F_PLAYED_N] = min(n, PLAYED)
    st.fs[F_PLAYED_CUT] += max(n - PLAYED, 0)


@njit(cache=True)
def _fit(st, k, moved, c, contacts):
    """The stroke on c fitted to tracker frame k (:func:`.impulse.fit_stroke`)."""
    return fit_stroke(
        st.layout_before[0],
        st.trk_xy[k],
        st.trk_on[k],
        moved,
        float(st.trk_t[k] - st.fs[F_CUE_T]),
        c,
        st.geo[G_D],
        float(st.fs[F_CUE_DUR]),
        np.empty((16, 2)),
        contacts,
    )


@njit(cache=True)
def _cascade(st, xy, on, pen, reach):
    """Which resting pairs a moving ball driving into a cluster can set clicking, or none known.

    In a break every contact is within microseconds and the click's 30 mm
    error cannot tell neighbouring pairs apart; what can is the impulse:
    followed from the mover along the lines of centres of touching balls
    (equal masses, restitution ``E_BALL``), it reaches only the pairs that
    close on each other.  A touching pair it leaves parting (a row across a
    straight break, the far side of an off-centre one) exchanges nothing.
    """
    n = st.fs[F_TRK_N]
    k = (n - 1) % HISTORY
    q = (n - 2) % HISTORY
    D = st.geo[G_D]
    p = np.empty((16, 2))
    v = np.zeros((16, 2))
    mv = np.zeros(16, np.bool_)
    for b in range(16):
        p[b, 0], p[b, 1] = xy[b, 0], xy[b, 1]
        if pen[b] > 0 and st.rest_n[b] > 0:
            p[b, 0], p[b, 1] = st.rest_xy[b, 0], st.rest_xy[b, 1]
        elif on[b] and pen[b] == 0 and n >= 2 and st.trk_on[q, b] and st.trk_t[k] > st.trk_t[q]:
            v[b, 0], v[b, 1] = step_velocity(
                st.trk_xy[q, b, 0],
                st.trk_xy[q, b, 1],
                st.trk_xy[k, b, 0],
                st.trk_xy[k, b, 1],
                _step_us(st, k, q, b),
            )
            mv[b] = v[b, 0] != 0.0 or v[b, 1] != 0.0
    # each mover to where it first touches a resting ball (carried positions overshoot)
    driving = False
    for i in range(16):
        vv = v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1]
        if not mv[i] or vv <= 0.0:
            continue
        best = np.inf
        for j in range(16):
            if j == i or not on[j] or mv[j]:
                continue
            s = time_at_distance(p[i, 0] - p[j, 0], p[i, 1] - p[j, 1], v[i, 0], v[i, 1], D)
            if np.isnan(s):
                continue
            if abs(s) * np.sqrt(vv) <= CASCADE_REACH_MM and s < best:
                best = s
        if best < np.inf:
            p[i, 0], p[i, 1] = carry(p[i, 0], p[i, 1], v[i, 0], v[i, 1], best)
            driving = True
    reach[:, :] = False
    if not driving:
        return False
    for _ in range(CASCADE_STEPS):
        hit = False
        for i in range(16):
            if not mv[i] or not on[i]:
                continue
            for j in range(16):
                if j == i or not on[j] or (mv[j] and j < i):
                    continue
                dx, dy = p[j, 0] - p[i, 0], p[j, 1] - p[i, 1]
                g = np.hypot(dx, dy)
                if g - D > TOUCH_MM or g <= 0.0:
                    continue
                if not collide(v, i, j, dx, dy, g):
                    continue
                mv[j] = True
                reach[min(i, j), max(i, j)] = True
                hit = True
                break
            if hit:
                break
        if not hit:
            break
    return True


@njit(cache=True)
def _click(st, ev, nev, t, cx, cy, tracked):
    """A BALL_CLICK at (cx, cy) mm: the pair of balls one diameter apart nearest it, or none."""
    if not tracked:
        if st.fs[F_IN_SHOT]:
            nev = _push(st, ev, nev, t, EV_BALL_CONTACT, -1, -1, 0, 0, 0, 0)
            st.fs[F_LAST_ACT] = t
        return nev
    xy = np.empty((16, 2))
    on = np.zeros(16, np.bool_)
    pen = np.empty(16)
    _carried(st, t, xy, on, pen)
    reach = np.zeros((16, 16), np.bool_)
    known = _cascade(st, xy, on, pen, reach)
    best_i, best_j, best_s = -1, -1, np.inf
    for i in range(16):
        if not on[i]:
            continue
        for j in range(i + 1, 16):
            if not on[j] or t - st.pair_t[i, j] <= CLICK_REPEAT_US:
                continue
            gap = abs(np.hypot(xy[i, 0] - xy[j, 0], xy[i, 1] - xy[j, 1]) - st.geo[G_D])
            if pen[i] > 0 and pen[j] > 0:
                if gap > TOUCHING_MM or (known and not reach[i, j]):
                    continue  # two balls at rest click only if touching and the impulse reaches them
                gap += TOUCHING_MM
            far = np.hypot((xy[i, 0] + xy[j, 0]) / 2 - cx, (xy[i, 1] + xy[j, 1]) / 2 - cy)
            held = _held(st, i, j, t) >= 0
            # a pair that touched moments ago may collide again (one of them back off a cushion,
            # seed 403): their carried positions still run on the velocities from before
            again = t - st.pair_t[i, j] <= CAUSE_US
            if (gap < CLICK_PAIR_GAP_MM or held or again) and far < CLICK_RADIUS_MM:
                cost = (
                    min(gap, CLICK_PAIR_GAP_MM) + 0.2 * far - (CLICK_PAIR_GAP_MM if held else 0.0)
                )
                if cost < best_s:
                    best_i, best_j, best_s = i, j, cost
    if best_i >= 0:
        nev = _contact(st, ev, nev, t, best_i, best_j)
    return nev


@njit(cache=True)
def _contact(st, ev, nev, t, i, j):
    """The click at t was pair (i, j): if the trajectories saw it too, the click gives the time."""
    q = _held(st, i, j, t)
    if q >= 0:
        st.fs[F_HELD_CONTACTS_N] -= 1
        st.held_contacts[q] = st.held_contacts[st.fs[F_HELD_CONTACTS_N]]
    nev = _push(st, ev, nev, t, EV_BALL_CONTACT, i, j, 0, 0, 0, 0)
    st.pair_t[i, j] = t
    _touched(st, i, j, t)
    st.fs[F_LAST_ACT] = max(st.fs[F_LAST_ACT], t)
    if st.fs[F_HELD_HITS_N]:
        nev = _pushed_into_cushion(st, ev, nev, t, i, j)
    return nev


@njit(cache=True)
def _judge_held_clicks(st, ev, nev, c, tracked, count):
    """The first ``count`` held clicks, now the struck ball c is known (-1: none, or never).

    Each goes to the collision nearest it in time and place of the cluster
    played from c when :func:`_struck` chose it (a frozen cluster struck by
    the tip: no ball moved before, so nothing else tells which of its
    touching pairs clicked); one that matches none is judged as any click.
    """
    n = count
    contacts = st.played
    m = st.fs[F_PLAYED_N] if c >= 0 and tracked else 0
    st.fs[F_PLAYED_N] = 0
    # cheapest click–collision match first, one to one (a click's place is ±30 mm, its
    # time µs-exact, a played collision's time as good as the stroke fitted)
    cost = np.full((n, max(m, 1)), np.inf)
    for h in range(n):
        for q in range(m):
            slack = PLAY_SLACK_US + PLAY_SLACK * contacts[q, 2]
            late = abs(st.held_clicks[h, 0] - st.fs[F_CUE_T] - contacts[q, 2])
            far = np.hypot(
                contacts[q, 3] - st.held_clicks[h, 1], contacts[q, 4] - st.held_clicks[h, 2]
            )
            if far <= CLICK_RADIUS_MM and late <= 3 * slack:
                cost[h, q] = far / ACOUSTIC_SIGMA_MM + late / slack
    pair = np.full(n, -1)
    for _ in range(min(n, m)):
        h, q = divmod(np.argmin(cost), cost.shape[1])
        if cost[h, q] == np.inf:
            break
        pair[h] = q
        cost[h, :] = np.inf
        cost[:, q] = np.inf
    for h in range(n):
        t, x, y = st.held_clicks[h, 0], st.held_clicks[h, 1], st.held_clicks[h, 2]
        if pair[h] >= 0:
            i, j = int(contacts[pair[h], 0]), int(contacts[pair[h], 1])
            nev = _contact(st, ev, nev, t, i, j)
        else:
            nev = _click(st, ev, nev, t, x, y, tracked)
    left = st.fs[F_HELD_CLICKS_N] - n
    for h in range(left):
        st.held_clicks[h] = st.held_clicks[n + h]
    st.fs[F_HELD_CLICKS_N] = left
    return nev


@njit(cache=True)
def _release_held(st, ev, nev, now):
    """Held clicks nobody will claim: between shots, those no tip contact can take any more
    (judged at their own time); in a shot, all, once the struck ball was awaited too long."""
    tracked = _tracker_alive(st)
    if st.fs[F_IN_SHOT]:
        if st.held_clicks[0, 0] + CLICK_HOLD_US < now:
            nev = _judge_held_clicks(st, ev, nev, NO_BALL, tracked, st.fs[F_HELD_CLICKS_N])
        return nev
    old = 0
    while old < st.fs[F_HELD_CLICKS_N] and st.held_clicks[old, 0] + CUE_GRACE_US < now:
        old += 1
    if old:
        nev = _judge_held_clicks(st, ev, nev, NO_BALL, tracked, old)
    return nev


@njit(cache=True)
def _cushion_hit(st, ev, nev, rw, tracked):
    """A CUSHION_HIT row on cushion c: a new impact (emitted and remembered), or one ringing.

    ICD §7: one impact may retrigger on its cushion within 4 ms at under 40 %
    of its amplitude. That is one impact ringing at one place: a hit more
    than half a ball from it (two balls at one cushion are a diameter apart),
    or one the tracker puts on another ball at the cushion, is a new hit even
    within those bounds. A ``pos_mm`` beyond the piece is no position.
    """
    t, c, pos, amp = rw[C_HUB], rw[CH_CUSHION], rw[CH_POS], rw[CH_AMP]
    if not 0 <= c < 6:
        return nev
    xy, on, pen = st.carried_xy, st.carried_on, st.carried_pen
    D = st.geo[G_D]
    extent = st.geo[G_W] if c == 0 or c == 3 else st.geo[G_L]
    given = pos <= extent
    cx, cy = cushion_contact(st.geo, c, float(pos))
    ball, at_cushion = NO_BALL, False
    if tracked:
        _carried(st, t, xy, on, pen)
        ball = nearest_ball(xy, on, pen, cx, cy, ATTRIBUTION_LIMIT_MM)
        if ball >= 0:
            at_cushion = np.hypot(xy[ball, 0] - cx, xy[ball, 1] - cy) <= D / 2
        # the rails reported this touch: the ball it is given to, or any ball at its place,
        # is not watched for it (_soft_touches) and needs to leave the cushion to be again
        for o in range(16):
            here = given and on[o] and np.hypot(xy[o, 0] - cx, xy[o, 1] - cy) <= D / 2
            if o == ball or here:
                st.soft[o, SW_ARMED] &= ~(np.int64(1) << c)
                if st.soft[o, SW_C] == c:
                    st.soft[o, SW_C] = -1
    hits = st.cushion_hits[c]
    oldest = 0
    for h in range(CUSHION_MEMORY):
        if hits[h, 0] < hits[oldest, 0]:
            oldest = h
        if t - hits[h, 0] > st.prm[PR_DEBOUNCE_US]:
            continue
        if amp * 100 >= hits[h, 1] * st.prm[PR_DEBOUNCE_RATIO_PCT]:
            continue
        if given and hits[h, 2] >= 0 and abs(pos - hits[h, 2]) > D / 2:
            continue  # another place
        if at_cushion and hits[h, 3] >= 0 and ball != hits[h, 3]:
            continue  # another ball, at the cushion
        return nev  # that impact ringing
    if t - hits[oldest, 0] <= st.prm[PR_DEBOUNCE_US]:
        st.fs[F_HITS_CUT] += 1  # more hits on one cushion within 4 ms than balls
    hits[oldest, 0], hits[oldest, 1] = t, amp
    hits[oldest, 2], hits[oldest, 3] = pos if given else -1, ball
    st.fs[F_LAST_ACT] = t
    if (
        tracked
        and ball >= 0
        and pen[ball] > 0
        and st.rest_n[ball] > 0
        and (frozen_mask(st.geo, st.rest_xy[ball, 0], st.rest_xy[ball, 1]) >> c) & 1
    ):
        # a ball resting against this cushion hits it only when a contact drives it in: held
        # for that contact, whose click may be stamped a little later (sensor jitter)
        if st.held_hits[ball, 0] >= 0:
            nev = _write_frozen_hit(st, ev, nev, ball, st.held_hits[ball, 0])
        st.held_hits[ball, 0], st.held_hits[ball, 1] = t, c
        st.held_hits[ball, 2] = st.fs[F_SHOT] if st.fs[F_IN_SHOT] else -1
        st.fs[F_HELD_HITS_N] += 1
        return nev
    return _push(st, ev, nev, t, EV_CUSHION, ball, c, 0, 0, 0, 0)


@njit(cache=True)
def _write_frozen_hit(st, ev, nev, b, t):
    """Ball b's held cushion hit, written at hub time t (its own, or its contact's)."""
    row = _emit(st, ev, nev, t, EV_CUSHION, b, st.held_hits[b, 1], 0, 0, 0, 0)
    if row >= 0:
        nev = row + 1
        ev[row, O_SHOT] = st.held_hits[b, 2]
    st.held_hits[b, 0] = -1
    st.fs[F_HELD_HITS_N] -= 1
    return nev


@njit(cache=True)
def _pushed_into_cushion(st, ev, nev, t, i, j):
    """A contact of i and j at t: a held cushion hit of either, stamped up to
    ``FROZEN_PUSH_US`` before it, was that contact pushing the ball into its cushion: it is
    written at the contact's time, so after it (the contact's type sorts first)."""
    for b in (i, j):
        if (
            0 <= b < 16
            and st.held_hits[b, 0] >= 0
            and 0 <= t - st.held_hits[b, 0] <= FROZEN_PUSH_US
        ):
            nev = _write_frozen_hit(st, ev, nev, b, t)
    return nev


@njit(cache=True)
def _release_frozen(st, ev, nev, now):
    """Held cushion hits of frozen balls whose contact did not come: at their own time."""
    for b in range(16):
        if st.held_hits[b, 0] >= 0 and st.held_hits[b, 0] + FROZEN_PUSH_US < now:
            nev = _write_frozen_hit(st, ev, nev, b, st.held_hits[b, 0])
    return nev


@njit(cache=True, inline="always")
def _watching(st):
    """Some ball is watched for a cushion touch too soft for the rails (``SW_C`` set): the
    soft-touch step must run even between shots until each watch is decided."""
    for b in range(16):
        if st.soft[b, SW_C] >= 0:
            return True
    return False


@njit(cache=True)
def _stop_watching(st, disarm):
    """No more touches looked for (a new shot, a boot, the tracker gone)."""
    for b in range(16):
        st.soft[b, SW_C] = -1
        if disarm:
            st.soft[b, SW_ARMED] = 0


@njit(cache=True)
def _soft_touches(st, ev, nev):
    """After each tracker frame: every ball near a cushion it is armed for is watched for a
    touch the rails could not report (ICD §7: none under 0.05 m/s normal speed).

    Armed: at a shot's start for every cushion the ball is not resting against (``frozen``),
    then for any cushion a frame shows it ``SOFT_ARM_MM`` off; a touch (reported or derived)
    disarms that cushion.  A watch opens when a frame of the shot shows the ball moving
    within ``SOFT_ZONE_MM`` of an armed cushion; it closes when the ball leaves
    (``SOFT_ARM_MM``), has been still for ``SOFT_POST_FRAMES`` frames, is touched, or the
    rails report it; while open it holds ``safe`` at ``SW_T0`` (at most ``SOFT_DECIDE_US``
    behind the newest frame).
    """
    n = st.fs[F_FIT_N]
    f = (n - 1) % FIT_FRAMES
    k = (st.fs[F_TRK_N] - 1) % HISTORY
    for b in range(16):
        w = st.soft[b]
        if not st.trk_on[k, b]:
            w[SW_C] = -1  # off the table
            continue
        if not st.fit_ok[f, b]:
            continue  # occluded: where it is, is the tracker's guess
        x, y = st.fit_xy[f, b, 0], st.fit_xy[f, b, 1]
        near_c, near_g = -1, SOFT_ZONE_MM
        for c in range(6):
            g = nose_gap(st.geo, c, x, y)
            if g > SOFT_ARM_MM:
                if np.isfinite(g):
                    w[SW_ARMED] |= np.int64(1) << c
                if w[SW_C] == c:
                    if not np.isfinite(g):
                        nev = _touch_undecided(st, ev, nev, b, c)
                    w[SW_C] = -1  # it left the cushion (or the piece)
            elif g < near_g and (w[SW_ARMED] >> c) & 1:
                near_c, near_g = c, g
        w[SW_STILL] = 0 if st.trk_mv[k, b] else w[SW_STILL] + 1
        if w[SW_C] < 0:
            if near_c < 0 or not st.fs[F_IN_SHOT] or not st.trk_mv[k, b] or n < 2:
                continue
            w[SW_C] = near_c
            w[SW_T0] = st.fit_t[(n - 2) % FIT_FRAMES]  # it may have touched since that frame
            w[SW_SHOT] = st.fs[F_SHOT]
        nev = _soft_watch(st, ev, nev, b)
        if w[SW_C] >= 0 and w[SW_STILL] > SOFT_POST_FRAMES:
            nev = _touch_at_rest(st, ev, nev, b)
            w[SW_C] = -1  # still: any touch before it stopped has been judged
    return nev


@njit(cache=True)
def _touch_at_rest(st, ev, nev, b):
    """Ball b stopped while watched at its cushion, its fits undecided: it touched the
    cushion if its still frames put it against the nose.

    A ball arriving under 0.02 m/s rebounds too slowly to leave and rests against the
    cushion; its approach (under 2 mm in the fit window) is too short for the slope test,
    yet the still frames average to the nose's gap within ``SOFT_Z`` of their standard
    error (σ/√n: 0.26 mm over 7 frames): a ball 1.5 mm short is 5.6 of them off.  Missed,
    such touches were false fouls 20 (0.013 to 0.034 m/s, truth of random matches).
    """
    w = st.soft[b]
    c = w[SW_C]
    n = st.fs[F_FIT_N]
    total, m = 0.0, 0
    for q in range(min(n, w[SW_STILL], FIT_FRAMES)):
        i = (n - 1 - q) % FIT_FRAMES
        if st.fit_ok[i, b]:
            g = nose_gap(st.geo, c, st.fit_xy[i, b, 0], st.fit_xy[i, b, 1])
            if not np.isfinite(g):
                return nev
            total += g
            m += 1
    if m < SOFT_POST_FRAMES or total / m > SOFT_Z * TRACK_SIGMA_MM / np.sqrt(m):
        return nev
    row = _emit(st, ev, nev, w[SW_T0], EV_CUSHION, b, c, SOURCE_TRACKER, 0, 0, 0)
    if row >= 0:
        nev = row + 1
        ev[row, O_SHOT] = w[SW_SHOT]
    w[SW_ARMED] &= ~(np.int64(1) << c)
    return nev


@njit(cache=True)
def _touch_undecided(st, ev, nev, b, c):
    """Ball b, watched at cushion c, ran on into a pocket's mouth (``nose_gap`` has no gap
    there) before its frames could decide whether it touched: a touch that may have been.

    Its last frame on the piece within ``SOFT_ZONE_MM`` of the nose, and a time since
    ``SW_T0`` the fits have not ruled out, make it a cushion event ``certain: false``: the
    rules leave to the referee a foul that this touch could have made legal, and never call
    one from its absence (a ball touching a cushion at 0.046 m/s 30 mm from a corner jaw,
    then rolling along it into the jaw, was a false foul 20).
    """
    w = st.soft[b]
    n = st.fs[F_FIT_N]
    if n < 2:
        return nev
    i = (n - 2) % FIT_FRAMES
    if not st.fit_ok[i, b] or w[SW_T0] > st.fit_t[i]:
        return nev  # the fits ruled out every time it was watched
    g = nose_gap(st.geo, c, st.fit_xy[i, b, 0], st.fit_xy[i, b, 1])
    if not g <= SOFT_ZONE_MM:
        return nev
    row = _emit(st, ev, nev, w[SW_T0], EV_CUSHION, b, c, SOURCE_TRACKER, 1, 0, 0)
    if row >= 0:
        nev = row + 1
        ev[row, O_SHOT] = w[SW_SHOT]
    return nev  # still armed: back on the piece, a decisive touch is written as one


@njit(cache=True)
def _soft_watch(st, ev, nev, b):
    """Ball b, watched at its cushion: the apex fits over its frames (touch.fit_apex), and
    the touch written if they are decisive (see ``SOFT_*``)."""
    w = st.soft[b]
    c = w[SW_C]
    n = st.fs[F_FIT_N]
    t = st.fit_t[(n - 1) % FIT_FRAMES]
    # a touch before the ball's last contact (its motion since is another) or more than
    # SOFT_DECIDE_US ago (events after it are out) is no longer looked for
    t0 = max(w[SW_T0], t - SOFT_DECIDE_US, st.hit_t[b])
    w[SW_T0] = t0
    lo = max(t0 - SOFT_PRE_US, st.hit_t[b])
    tau = np.empty(FIT_FRAMES)
    gap = np.empty(FIT_FRAMES)
    m = 0
    for q in range(min(n, FIT_FRAMES)):
        i = (n - 1 - q) % FIT_FRAMES
        if st.fit_t[i] < lo:
            break
        if st.fit_ok[i, b]:
            g = nose_gap(st.geo, c, st.fit_xy[i, b, 0], st.fit_xy[i, b, 1])
            if np.isfinite(g):
                tau[m] = (st.fit_t[i] - t) / 1000.0  # ms, newest first
                gap[m] = g
                m += 1
    if m < SOFT_PRE_FRAMES + SOFT_POST_FRAMES:
        return nev
    fit = np.empty(N_FIT)
    best = np.empty(N_FIT)
    work = np.empty((3, 3, 3))  # fit_apex's scratch: up to 160 fits a frame, none allocating
    best[FT_SSR] = np.inf
    best_tc = 0.0
    excluding = True
    tc_us = t0
    while tc_us <= t:
        tc = (tc_us - t) / 1000.0
        fit_apex(tau, gap, m, tc, True, fit, work)
        if (
            excluding
            and fit[FT_SSR] < np.inf
            and fit[FT_PRE] >= SOFT_PRE_FRAMES
            and fit[FT_H] - SOFT_Z * fit[FT_SE_H] > 0.0
        ):
            # an apex here would be decisively short of the nose: no touch then, and none
            # before (nothing to hold for up to here: a ball lingering a mm or two off the
            # cushion holds nothing)
            w[SW_T0] = tc_us + SOFT_STEP_US
        else:
            excluding = False
            if fit[FT_SSR] < best[FT_SSR]:
                best[:] = fit
                best_tc = tc
        tc_us += SOFT_STEP_US
    t0 = w[SW_T0]
    if best[FT_SSR] == np.inf or best[FT_POST] < SOFT_POST_FRAMES or best[FT_PRE] < SOFT_PRE_FRAMES:
        return nev
    h, se_h = best[FT_H], best[FT_SE_H]
    stopping = ROLL_DECEL_MM_PER_MS2 * (best_tc - tau[m - 1]) / 2
    if (
        h - SOFT_Z * se_h > 0.0
        or h + SOFT_NEAR_Z * se_h > SOFT_NEAR_MM
        or best[FT_IN] < SOFT_Z * best[FT_SE_IN] + stopping
    ):
        return nev  # not decisive (yet)
    # a touch: timed by the fit through gap 0
    best_ssr, tc_touch = np.inf, best_tc
    tc_us = t0
    while tc_us <= t:
        tc = (tc_us - t) / 1000.0
        fit_apex(tau, gap, m, tc, False, fit, work)
        if fit[FT_SSR] < best_ssr:
            best_ssr, tc_touch = fit[FT_SSR], tc
        tc_us += SOFT_STEP_US
    at = max(t0, t + np.int64(tc_touch * 1000.0))
    row = _emit(st, ev, nev, at, EV_CUSHION, b, c, SOURCE_TRACKER, 0, 0, 0)
    if row >= 0:
        nev = row + 1
        ev[row, O_SHOT] = w[SW_SHOT]
    w[SW_ARMED] &= ~(np.int64(1) << c)
    w[SW_C] = -1
    return nev


@njit(cache=True)
def _may_stop_on_line(st, b):
    """Ball b, at a line now, may stop within the curtain's 1 mm of it: not shown faster than
    ``LINE_FAST_MM_PER_US`` over the shot's last ``LINE_SPEED_FRAMES`` frames."""
    i = st.fs[F_SHOT_FRAMES_N] - 1
    j = i - LINE_SPEED_FRAMES
    if not st.fs[F_IN_SHOT] or j < 0 or not (st.shot_on[i, b] and st.shot_on[j, b]):
        return True
    span = st.shot_t[i] - st.shot_t[j]
    step = np.hypot(
        st.shot_xy[i, b, 0] - st.shot_xy[j, b, 0], st.shot_xy[i, b, 1] - st.shot_xy[j, b, 1]
    )
    return span <= 0 or step < LINE_FAST_MM_PER_US * span


@njit(cache=True)
def _line_report(st, ev, nev, t, line, direction, ball):
    """A curtain report (direction 0/1 a crossing, 2 none) of ``ball`` (-1: not known).

    Emitted at once (a crossing) or dropped (a touch), unless the tracker
    cannot yet rule out that the ball stops within the curtain's ambiguity:
    then it is held (``held_lines``) for :func:`_judge_lines`.
    """
    if ball < 0 or not _may_stop_on_line(st, ball):
        if direction <= 1:
            nev = _push(st, ev, nev, t, EV_LINE_CROSS, ball, line, direction, 0, 0, 0)
        return nev
    for h in range(st.fs[F_HELD_LINES_N]):
        if st.held_lines[h, LH_BALL] == ball and st.held_lines[h, LH_LINE] == line:
            nev = _decide_line(st, ev, nev, h, AS_SAID, 0)  # the ball left and came back
            break
    h = st.fs[F_HELD_LINES_N]  # < LINE_HELD: one per ball and line
    # the side the ball came from: a crossing says; a touch left on it, where the tracker saw it
    frm = st.line_side[ball, line] if direction == 2 else (1 if direction == 0 else -1)
    st.held_lines[h, LH_T], st.held_lines[h, LH_BALL], st.held_lines[h, LH_LINE] = t, ball, line
    st.held_lines[h, LH_DIR], st.held_lines[h, LH_FROM] = direction, frm
    st.held_lines[h, LH_SHOT] = st.fs[F_SHOT] if st.fs[F_IN_SHOT] else -1
    st.fs[F_HELD_LINES_N] = h + 1
    return nev


@njit(cache=True)
def _line_state(st, k, b, lx, frm, force):
    """Where held ball b stands against its line at x = lx: (AS_SAID, BY_TRACKER, UNDECIDED or
    WAIT, the side of its averaged rest position)."""
    if st.fs[F_TRK_N] == 0 or not st.trk_on[k, b]:
        return AS_SAID, 0  # gone (pocketed), or no tracker left to tell
    n, x = st.rest_n[b], st.rest_xy[b, 0]
    if n == 0:
        if st.trk_mv[k, b]:  # on its way: clear of the ambiguity, or still at the line
            clear = abs(st.trk_xy[k, b, 0] - lx) > LINE_ZONE_MM
            return (AS_SAID if clear or force else WAIT), 0
        if not force:
            return WAIT, 0  # its first still frame: averaged from the next
        n, x = 1, st.trk_xy[k, b, 0]
    se = TRACK_SIGMA_MM / np.sqrt(n)
    off = abs(x - lx)
    side = 1 if x >= lx else -1
    if off > LINE_EITHER_WAY_MM + LINE_SIGMAS * se:
        return AS_SAID, side  # stopped clear of the curtain's ambiguity: its reading stands
    if off > LINE_SIGMAS * se:
        return (BY_TRACKER if frm != 0 else UNDECIDED), side
    if force or n >= REST_AVERAGE_FRAMES or (st.trk_mv[k, b] and n >= 2):
        return UNDECIDED, side  # no more to learn: averaged all it can, or struck again
    return WAIT, side


@njit(cache=True)
def _judge_lines(st, ev, nev, force):
    """Held curtain reports whose ball is now clear of its line or at rest, decided; with
    ``force`` (a new shot, the tracker gone, the end of the input) all of them."""
    k = (st.fs[F_TRK_N] - 1) % HISTORY
    h = 0
    while h < st.fs[F_HELD_LINES_N]:
        b, line = st.held_lines[h, LH_BALL], st.held_lines[h, LH_LINE]
        how, side = _line_state(st, k, b, line_x(st.geo, line), st.held_lines[h, LH_FROM], force)
        if how == WAIT:
            h += 1
        else:
            nev = _decide_line(st, ev, nev, h, how, side)  # entry h now holds another
    return nev


@njit(cache=True)
def _decide_line(st, ev, nev, h, how, side):
    """Held report h: as the curtain said it (AS_SAID), a crossing if the ball rests on the
    other side of the line from the one it came from (BY_TRACKER), or a crossing nobody can
    confirm (UNDECIDED: ``certain: false``); written at its own time, in its own shot."""
    t, b, line = st.held_lines[h, LH_T], st.held_lines[h, LH_BALL], st.held_lines[h, LH_LINE]
    said, frm = st.held_lines[h, LH_DIR], st.held_lines[h, LH_FROM]
    direction, uncertain = -1, 0
    if how == AS_SAID:
        direction = said if said <= 1 else -1
    elif how == BY_TRACKER:
        direction = -1 if side == frm else (1 if side > 0 else 0)
    else:
        uncertain = 1
        if frm != 0:
            direction = 1 if frm < 0 else 0
        elif said <= 1:
            direction = said
        else:
            direction = 1 if side > 0 else 0
    if direction >= 0:
        row = _emit(st, ev, nev, t, EV_LINE_CROSS, b, line, direction, uncertain, 0, 0)
        if row >= 0:
            nev = row + 1
            ev[row, O_SHOT] = st.held_lines[h, LH_SHOT]
    last = st.fs[F_HELD_LINES_N] - 1
    st.held_lines[h] = st.held_lines[last]
    st.fs[F_HELD_LINES_N] = last
    return nev


@njit(cache=True, inline="always")
def _to_segment(px, py, ax, ay, bx, by):
    """Distance from (px, py) to the segment from (ax, ay) to (bx, by)."""
    dx, dy = bx - ax, by - ay
    n2 = dx * dx + dy * dy
    u = ((px - ax) * dx + (py - ay) * dy) / n2 if n2 > 0.0 else 0.0
    u = min(max(u, 0.0), 1.0)
    return np.hypot(px - ax - u * dx, py - ay - u * dy)


@njit(cache=True)
def _track_frame(st, rw, tracks, ev, nev, snaps, frozen, nsnap, paths, npath):
    """A BALL_TRACK frame: every decision the tracker drives, in order.

    1. the frame into the tracker history and the fit ring (:func:`_record_frame`);
    2. between shots, a ball put on or taken off the table: the layout changed;
    3. a ball moving in this frame or the last: :func:`_motion` (contacts from the
       trajectories, line crossings without the curtain, the struck ball, why a ball
       started moving);
    4. a struck ball awaited longer than ``cue_wait_us``: the shot starts without one;
       held curtain reports and soft cushion touches judged with this frame;
    5. rest averages and line sides (:func:`_average_rest`, :func:`_line_sides`), and in a
       shot the frame kept for its paths (:func:`_keep_shot_frame`);
    6. the still-table check: the shot ends, or the table rests (:func:`_still_table`).

    ``rw`` is the row, ``tracks[rw[C_TRACK]]`` its ball records.  Returns (events,
    snapshots, path points) written so far.  The steps run on every frame are
    ``inline="always"``: a call passing the state tuple costs per frame (the fusion
    of the hour capture took a fifth longer with them as calls).
    """
    t = rw[C_HUB]
    n = st.fs[F_TRK_N]  # frames before this one: it goes to k, the one before is p
    k, p = n % HISTORY, (n - 1) % HISTORY
    _record_frame(st, tracks[rw[C_TRACK]], min(rw[BT_COUNT], 16), t)
    if n >= 1 and not st.fs[F_IN_SHOT] and _layout_changed(st.trk_on[k], st.trk_on[p]):
        st.fs[F_DIRTY] = 1  # a ball put on (or taken off) the table
        st.fs[F_STILL_RUN] = -1  # the layout changed: count still frames again
    any_moving = _any_moving(st.trk_on[k], st.trk_mv[k])
    if any_moving:
        st.fs[F_LAST_ACT] = t
        if st.fs[F_IN_SHOT]:
            st.fs[F_MOVED] = 1
    if n >= 1 and (any_moving or _any_moving(st.trk_on[p], st.trk_mv[p])):
        nev, nsnap = _motion(st, ev, nev, snaps, frozen, nsnap, t)
    if st.fs[F_STRUCK_UNKNOWN] and t > st.fs[F_CUE_T] + st.prm[PR_CUE_WAIT_US]:
        nev, nsnap = _start_shot_event(st, ev, nev, NO_BALL, snaps, frozen, nsnap, TRACKED)
    if st.fs[F_HELD_LINES_N]:  # curtain reports waiting for where their ball stops
        nev = _judge_lines(st, ev, nev, False)
    if st.fs[F_IN_SHOT] or _watching(st):  # cushion touches too soft for the rails
        nev = _soft_touches(st, ev, nev)
    _average_rest(st.trk_on[k], st.trk_mv[k], st.trk_xy[k], st.rest_xy, st.rest_n)
    _line_sides(st.geo, st.trk_on[k], st.trk_xy[k], st.line_side)
    if st.fs[F_IN_SHOT]:
        _keep_shot_frame(st, k, t)
    return _still_table(st, ev, nev, t, any_moving, snaps, frozen, nsnap, paths, npath)


@njit(cache=True, inline="always")
def _record_frame(st, balls, count, t):
    """A frame's first ``count`` ball records (``balls``: (16, 6) uint8, ICD BALL_TRACK:
    ball, state, x and y in 0.1 mm little-endian) at hub time t, as the newest of the
    ``HISTORY`` tracker frames (``trk_*``) and of the fit ring (``fit_*``, where an occluded
    ball is not seen: its position is the tracker's guess)."""
    n = st.fs[F_TRK_N]
    k = n % HISTORY
    st.trk_t[k] = t
    st.trk_on[k, :] = 0
    st.trk_mv[k, :] = 0
    f = st.fs[F_FIT_N] % FIT_FRAMES
    st.fit_t[f] = t
    st.fit_ok[f, :] = 0
    for j in range(count):
        b = balls[j, 0]
        if b < 16:
            st.trk_on[k, b] = 1
            st.trk_mv[k, b] = 1 if balls[j, 1] & MOVING_BITS else 0
            st.trk_xy[k, b, 0] = (np.int64(balls[j, 2]) | np.int64(balls[j, 3]) << 8) / 10.0
            st.trk_xy[k, b, 1] = (np.int64(balls[j, 4]) | np.int64(balls[j, 5]) << 8) / 10.0
            st.fit_ok[f, b] = 0 if balls[j, 1] & OCCLUDED else 1
            st.fit_xy[f, b, 0] = st.trk_xy[k, b, 0]
            st.fit_xy[f, b, 1] = st.trk_xy[k, b, 1]
    st.fs[F_TRK_N] = n + 1
    st.fs[F_FIT_N] += 1


@njit(cache=True, inline="always")
def _layout_changed(on, on_before):
    """A ball is on the table in one frame and not in the other (``on``: (16,) per ball)."""
    for b in range(16):
        if on[b] != on_before[b]:
            return True
    return False


@njit(cache=True, inline="always")
def _any_moving(on, mv):
    """A ball on the table is moving or spinning in this frame (``on``, ``mv``: (16,))."""
    for b in range(16):
        if on[b] and mv[b]:
            return True
    return False


@njit(cache=True, inline="always")
def _motion(st, ev, nev, snaps, frozen, nsnap, t):
    """The newest frame (k, hub time t) and the one before (p), a ball moving in either:
    the decisions motion drives, in order.

    Balls still in p and moving in k are marked (``started``; ``moved[:, 2]`` their
    start); contacts are derived from the trajectories (:func:`_trajectory_contacts`) and,
    without the curtain, line crossings (:func:`_tracked_line_crossings`); a tip contact
    awaiting its struck ball may get it (:func:`_struck`); every other ball that started
    is explained by a contact or becomes a ball_moved candidate (:func:`_started_moving`).
    Returns (events, snapshots).
    """
    n = st.fs[F_TRK_N] - 1  # the frames before the newest
    k, p, q = n % HISTORY, (n - 1) % HISTORY, (n - 2) % HISTORY
    dt = float(t - st.trk_t[p])
    started = st.started
    for b in range(16):
        started[b] = st.trk_on[k, b] and st.trk_on[p, b] and st.trk_mv[k, b] and not st.trk_mv[p, b]
        if started[b]:
            st.moved[b, 2] = t
    vel = st.velocity
    _velocities(st.trk_t, st.trk_xy, st.trk_on, st.trk_mv, n, p, q, vel)
    nev = _trajectory_contacts(st, ev, nev, k, p, vel, dt)
    if ((st.fs[F_PRESENT] >> LINES) & 1) == 0:
        nev = _tracked_line_crossings(st, ev, nev, k, p, dt)
    # the struck ball: the first to start moving after the tip contact
    if st.fs[F_STRUCK_UNKNOWN] and t > st.fs[F_CUE_T]:
        best = _struck(st, st.fs[F_CUE_T] - CUE_GRACE_US)
        if best >= 0:
            started[best] = False
            st.moved[best, 1] = -1
            nev, nsnap = _start_shot_event(st, ev, nev, best, snaps, frozen, nsnap, TRACKED)
    # other balls that start moving: hit by a neighbour, or moved by hand (item 17)
    for b in range(16):
        if started[b]:
            nev = _started_moving(st, ev, nev, b, k, p, vel, dt, t)
    return nev, nsnap


@njit(cache=True, inline="always")
def _velocities(trk_t, trk_xy, trk_on, trk_mv, n, p, q, vel):
    """``vel[b]``: ball b's velocity (mm/µs) from frame q to frame p (the two before the
    newest), 0 where b was not moving in p or not on the table in both; ``n`` frames came
    before the newest (under 2: no such pair, all 0)."""
    vel[:, :] = 0.0
    if n < 2 or trk_t[p] <= trk_t[q]:
        return
    for b in range(16):
        if trk_on[p, b] and trk_on[q, b] and trk_mv[p, b]:
            vel[b, 0], vel[b, 1] = step_velocity(
                trk_xy[q, b, 0],
                trk_xy[q, b, 1],
                trk_xy[p, b, 0],
                trk_xy[p, b, 1],
                trk_t[p] - trk_t[q],
            )


@njit(cache=True, inline="always")
def _trajectory_contacts(st, ev, nev, k, p, vel, dt):
    """Contacts seen in the trajectories between frames p and k (``dt`` µs apart).

    Two balls, either moving in p, whose straight-line motion at ``vel`` would overlap in k
    by more than ``CONTACT_TOLERANCE_MM``, that did not overlap in p already (seen then, or a
    tracker merge), and of which one turned off its line by ``DEVIATION_MM`` (two balls
    rolling in touch do not): a contact at the time their centres were one diameter apart
    (:func:`_derive`).
    """
    D = st.geo[G_D]
    xy, on, mv = st.trk_xy, st.trk_on, st.trk_mv
    for i in range(16):
        if not (on[k, i] and on[p, i]):
            continue
        for j in range(i + 1, 16):
            if not (on[k, j] and on[p, j]) or not (mv[p, i] or mv[p, j]):
                continue
            # predicted from the last velocities: would they overlap now?
            pix, piy = carry(xy[p, i, 0], xy[p, i, 1], vel[i, 0], vel[i, 1], dt)
            pjx, pjy = carry(xy[p, j, 0], xy[p, j, 1], vel[j, 0], vel[j, 1], dt)
            if np.hypot(pix - pjx, piy - pjy) >= D - CONTACT_TOLERANCE_MM:
                continue
            if np.hypot(xy[p, i, 0] - xy[p, j, 0], xy[p, i, 1] - xy[p, j, 1]) < (
                D - CONTACT_TOLERANCE_MM
            ):
                continue  # already overlapping in the last frame: seen then, or a tracker merge
            dev = max(
                np.hypot(xy[k, i, 0] - pix, xy[k, i, 1] - piy),
                np.hypot(xy[k, j, 0] - pjx, xy[k, j, 1] - pjy),
            )
            if dev < DEVIATION_MM:
                continue
            s = _contact_time(xy[p, i], xy[p, j], vel[i], vel[j], D, dt)
            nev = _derive(st, ev, nev, st.trk_t[p] + np.int64(s), i, j)
    return nev


@njit(cache=True)
def _tracked_line_crossings(st, ev, nev, k, p, dt):
    """No curtain: a ball whose centre changed side of a line (x = L/2, L/4) between frames
    p and k (``dt`` µs apart), moving in either, crossed it at the time interpolated along
    its step (direction 1 towards +x, 0 towards -x)."""
    for b in range(16):
        if not (st.trk_on[k, b] and st.trk_on[p, b] and (st.trk_mv[k, b] or st.trk_mv[p, b])):
            continue
        for line in range(2):
            lx = line_x(st.geo, line)
            x0, x1 = st.trk_xy[p, b, 0], st.trk_xy[k, b, 0]
            if (x0 >= lx) != (x1 >= lx):
                tau = st.trk_t[p] + np.int64(dt * (lx - x0) / (x1 - x0))
                direction = 1 if x1 > x0 else 0
                nev = _push(st, ev, nev, tau, EV_LINE_CROSS, b, line, direction, 0, 0, 0)
    return nev


@njit(cache=True)
def _started_moving(st, ev, nev, b, k, p, vel, dt, t):
    """Ball b, still in frame p, moves in frame k (hub time t): what set it going.

    A contact of it since ``CAUSE_US`` before p (:func:`_caused`); else a mover that passed
    within ``NEIGHBOUR_MM`` of touching it between the frames (:func:`_mover_near`): a
    contact derived at the time the mover came one diameter from it; else nothing known:
    a ball_moved candidate, which a tip contact stamped up to ``CUE_GRACE_US`` later may
    still claim (item 17), and between shots a change of layout.
    """
    st.fs[F_MOVED] = 1
    if _caused(st, b, st.trk_t[p] - CAUSE_US):
        return nev
    o = _mover_near(st, b, k, p)
    if o >= 0:
        s = _contact_time(st.trk_xy[p, o], st.trk_xy[p, b], vel[o], vel[b], st.geo[G_D], dt)
        tau = st.trk_t[p] + np.int64(s if 0.0 < s < dt else dt / 2)
        return _derive(st, ev, nev, tau, min(b, o), max(b, o))
    st.moved[b, 0], st.moved[b, 1] = st.trk_t[p], t
    st.fs[F_MOVED_N] += 1
    if not st.fs[F_IN_SHOT]:
        st.fs[F_DIRTY] = 1
    return nev


@njit(cache=True)
def _caused(st, b, since):
    """A contact explains ball b starting to move: a click held since the tip contact (the
    struck ball's clicks are judged with it), a contact of b since hub time ``since``, or a
    trajectory contact of b held for its click, stamped since then."""
    if st.fs[F_HELD_CLICKS_N] > 0:
        return True
    for o in range(16):
        if o != b and st.pair_t[min(b, o), max(b, o)] >= since:
            return True
    for q in range(st.fs[F_HELD_CONTACTS_N]):
        held = st.held_contacts[q]
        if (held[1] == b or held[2] == b) and held[0] >= since:
            return True
    return False


@njit(cache=True)
def _mover_near(st, b, k, p):
    """The ball moving in frame p or k whose course from p to k came nearest ball b, within
    ``NEIGHBOUR_MM`` of touching it, or -1 (a frame exposed as it struck shows it there).

    b is where it rested (its rest average) or, not yet averaged, where frame p has it.
    """
    bx, by = st.trk_xy[p, b, 0], st.trk_xy[p, b, 1]
    if st.rest_n[b] > 0:
        bx, by = st.rest_xy[b, 0], st.rest_xy[b, 1]
    best, best_d = -1, st.geo[G_D] + NEIGHBOUR_MM
    xy = st.trk_xy
    for o in range(16):
        if o == b or not st.trk_on[k, o] or not (st.trk_mv[k, o] or st.trk_mv[p, o]):
            continue
        a = p if st.trk_on[p, o] else k
        d = _to_segment(bx, by, xy[a, o, 0], xy[a, o, 1], xy[k, o, 0], xy[k, o, 1])
        if d < best_d:
            best, best_d = o, d
    return best


@njit(cache=True, inline="always")
def _average_rest(on, mv, xy, rest_xy, rest_n):
    """Each ball still in this frame (``on``, ``mv``: (16,), ``xy``: (16, 2) mm): its mean
    position over up to ``REST_AVERAGE_FRAMES`` still frames, beating the tracker's 0.7 mm
    noise; a ball moving or off the table starts again (``rest_n`` 0)."""
    for b in range(16):
        if on[b] and not mv[b]:
            rest_n[b] = min(rest_n[b] + 1, REST_AVERAGE_FRAMES)
            rest_xy[b, 0] += (xy[b, 0] - rest_xy[b, 0]) / rest_n[b]
            rest_xy[b, 1] += (xy[b, 1] - rest_xy[b, 1]) / rest_n[b]
        else:
            rest_n[b] = 0


@njit(cache=True, inline="always")
def _line_sides(geo, on, xy, line_side):
    """``line_side[b, line]``: the side (-1, +1) of each line ball b was last seen clearly
    on, more than ``LINE_ZONE_MM`` from it (where a held curtain touch's ball came from)."""
    for b in range(16):
        if on[b]:
            for line in range(2):
                off = xy[b, 0] - line_x(geo, line)
                if abs(off) > LINE_ZONE_MM:
                    line_side[b, line] = 1 if off > 0 else -1


@njit(cache=True, inline="always")
def _keep_shot_frame(st, k, t):
    """Tracker frame k (hub time t) kept as the shot's next (``shot_*``) for its balls'
    paths; beyond ``SHOT_FRAMES`` a frame is counted (``F_SHOT_FRAMES_CUT``): paths end."""
    i = st.fs[F_SHOT_FRAMES_N]
    if i >= SHOT_FRAMES:
        st.fs[F_SHOT_FRAMES_CUT] += 1
        return
    st.shot_t[i] = t
    for b in range(16):
        st.shot_xy[i, b, 0] = st.trk_xy[k, b, 0]
        st.shot_xy[i, b, 1] = st.trk_xy[k, b, 1]
        st.shot_on[i, b] = st.trk_on[k, b]
        st.shot_mv[i, b] = st.trk_mv[k, b]
    st.fs[F_SHOT_FRAMES_N] = i + 1


@njit(cache=True, inline="always")
def _still_table(st, ev, nev, t, any_moving, snaps, frozen, nsnap, paths, npath):
    """The still-table check after a frame at hub time t.

    Every ball still (spinning counts as moving) for ``still_frames`` frames ends the shot,
    at the first still frame, once its struck ball is decided and something moved; outside
    a shot, ``rest_frames`` of them after a change (``F_DIRTY``) are a rest event with the
    layout.  A frame with motion, or a layout change (``F_STILL_RUN`` -1), starts the count
    again.  Returns (events, snapshots, path points).
    """
    if any_moving or st.fs[F_STILL_RUN] < 0:
        st.fs[F_STILL_RUN] = 0
        return nev, nsnap, npath
    if st.fs[F_STILL_RUN] == 0:
        st.fs[F_STILL_T] = t
    st.fs[F_STILL_RUN] += 1
    if st.fs[F_IN_SHOT] and st.fs[F_STILL_RUN] >= st.prm[PR_STILL_FRAMES]:
        if not st.fs[F_STRUCK_UNKNOWN] and st.fs[F_MOVED]:
            still_t = st.fs[F_STILL_T]
            return _end_shot(
                st, ev, nev, still_t, FLAG_CERTAIN, snaps, frozen, nsnap, paths, npath, TRACKED
            )
    elif not st.fs[F_IN_SHOT] and st.fs[F_STILL_RUN] >= st.prm[PR_REST_FRAMES] and st.fs[F_DIRTY]:
        row = _emit(st, ev, nev, st.fs[F_STILL_T], EV_REST, NO_BALL, 0, 0, 0, 0, 0)
        if row >= 0:
            nev = row + 1
            if nsnap < snaps.shape[0]:
                ev[row, O_SNAP] = nsnap
                nsnap = _snapshot(st, snaps, frozen, nsnap, t)
            else:
                st.fs[F_SNAPS_CUT] += 1
        st.fs[F_DIRTY] = 0
    return nev, nsnap, npath


@njit(cache=True)
def _quiet_end(st, ev, nev, upto, snaps, frozen, nsnap, paths, npath):
    """No live tracker: a shot ends ``quiet_us`` after the last sensor activity (uncertain)."""
    if st.fs[F_IN_SHOT] and not _tracker_alive(st):
        deadline = st.fs[F_LAST_ACT] + st.prm[PR_QUIET_US]
        if deadline <= upto:
            if st.fs[F_STRUCK_UNKNOWN]:
                nev, nsnap = _start_shot_event(
                    st, ev, nev, NO_BALL, snaps, frozen, nsnap, UNTRACKED
                )
            nev, nsnap, npath = _end_shot(
                st, ev, nev, deadline, NO_FLAGS, snaps, frozen, nsnap, paths, npath, UNTRACKED
            )
    return nev, nsnap, npath


@njit(cache=True)
def fuse(st, store, synthetic, index, tracks, upto, ev, snaps, frozen, paths):
    """Rows in hub order -> event records; returns (events, snapshots, path points, safe time).

    The rows are ``store[index[i]]`` (``synthetic[index[i] - len(store)]``
    past the store): the timeline's release order, without copying rows.
    A driver, as ``rules.referee.Referee.feed`` is: before each row the timers
    that are armed fire at its hub time (held contacts, ball_moved candidates,
    held clicks and cushion hits, the quiet end of a shot without tracker);
    then the row goes to the step for its type.  At ``upto`` the timers fire
    once more and the safe time is taken (:func:`_safe_time`).
    """
    n_store = len(store)
    nev = np.int64(0)  # not a literal 0: see NO_BALL
    nsnap = np.int64(0)
    npath = np.int64(0)
    for i in range(len(index)):
        r = index[i]
        rw = store[r] if r < n_store else synthetic[r - n_store]
        t = rw[C_HUB]
        mtype = rw[C_TYPE]
        # timers; called only when armed: the state tuple is a costly argument per row
        if st.fs[F_IN_SHOT]:
            nev, nsnap, npath = _quiet_end(st, ev, nev, t, snaps, frozen, nsnap, paths, npath)
        if st.fs[F_HELD_CONTACTS_N]:
            nev = _release_derived(st, ev, nev, t)
        if st.fs[F_MOVED_N]:
            nev = _release_moved(st, ev, nev, t)
        if st.fs[F_HELD_CLICKS_N]:
            nev = _release_held(st, ev, nev, t)
        if st.fs[F_HELD_HITS_N]:
            nev = _release_frozen(st, ev, nev, t)
        st.fs[F_NOW] = max(st.fs[F_NOW], t)
        tracked = _tracker_alive(st)
        if mtype == T_TRACK:
            if _tracker_up(st):
                nev, nsnap, npath = _track_frame(
                    st, rw, tracks, ev, nev, snaps, frozen, nsnap, paths, npath
                )
        elif mtype == T_CUSHION:
            nev = _cushion_hit(st, ev, nev, rw, tracked)
        elif mtype == T_POCKET:
            nev = _pocket_drop(st, ev, nev, rw, tracked)
        elif mtype == T_LINE:
            nev = _line_cross(st, ev, nev, rw, tracked)
        elif mtype == T_CLICK:
            nev = _ball_click(st, ev, nev, rw, tracked)
        elif mtype == T_CUE:
            nev, nsnap, npath = _cue_contact(
                st, ev, nev, rw, tracked, snaps, frozen, nsnap, paths, npath
            )
        elif mtype == T_KEYPAD:
            nev = _push(st, ev, nev, t, EV_KEYPAD, -1, rw[KP_KEY], rw[KP_ARG], 0, 0, 0)
        elif mtype == T_NODE_STATUS or mtype == NODE_SILENT or mtype == NODE_BACK:
            nev = _node_status(st, ev, nev, rw, mtype)
        elif mtype == T_HELLO:
            nev, nsnap, npath = _hello(st, ev, nev, rw, tracked, snaps, frozen, nsnap, paths, npath)
    nev, nsnap, npath = _quiet_end(st, ev, nev, upto, snaps, frozen, nsnap, paths, npath)
    nev = _release_derived(st, ev, nev, upto)
    nev = _release_moved(st, ev, nev, upto)
    if st.fs[F_HELD_CLICKS_N]:
        nev = _release_held(st, ev, nev, upto)
    if st.fs[F_HELD_HITS_N]:
        nev = _release_frozen(st, ev, nev, upto)
    st.fs[F_NOW] = max(st.fs[F_NOW], upto)
    return nev, nsnap, npath, _safe_time(st)


@njit(cache=True)
def _pocket_drop(st, ev, nev, rw, tracked):
    """A POCKET_DROP row: a pocket event, given (tracker alive) to the ball carried nearest
    the pocket, with its colour (0, 1; else -1: not known)."""
    t, pocket = rw[C_HUB], rw[PD_POCKET]
    if not 0 <= pocket < 6:
        return nev
    ball = -1
    if tracked:
        xy, on, pen = st.carried_xy, st.carried_on, st.carried_pen
        _carried(st, t, xy, on, pen)
        px, py = pocket_xy(st.geo, pocket)
        ball = nearest_ball(xy, on, pen, px, py, ATTRIBUTION_LIMIT_MM)
    colour = rw[PD_COLOUR]
    nev = _push(st, ev, nev, t, EV_POCKET, ball, pocket, colour if colour <= 1 else -1, 0, 0, 0)
    st.fs[F_LAST_ACT] = t
    return nev


@njit(cache=True)
def _line_cross(st, ev, nev, rw, tracked):
    """A LINE_CROSS row from the curtain (direction 0/1 a crossing, 2 a touch): given (tracker
    alive) to the ball carried nearest its place on the line, then reported or held
    (:func:`_line_report`)."""
    t = rw[C_HUB]
    st.fs[F_LAST_ACT] = t
    line, direction = rw[LC_LINE], rw[LC_DIR]
    if direction > 2 or not 0 <= line <= 1:
        return nev
    ball = -1
    if tracked:
        xy, on, pen = st.carried_xy, st.carried_on, st.carried_pen
        _carried(st, t, xy, on, pen)
        lx, ly = line_x(st.geo, line), float(rw[LC_POS])
        ball = nearest_ball(xy, on, pen, lx, ly, ATTRIBUTION_LIMIT_MM)
    return _line_report(st, ev, nev, t, line, direction, ball)


@njit(cache=True)
def _ball_click(st, ev, nev, rw, tracked):
    """A BALL_CLICK row: judged at once in a shot whose struck ball is known (:func:`_click`).

    Otherwise held (``held_clicks``): the struck ball is not known yet, or, between shots,
    a tip contact stamped just after may own it (a cue ball frozen to others: a cluster
    struck).  A click finding no room to wait is counted and judged at once.
    """
    t, x, y = rw[C_HUB], rw[BC_X], rw[BC_Y]
    if st.fs[F_IN_SHOT] and not st.fs[F_STRUCK_UNKNOWN]:
        return _click(st, ev, nev, t, x, y, tracked)
    h = st.fs[F_HELD_CLICKS_N]
    if h < HELD_CLICKS:
        st.held_clicks[h, 0], st.held_clicks[h, 1], st.held_clicks[h, 2] = t, x, y
        st.fs[F_HELD_CLICKS_N] = h + 1
        return nev
    st.fs[F_HELD_CUT] += 1  # none can wait: judged at once
    return _click(st, ev, nev, t, x, y, tracked)


@njit(cache=True)
def _cue_contact(st, ev, nev, rw, tracked, snaps, frozen, nsnap, paths, npath):
    """A CUE_CONTACT row: the tip struck; then its cue_contact event.

    Within ``double_hit_us`` of the shot's first tip contact it is the same stroke (item
    18).  Otherwise held curtain reports are settled with what is known (their balls are
    struck again), a shot still running ends ``interrupted`` (14.2; its struck ball never
    known: none), and a new shot starts (:func:`_new_shot`).  Returns (events, snapshots,
    path points).
    """
    t = rw[C_HUB]
    same_stroke = st.fs[F_IN_SHOT] and t - st.fs[F_FIRST_CUE_T] <= st.prm[PR_DOUBLE_HIT_US]
    if not same_stroke:
        if st.fs[F_HELD_LINES_N]:
            nev = _judge_lines(st, ev, nev, True)
        if st.fs[F_IN_SHOT]:
            if st.fs[F_STRUCK_UNKNOWN]:
                nev, nsnap = _start_shot_event(st, ev, nev, NO_BALL, snaps, frozen, nsnap, tracked)
            flags = FLAG_CERTAIN | FLAG_INTERRUPTED if tracked else NO_FLAGS
            nev, nsnap, npath = _end_shot(
                st, ev, nev, t, flags, snaps, frozen, nsnap, paths, npath, tracked
            )
        nev, nsnap = _new_shot(st, ev, nev, t, rw[CUE_DUR], tracked, snaps, frozen, nsnap)
    nev = _push(st, ev, nev, t, EV_CUE_CONTACT, -1, rw[CUE_DUR], rw[CUE_FORCE], 0, 0, 0)
    st.fs[F_LAST_ACT] = t
    return nev, nsnap, npath


@njit(cache=True)
def _new_shot(st, ev, nev, t, duration, tracked, snaps, frozen, nsnap):
    """A new shot from a tip contact at hub time t that lasted ``duration`` µs.

    Clicks held in the last ``CUE_GRACE_US`` are the sensors' jitter around the tip
    contact: part of the shot, from its start.  With the tracker alive, the layout before
    the shot is kept until the struck ball is known (``layout_before``), every cushion a
    ball does not rest against is armed for soft touches, a frame may already show the
    struck ball (up to ``CUE_GRACE_US`` before the stamp), and the last frame is the
    shot's first (for paths).  Without it the shot starts at once, struck ball unknown.
    Returns (events, snapshots).
    """
    st.fs[F_SHOT] += 1
    st.fs[F_IN_SHOT] = 1
    st.fs[F_FIRST_CUE_T] = t
    st.fs[F_CUE_T] = t
    st.fs[F_CUE_DUR] = duration
    st.held_clicks[: st.fs[F_HELD_CLICKS_N], 0] = t
    st.fs[F_MOVED] = 0
    st.fs[F_STILL_RUN] = 0
    st.fs[F_SHOT_FRAMES_N] = 0
    _stop_watching(st, True)
    if not tracked:
        return _start_shot_event(st, ev, nev, NO_BALL, snaps, frozen, nsnap, UNTRACKED)
    _snapshot(st, st.layout_before, st.frozen_before, 0, t)
    st.fs[F_STRUCK_UNKNOWN] = 1
    for b in range(16):
        st.soft[b, SW_ARMED] = ALL_CUSHIONS & ~st.frozen_before[0, b]
    early = _struck(st, t - CUE_GRACE_US)
    if early >= 0:
        st.moved[early, 1] = -1
        nev, nsnap = _start_shot_event(st, ev, nev, early, snaps, frozen, nsnap, TRACKED)
    k = (st.fs[F_TRK_N] - 1) % HISTORY
    st.shot_t[0] = st.trk_t[k]
    for b in range(16):
        st.shot_xy[0, b, 0] = st.trk_xy[k, b, 0]
        st.shot_xy[0, b, 1] = st.trk_xy[k, b, 1]
        st.shot_on[0, b] = st.trk_on[k, b]
        st.shot_mv[0, b] = 0
    st.fs[F_SHOT_FRAMES_N] = 1
    return nev, nsnap


@njit(cache=True)
def _node_status(st, ev, nev, rw, mtype):
    """A node's status row: NODE_STATUS from the hub, or the timeline's NODE_SILENT /
    NODE_BACK.  Code 1 marks the node down, 0 up again; the tracker going down settles
    held curtain reports and drops its history (stale when it comes back) and the touch
    watches.  Then the node_status event (``O_C``: who said so)."""
    if mtype == T_NODE_STATUS:
        node, code, who = rw[S_PEER], rw[S_CODE], STATUS_FROM_HUB
    else:
        node, code, who = rw[P0], 1 if mtype == NODE_SILENT else 0, STATUS_SILENT
    if 0 <= node < 16:
        if code == 1:
            st.fs[F_DOWN] |= np.int64(1) << node
        elif code == 0:
            st.fs[F_DOWN] &= ~(np.int64(1) << node)
        if node == TRACKER and code == 1:
            if st.fs[F_HELD_LINES_N]:
                nev = _judge_lines(st, ev, nev, True)
            st.fs[F_TRK_N] = 0  # its history is stale when it comes back
            st.fs[F_FIT_N] = 0
            _stop_watching(st, True)
    return _push(st, ev, nev, rw[C_HUB], EV_NODE_STATUS, -1, node, code, who, 0, 0)


@njit(cache=True)
def _hello(st, ev, nev, rw, tracked, snaps, frozen, nsnap, paths, npath):
    """A HELLO row: the hub (re)booted.  A running shot ends (uncertain), held curtain
    reports are settled, the nodes present are taken from it, none down; the tracker's
    history, touch watches and rest averages restart (a run of still frames across the boot
    is no rest); the table's size is taken when it gives one.  Then the boot event.
    Returns (events, snapshots, path points)."""
    t = rw[C_HUB]
    if st.fs[F_IN_SHOT]:
        if st.fs[F_STRUCK_UNKNOWN]:
            nev, nsnap = _start_shot_event(st, ev, nev, NO_BALL, snaps, frozen, nsnap, tracked)
        nev, nsnap, npath = _end_shot(
            st, ev, nev, t, NO_FLAGS, snaps, frozen, nsnap, paths, npath, UNTRACKED
        )
    if st.fs[F_HELD_LINES_N]:
        nev = _judge_lines(st, ev, nev, True)
    st.fs[F_PRESENT] = rw[H_PRESENT] | 1
    st.fs[F_DOWN] = 0
    st.fs[F_TRK_N] = 0
    st.fs[F_FIT_N] = 0
    _stop_watching(st, True)
    st.fs[F_STILL_RUN] = 0
    st.rest_n[:] = 0
    if rw[H_LEN] > 0 and rw[H_WID] > 0 and rw[H_BALL] > 0:
        st.geo[0] = rw[H_LEN]
        st.geo[1] = rw[H_WID]
        st.geo[2] = rw[H_BALL] / 1000.0
    boot, present = rw[H_BOOT], rw[H_PRESENT]
    length, width, ball = rw[H_LEN], rw[H_WID], rw[H_BALL]
    nev = _push(st, ev, nev, t, EV_BOOT, -1, boot, present, length, width, ball)
    return nev, nsnap, npath


@njit(cache=True)
def _safe_time(st):
    """The earliest hub time a later emission may still carry: ``now``, held back by every
    decision still open -- trajectory contacts and clicks held, ball_moved candidates, the
    newest tracker frame and a still run that may end the shot or rest the table, a struck
    ball awaited, curtain reports held, touch watches, cushion hits of frozen balls held."""
    safe = st.fs[F_NOW]
    for q in range(st.fs[F_HELD_CONTACTS_N]):
        safe = min(safe, st.held_contacts[q, 0])
    if st.fs[F_HELD_CLICKS_N]:
        safe = min(safe, st.held_clicks[0, 0])
    for b in range(16):
        if st.moved[b, 1] >= 0:
            safe = min(safe, st.moved[b, 0])
    if _tracker_alive(st):
        safe = min(safe, st.trk_t[(st.fs[F_TRK_N] - 1) % HISTORY])
        if st.fs[F_STILL_RUN] > 0 and (st.fs[F_IN_SHOT] or st.fs[F_DIRTY]):
            safe = min(safe, st.fs[F_STILL_T])
    if st.fs[F_STRUCK_UNKNOWN]:
        safe = min(safe, st.fs[F_CUE_T])
    for h in range(st.fs[F_HELD_LINES_N]):
        safe = min(safe, st.held_lines[h, LH_T])
    for b in range(16):
        if st.soft[b, SW_C] >= 0:
            safe = min(safe, st.soft[b, SW_T0])
        if st.held_hits[b, 0] >= 0:
            safe = min(safe, st.held_hits[b, 0])
    return safe


@njit(cache=True)
def settle(st, ev):
    """End of the input: the curtain reports still held are decided with what is known
    (:func:`_judge_lines`), held cushion hits of frozen balls written at their own time, and
    touches still watched for given up (undecided: none); returns how many events that wrote
    into ``ev`` (room for ``LINE_HELD`` + 16)."""
    nev = _judge_lines(st, ev, np.int64(0), True)
    for b in range(16):
        if st.held_hits[b, 0] >= 0:
            nev = _write_frozen_hit(st, ev, nev, b, st.held_hits[b, 0])
    _stop_watching(st, False)
    return nev
