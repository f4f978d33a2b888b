"""What the fusion keeps between calls: one NamedTuple per concern, every column named.

A capture in one call and a live stream in many calls give the same events
because nothing lives outside these arrays.  Each concern is a NamedTuple
of numpy arrays (numba passes them to the steps by reference, so a step
changes them in place); its scalars sit in a small int64 array ``state``
whose slots are named below, and every 2-D array's columns are named
constants (``held_clicks[h, CLICK_T]``, never ``held_clicks[h, 0]``).
Positions are ``(..., 2)`` float arrays indexed ``X``, ``Y``; a layout adds
``ON`` (on the table: 1.0, else 0.0).

The steps take only the concerns they touch; :class:`FusionState` holds
them all for the driver (:func:`.fuse.fuse`) and the Python edge
(:class:`.events.Fusion`), which builds it with :func:`new_state`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

BALLS = 16  # ball numbers 0 (the coloured ball) to 15
CUSHIONS = 6  # ICD §6 cushion pieces 0-5 (and pockets 0-5)
X, Y, ON = 0, 1, 2  # columns of a position, and of a layout's ball

# -- the stream: nodes and time -------------------------------------------------------------
NODES_PRESENT, NODES_DOWN, NOW, NODES_FLOODED = range(4)  # Stream.state
TRACKER, LINES, ACOUSTIC = 4, 5, 6  # ICD node numbers the fusion asks about


class Stream(NamedTuple):
    """What the hub said of its nodes, and how far the rows have come.

    ``state`` (4,) int64: ``NODES_PRESENT`` and ``NODES_DOWN`` (a bit per
    node: in the last HELLO; reported down since), ``NOW`` (the newest hub
    time seen, µs), ``NODES_FLOODED`` (a bit per node flooding the link: the
    decoder's rate limit drops its frames, protocol.ratelimit; its own bit, so
    the hub saying the node is online does not take it back).
    """

    state: np.ndarray


class Params(NamedTuple):
    """The thresholds of :class:`.events.FusionParams` as the kernels read them (int64)."""

    debounce_us: np.int64  # ring-down window (ICD §7 rails)
    debounce_ratio_pct: np.int64  # ring-down amplitude bound
    double_hit_us: np.int64  # a second tip contact this soon is the same stroke (item 18)
    quiet_us: np.int64  # no tracker: a shot ends this long after the last activity
    still_frames: np.int64  # still tracker frames that end a shot
    cue_wait_us: np.int64  # how long the struck ball is awaited
    contact_gap_us: np.int64  # one contact per pair within this window
    rest_frames: np.int64  # still frames after a change by hand: a rest event
    derived_gap_us: np.int64  # a trajectory contact this soon after a click is the same touch


# -- the tracker's frames ----------------------------------------------------------------------
HISTORY = 3  # tracker frames kept for carrying positions and velocities
RING_FRAMES = 64  # tracker frames kept for the soft-touch fits (533 ms at 120 Hz)
FRAMES_SEEN, RING_SEEN = range(2)  # Tracker.state
# a still ball's position is the mean of this many frames (0.7 mm noise each: 0.05 mm): the
# 0.1-0.5 mm gaps of a leftover cluster then time its collisions when the tip strikes it
REST_AVERAGE_FRAMES = 256


class Tracker(NamedTuple):
    """The tracker's recent frames, each ball's rest average, and per-frame scratch.

    ``state`` (2,) int64: ``FRAMES_SEEN`` (frames since the tracker came up;
    the newest is ``frame_*[(FRAMES_SEEN - 1) % HISTORY]``), ``RING_SEEN``
    (frames written into the ring ``ring_*``).
    """

    state: np.ndarray
    frame_t: np.ndarray  # (HISTORY,) int64 hub time of the last frames,
    frame_xy: np.ndarray  # (HISTORY, 16, 2) float64 positions (mm),
    frame_on: np.ndarray  # (HISTORY, 16) uint8 on the table,
    frame_moving: np.ndarray  # (HISTORY, 16) uint8 moving or spinning
    ring_t: np.ndarray  # (RING_FRAMES,) int64 the last frames again, for the fits: hub time,
    ring_xy: np.ndarray  # (RING_FRAMES, 16, 2) float64 positions,
    ring_seen: np.ndarray  # (RING_FRAMES, 16) uint8 on the table and seen (not occluded)
    rest_xy: np.ndarray  # (16, 2) float64 each still ball's averaged position
    rest_frames: np.ndarray  # (16,) int64 and how many still frames it averages (0: moving)
    carried_xy: np.ndarray  # (16, 2) float64 scratch: each ball carried to an event's time,
    carried_on: np.ndarray  # (16,) bool on the table,
    carried_penalty: np.ndarray  # (16,) float64 its attribution penalty (mm)
    started: np.ndarray  # (16,) bool scratch: still in the frame before, moving in the newest
    velocity: np.ndarray  # (16, 2) float64 scratch: velocities (mm/µs) before the newest frame


# -- the shot --------------------------------------------------------------------------------------
SHOT_FRAMES = 16384  # tracker frames kept per shot for its paths (136 s at 120 Hz)
(
    SHOT_NUMBER,  # shots started so far
    IN_SHOT,  # 1 while a shot runs
    FIRST_CUE_T,  # the shot's first tip contact (item 18's double hit is timed from it)
    CUE_T,  # its latest tip contact
    CUE_DURATION,  # how long that contact lasted (µs): it pushes on through a ball met then
    STRUCK_UNKNOWN,  # 1: the struck ball is not decided yet (layout_before kept)
    SOMETHING_MOVED,  # a ball moved in this shot
    STILL_RUN,  # tracker frames in a row with every ball still (-1: the layout changed)
    STILL_T,  # the first of them
    LAYOUT_CHANGED,  # between shots, balls were moved by hand: a rest event is due
    LAST_ACTIVITY,  # hub time of the last sensor activity (a shot without tracker ends after it)
    FRAMES_KEPT,  # the shot's tracker frames kept in frame_* (for its paths)
) = range(12)


class Shot(NamedTuple):
    """The running shot: its scalars (``state``, slots above), the layout before it, and
    its tracker frames (for the paths of its shot_end)."""

    state: np.ndarray  # (12,) int64
    layout_before: np.ndarray  # (1, 16, 3) float64 x, y, on at the tip contact
    frozen_before: np.ndarray  # (1, 16) int64 cushions each ball rests against then (bits)
    frame_t: np.ndarray  # (SHOT_FRAMES,) int64 hub time,
    frame_xy: np.ndarray  # (SHOT_FRAMES, 16, 2) float32 positions,
    frame_on: np.ndarray  # (SHOT_FRAMES, 16) uint8 on the table,
    frame_moving: np.ndarray  # (SHOT_FRAMES, 16) uint8 moving


# -- contacts -------------------------------------------------------------------------------------
HELD_CONTACTS = 64  # trajectory contacts that can wait for their click
HELD_CLICKS = 32  # clicks that can wait for a tip contact or the struck ball
PLAYED = 64  # collisions of a struck cluster matched to its clicks
CONTACTS_HELD, CLICKS_HELD, COLLISIONS_PLAYED = range(3)  # Contacts.state
CONTACT_T, CONTACT_FIRST, CONTACT_SECOND = range(3)  # held_contacts columns (first < second)
CLICK_T, CLICK_X, CLICK_Y = range(3)  # held_clicks columns


class Contacts(NamedTuple):
    """Ball-ball contacts: when each pair and ball last touched, and what waits.

    ``state`` (3,) int64: ``CONTACTS_HELD`` (rows of ``held_contacts`` in
    use), ``CLICKS_HELD`` (of ``held_clicks``), ``COLLISIONS_PLAYED`` (of
    ``played``, for the struck ball just chosen; 0: none played).
    """

    state: np.ndarray
    pair_t: np.ndarray  # (16, 16) int64 hub time of each pair's last contact (first < second)
    hit_t: np.ndarray  # (16,) int64 each ball's last contact (tip, click or derived)
    held_contacts: np.ndarray  # (HELD_CONTACTS, 3) int64 trajectory contacts awaiting a click
    held_clicks: np.ndarray  # (HELD_CLICKS, 3) int64 clicks awaiting their owner
    played: np.ndarray  # (PLAYED, 5) float64 the struck ball's stroke played (impulse.PLAY_*)


# -- ball_moved (item 17) ---------------------------------------------------------------------
MOVED_WAITING = 0  # Motion.state: balls whose ball_moved may be waiting (recounted at release)
MOVED_FROM_T, MOVED_SEEN_T, MOVED_START_T = range(3)  # Motion.moved columns


class Motion(NamedTuple):
    """Balls that started moving with nothing known to cause it (item 17's candidates).

    ``moved`` (16, 3) int64 per ball: ``MOVED_FROM_T`` the event's time (the
    last frame it was still in), ``MOVED_SEEN_T`` the frame that showed it
    moving (-1: nothing waits), ``MOVED_START_T`` the last frame it started
    moving in (any cause).
    """

    state: np.ndarray  # (1,) int64
    moved: np.ndarray


# -- lines -----------------------------------------------------------------------------------------
LINE_HELD = 32  # one held report per ball and line
LINES_HELD = 0  # Lines.state
# held_lines columns: the report's hub time, ball, line, the curtain's direction (0/1 a crossing,
# 2 a touch), the shot it belongs to, the side the ball came from (-1, +1; 0 unknown)
HELD_LINE_T, HELD_LINE_BALL, HELD_LINE_LINE, HELD_LINE_DIRECTION, HELD_LINE_SHOT, HELD_LINE_FROM = (
    range(6)
)


class Lines(NamedTuple):
    """The centre and house lines (ICD §6: line 0 at L/2, 1 at L/4)."""

    state: np.ndarray  # (1,) int64
    side: np.ndarray  # (16, 2) int64 [ball, line]: the side it was last seen clear of: -1, +1, 0
    held: np.ndarray  # (LINE_HELD, 6) int64 curtain reports held for the tracker's word


# -- cushions ------------------------------------------------------------------------------------
CUSHION_MEMORY = 16  # accepted hits per cushion a ring-down may belong to (one per ball)
HITS_HELD = 0  # Cushions.state: frozen balls' hits held for their contact
HIT_T, HIT_AMPLITUDE, HIT_POS, HIT_BALL = range(4)  # hits columns (pos, ball: -1 none)
HELD_HIT_T, HELD_HIT_CUSHION, HELD_HIT_SHOT = range(3)  # held_hits columns (t -1: none)
# watch columns: the cushion watched (-1: none), the earliest time a touch may have had, the
# shot, the cushions armed (bits), still frames in a row
WATCH_CUSHION, WATCH_SINCE, WATCH_SHOT, WATCH_ARMED, WATCH_STILL = range(5)


class Cushions(NamedTuple):
    """The cushions' memory: accepted hits (ring-down), frozen balls' hits held for their
    contact, and each ball's watch for a touch too soft for the rails."""

    state: np.ndarray  # (1,) int64
    hits: np.ndarray  # (6, CUSHION_MEMORY, 4) int64 accepted hits per cushion
    held_hits: np.ndarray  # (16, 3) int64 per ball
    watch: np.ndarray  # (16, 5) int64 per ball


class FusionState(NamedTuple):
    """Every concern, for the driver; ``table`` is :func:`.geometry.geometry`'s array (a
    HELLO may resize it), ``counters`` the :mod:`.records` counters (they outlive a call)."""

    stream: Stream
    params: Params
    table: np.ndarray
    tracker: Tracker
    shot: Shot
    contacts: Contacts
    motion: Motion
    lines: Lines
    cushions: Cushions
    counters: np.ndarray


def new_state(params: Params, table: np.ndarray, counters: np.ndarray) -> FusionState:
    """The state at the start of a stream: no frames, no shot, nothing held."""
    never = np.iinfo(np.int64).min // 2
    return FusionState(
        stream=Stream(np.zeros(4, np.int64)),
        params=params,
        table=table,
        tracker=Tracker(
            state=np.zeros(2, np.int64),
            frame_t=np.zeros(HISTORY, np.int64),
            frame_xy=np.zeros((HISTORY, BALLS, 2)),
            frame_on=np.zeros((HISTORY, BALLS), np.uint8),
            frame_moving=np.zeros((HISTORY, BALLS), np.uint8),
            ring_t=np.zeros(RING_FRAMES, np.int64),
            ring_xy=np.zeros((RING_FRAMES, BALLS, 2)),
            ring_seen=np.zeros((RING_FRAMES, BALLS), np.uint8),
            rest_xy=np.zeros((BALLS, 2)),
            rest_frames=np.zeros(BALLS, np.int64),
            carried_xy=np.zeros((BALLS, 2)),
            carried_on=np.zeros(BALLS, np.bool_),
            carried_penalty=np.zeros(BALLS),
            started=np.zeros(BALLS, np.bool_),
            velocity=np.zeros((BALLS, 2)),
        ),
        shot=Shot(
            state=np.zeros(12, np.int64),
            layout_before=np.zeros((1, BALLS, 3)),
            frozen_before=np.zeros((1, BALLS), np.int64),
            frame_t=np.zeros(SHOT_FRAMES, np.int64),
            frame_xy=np.zeros((SHOT_FRAMES, BALLS, 2), np.float32),
            frame_on=np.zeros((SHOT_FRAMES, BALLS), np.uint8),
            frame_moving=np.zeros((SHOT_FRAMES, BALLS), np.uint8),
        ),
        contacts=Contacts(
            state=np.zeros(3, np.int64),
            pair_t=np.full((BALLS, BALLS), never, np.int64),
            hit_t=np.full(BALLS, never, np.int64),
            held_contacts=np.zeros((HELD_CONTACTS, 3), np.int64),
            held_clicks=np.zeros((HELD_CLICKS, 3), np.int64),
            played=np.zeros((PLAYED, 5)),
        ),
        motion=Motion(state=np.zeros(1, np.int64), moved=np.full((BALLS, 3), -1, np.int64)),
        lines=Lines(
            state=np.zeros(1, np.int64),
            side=np.zeros((BALLS, 2), np.int64),
            held=np.zeros((LINE_HELD, 6), np.int64),
        ),
        cushions=Cushions(
            state=np.zeros(1, np.int64),
            hits=_columns((CUSHIONS, CUSHION_MEMORY), {HIT_T: never, HIT_POS: -1, HIT_BALL: -1}, 4),
            held_hits=np.full((BALLS, 3), -1, np.int64),
            watch=_columns((BALLS,), {WATCH_CUSHION: -1, WATCH_SHOT: -1}, 5),
        ),
        counters=counters,
    )


def _columns(shape: tuple[int, ...], values: dict[int, int], width: int) -> np.ndarray:
    """An int64 array of ``shape`` rows of ``width`` columns: 0 but the ``values`` given."""
    out = np.zeros((*shape, width), np.int64)
    for column, value in values.items():
        out[..., column] = value
    return out
