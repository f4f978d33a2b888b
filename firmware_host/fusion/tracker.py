"""Where the balls are: the tracker's frames, carried to any hub time, and rest averages.

Every event the tracker can attribute (a cushion hit, a pocket drop, a line
crossing, a click) is given to the ball whose position, carried from its
last two tracker frames to the event's hub time, is nearest the place the
sensor names; balls at rest pay a penalty (``AT_REST_PENALTY_MM``), since
they do not hit cushions or fall unless driven.  No live tracker: no ball
(``ball`` -1, EVENTS.md's null).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .geometry import carry_step, step_velocity
from .state import (
    BALLS,
    CUE_T,
    FRAMES_SEEN,
    HISTORY,
    IN_SHOT,
    NODES_DOWN,
    NODES_FLOODED,
    NODES_PRESENT,
    REST_AVERAGE_FRAMES,
    RING_FRAMES,
    RING_SEEN,
    TRACKER,
    Shot,
    Stream,
    Tracker,
    X,
    Y,
)

MOVING_BITS = 3  # BALL_TRACK.state: moving | spinning in place (item 14.1: spinning is moving)
OCCLUDED = 4  # BALL_TRACK.state bit 2: position predicted, not seen
# A ball at rest hits a cushion or drops only when driven (a frozen ball pushed into
# its cushion): a small handicap, so position (the sensor's pos_mm) decides.
AT_REST_PENALTY_MM = 20.0
ATTRIBUTION_LIMIT_MM = 300.0
# a ball still in one frame and moving in the next, struck by a contact between them, has moved
# since that contact: its speed is its step over that time (at least this long: a step of
# tracker noise over a few µs is no speed)
START_SPAN_US = 1_000


@njit(cache=True, inline="always")
def node_up(stream: Stream, node) -> bool:
    """``node`` is present (the last HELLO), not reported down since and not flooding."""
    present = (stream.state[NODES_PRESENT] >> node) & 1
    down = stream.state[NODES_DOWN] | stream.state[NODES_FLOODED]
    return present != 0 and ((down >> node) & 1) == 0


@njit(cache=True, inline="always")
def tracker_up(stream: Stream) -> bool:
    """The tracker node is up: its frames are used."""
    return node_up(stream, TRACKER)


@njit(cache=True, inline="always")
def tracker_alive(stream: Stream, tracker: Tracker) -> bool:
    """The tracker is up and has sent a frame since it came up: events are attributed to
    balls (its positions are not stale)."""
    return tracker_up(stream) and tracker.state[FRAMES_SEEN] > 0


@njit(cache=True, inline="always")
def alive(stream_state, tracker_state) -> bool:
    """:func:`tracker_alive` from the two arrays it reads (``Stream.state``,
    ``Tracker.state``): a step given the NamedTuples binds, and counts a reference to,
    every array in them, which per row of the fusion's driver cost more than the test."""
    present = (stream_state[NODES_PRESENT] >> TRACKER) & 1
    down = ((stream_state[NODES_DOWN] | stream_state[NODES_FLOODED]) >> TRACKER) & 1
    return present != 0 and down == 0 and tracker_state[FRAMES_SEEN] > 0


@njit(cache=True)
def step_us(tracker: Tracker, hit_t, shot: Shot, newest, before, ball):
    """µs of motion behind ``ball``'s step from frame ``before`` to frame ``newest``.

    The frames' interval, unless the ball was still in ``before`` and a
    contact (the tip, a click, a trajectory contact: ``hit_t``) set it
    going between them: then the time since that contact (a ball struck 1 ms
    before the newest frame has moved 1 ms worth, not a frame's worth: its
    speed taken over the whole interval was 6 times too low, and a click
    8 ms later was given to the wrong pair).
    """
    frame_t = tracker.frame_t
    span = frame_t[newest] - frame_t[before]
    if not tracker.frame_moving[before, ball]:
        start = hit_t[ball]
        if shot.state[IN_SHOT] and shot.state[CUE_T] < frame_t[newest]:
            start = max(start, shot.state[CUE_T])
        if frame_t[before] < start < frame_t[newest]:
            span = max(frame_t[newest] - start, min(START_SPAN_US, span))
    return span


@njit(cache=True)
def carried(tracker: Tracker, hit_t, shot: Shot, hub_t, positions, on_table, penalty):
    """Every ball's position carried from its last two frames to ``hub_t`` into
    ``positions`` (16, 2), with ``on_table`` (16,) and its attribution ``penalty`` (16,) mm."""
    seen = tracker.state[FRAMES_SEEN]
    newest = (seen - 1) % HISTORY
    before = (seen - 2) % HISTORY
    frame_t, frame_xy = tracker.frame_t, tracker.frame_xy
    frame_on, moving = tracker.frame_on, tracker.frame_moving
    for b in range(BALLS):
        on_table[b] = frame_on[newest, b]
        positions[b, X] = frame_xy[newest, b, X]
        positions[b, Y] = frame_xy[newest, b, Y]
        penalty[b] = 0.0 if moving[newest, b] else AT_REST_PENALTY_MM
        if (
            seen >= 2
            and frame_on[newest, b]
            and frame_on[before, b]
            and moving[newest, b]
            and frame_t[newest] > frame_t[before]
        ):
            f = (hub_t - frame_t[newest]) / step_us(tracker, hit_t, shot, newest, before, b)
            positions[b, X], positions[b, Y] = carry_step(
                frame_xy[before, b, X], frame_xy[before, b, Y], positions[b, X], positions[b, Y], f
            )


@njit(cache=True, inline="always")
def record_frame(tracker: Tracker, balls, count, hub_t) -> None:
    """A frame's first ``count`` ball records (``balls``: (16, 6) uint8, ICD BALL_TRACK:
    ball, state, x and y in 0.1 mm little-endian) at ``hub_t``, as the newest of the
    ``HISTORY`` frames (``frame_*``) and of the ring (``ring_*``, where an occluded ball is
    not seen: its position is the tracker's guess)."""
    seen = tracker.state[FRAMES_SEEN]
    k = seen % HISTORY
    tracker.frame_t[k] = hub_t
    tracker.frame_on[k, :] = 0
    tracker.frame_moving[k, :] = 0
    f = tracker.state[RING_SEEN] % RING_FRAMES
    tracker.ring_t[f] = hub_t
    tracker.ring_seen[f, :] = 0
    xy = tracker.frame_xy
    for j in range(count):
        b = balls[j, 0]
        if b < BALLS:
            tracker.frame_on[k, b] = 1
            tracker.frame_moving[k, b] = 1 if balls[j, 1] & MOVING_BITS else 0
            xy[k, b, X] = (np.int64(balls[j, 2]) | np.int64(balls[j, 3]) << 8) / 10.0
            xy[k, b, Y] = (np.int64(balls[j, 4]) | np.int64(balls[j, 5]) << 8) / 10.0
            tracker.ring_seen[f, b] = 0 if balls[j, 1] & OCCLUDED else 1
            tracker.ring_xy[f, b, X] = xy[k, b, X]
            tracker.ring_xy[f, b, Y] = xy[k, b, Y]
    tracker.state[FRAMES_SEEN] = seen + 1
    tracker.state[RING_SEEN] += 1


@njit(cache=True, inline="always")
def layout_changed(on_table, on_before) -> bool:
    """A ball is on the table in one frame and not in the other (``on_table``: (16,) per ball)."""
    for b in range(BALLS):
        if on_table[b] != on_before[b]:
            return True
    return False


@njit(cache=True, inline="always")
def any_moving(on_table, moving) -> bool:
    """A ball on the table is moving or spinning in this frame (``on_table``, ``moving``: (16,))."""
    for b in range(BALLS):
        if on_table[b] and moving[b]:
            return True
    return False


@njit(cache=True, inline="always")
def average_rest(on_table, moving, positions, rest_xy, rest_frames) -> None:
    """Each ball still in this frame (``on_table``, ``moving``: (16,), ``positions``: (16, 2) mm):
    its mean position over up to ``REST_AVERAGE_FRAMES`` still frames, beating the tracker's
    0.7 mm noise; a ball moving or off the table starts again (``rest_frames`` 0)."""
    for b in range(BALLS):
        if on_table[b] and not moving[b]:
            rest_frames[b] = min(rest_frames[b] + 1, REST_AVERAGE_FRAMES)
            rest_xy[b, X] += (positions[b, X] - rest_xy[b, X]) / rest_frames[b]
            rest_xy[b, Y] += (positions[b, Y] - rest_xy[b, Y]) / rest_frames[b]
        else:
            rest_frames[b] = 0


@njit(cache=True, inline="always")
def velocities(tracker: Tracker, seen, before, earlier, velocity) -> None:
    """``velocity[b]``: ball b's velocity (mm/µs) from frame ``earlier`` to frame ``before``
    (the two before the newest), 0 where b was not moving in ``before`` or not on the table
    in both; ``seen`` frames came before the newest (under 2: no such pair, all 0)."""
    frame_t, frame_xy, frame_on = tracker.frame_t, tracker.frame_xy, tracker.frame_on
    velocity[:, :] = 0.0
    if seen < 2 or frame_t[before] <= frame_t[earlier]:
        return
    for b in range(BALLS):
        if frame_on[before, b] and frame_on[earlier, b] and tracker.frame_moving[before, b]:
            velocity[b, X], velocity[b, Y] = step_velocity(
                frame_xy[earlier, b, X],
                frame_xy[earlier, b, Y],
                frame_xy[before, b, X],
                frame_xy[before, b, Y],
                frame_t[before] - frame_t[earlier],
            )
