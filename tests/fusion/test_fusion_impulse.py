"""The impulse model a struck cluster is played with: collisions, the tip's push, the table engine's order.

The fusion names a struck cluster's clicks by playing the stroke forward;
these tests pin the physics it relies on, and check it against the
virtual table's engine on racks struck by the tip.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from firmware_host.fusion.impulse import E_BALL, play
from firmware_host.virtual_table.physics_truth import Shot, Timeline

D = 68.0
V = 0.002  # mm/µs (2 m/s)


def played(
    layout: list[tuple[float, float]],
    v0: tuple[float, float],
    *,
    span: float = 20_000.0,
    drive_us: float = 0.0,
    merge_us: float = 1000.0,
    touch_mm: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, float]]]:
    """Ball 0 struck with v0 among the others at rest: end positions, velocities, collisions."""
    p = np.zeros((16, 2))
    on = np.zeros(16, np.bool_)
    p[: len(layout)] = layout
    on[: len(layout)] = True
    v = np.zeros((16, 2))
    v[0] = v0
    contacts = np.zeros((64, 5))
    n = play(p, on, v, D, span, contacts, 0, drive_us, merge_us, touch_mm)
    return p, v, [(int(c[0]), int(c[1]), float(c[2])) for c in contacts[:n]]


def test_head_on_collision_at_one_diameter_passes_the_ball_speed_on():
    p, v, hits = played([(0.0, 0.0), (100.0, 0.0)], (V, 0.0))
    assert hits == [(0, 1, pytest.approx((100.0 - D) / V))]
    assert v[0, 0] == pytest.approx((1 - E_BALL) / 2 * V)
    assert v[1, 0] == pytest.approx((1 + E_BALL) / 2 * V)
    assert p[1, 0] == pytest.approx(100.0 + v[1, 0] * (20_000.0 - (100.0 - D) / V))


def test_a_ball_passing_more_than_a_diameter_aside_meets_nothing():
    p, v, hits = played([(0.0, 0.0), (100.0, D + 0.5)], (V, 0.0))
    assert hits == []
    assert p[0, 0] == pytest.approx(V * 20_000.0) and v[1].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("direction", "expected"),
    [
        (1.0, [(0, 1, 0.0), (1, 2, 0.0)]),  # into the row: the impulse runs through it
        (-1.0, []),  # away from it: nothing
    ],
)
def test_a_row_of_touching_balls_passes_the_impulse_to_its_end(direction, expected):
    _, v, hits = played([(0.0, 0.0), (D, 0.0), (2 * D, 0.0)], (direction * V, 0.0))
    assert hits == expected
    if expected:
        assert v[2, 0] > 0.9 * V and abs(v[0, 0]) < 0.1 * V and abs(v[1, 0]) < 0.1 * V


@pytest.mark.parametrize(("touch_mm", "when"), [(1.0, 0.0), (0.0, 0.5 / V)])
def test_a_measured_gap_under_the_touch_tolerance_is_touching(touch_mm, when):
    # rest positions are known to ~0.1 mm: a rack's touching balls measure a few tenths apart
    _, _, hits = played([(0.0, 0.0), (D + 0.5, 0.0)], (V, 0.0), touch_mm=touch_mm)
    assert hits == [(0, 1, pytest.approx(when))]


def test_touching_balls_are_resolved_in_the_table_engines_order():
    # ball 0 touches 1 and 2 at once: the engine takes the moving ball's partners by number
    a = math.radians(30.0)
    layout = [(0.0, 0.0), (D * math.cos(a), D * math.sin(a)), (D * math.cos(a), -D * math.sin(a))]
    _, _, hits = played(layout, (V, 0.0))
    assert [(i, j) for i, j, _ in hits[:2]] == [(0, 1), (0, 2)]


@pytest.mark.parametrize(
    ("drive_us", "cue_ball_goes_on"),
    [(1500.0, True), (0.0, False)],  # item 19: a push drives the cue ball on through the ball
)
def test_the_tip_still_on_the_struck_ball_pushes_it_through(drive_us, cue_ball_goes_on):
    _, v, hits = played([(0.0, 0.0), (D, 0.0)], (V, 0.0), drive_us=drive_us)
    assert (v[0, 0] > 0.9 * V) == cue_ball_goes_on
    assert [(i, j) for i, j, _ in hits] == [(0, 1)]  # repeated touches within 1 ms: one click


def test_collisions_of_one_pair_closer_than_the_merge_time_are_one():
    _, _, merged = played([(0.0, 0.0), (D, 0.0)], (V, 0.0), drive_us=1500.0)
    _, _, apart = played([(0.0, 0.0), (D, 0.0)], (V, 0.0), drive_us=1500.0, merge_us=0.0)
    assert len(merged) == 1 < len(apart)


@pytest.mark.parametrize(
    ("ball", "angle", "speed"),
    [(13, 180.0, 1.5), (11, 150.0, 1.5), (15, 210.0, 3.0), (3, 60.0, 2.0)],
)
def test_a_rack_struck_by_the_tip_plays_as_the_table_engine_played_it(ball, angle, speed):
    """From the engine's layout and stroke: its collisions, at its times, and its positions 8 ms on."""
    tl = Timeline(name="rack struck")
    tl.rack(15)
    tl.rest()
    tl.shot(Shot(ball, angle, speed, contact_ms=1.5), pause_s=1.0)
    truth = tl.truth()
    stroke = truth.strokes[0]
    t0, span = stroke["t_start_s"], 8000.0
    xy, _, present = truth.sample(np.array([t0 - 1e-4, t0 + span * 1e-6]))
    p, on = xy[0].copy(), present[0].copy()
    v = np.zeros((16, 2))
    v[ball] = Shot(ball, angle, speed).direction * speed / 1000
    contacts = np.zeros((64, 5))
    n = play(p, on, v, D, span, contacts, ball, 1500.0, 1000.0, 1.0)
    engine = [
        (tuple(sorted(e["balls"])), (e["t_s"] - t0) * 1e6)
        for e in truth.events
        if e["type"] == "ball_contact" and e["t_s"] - t0 < span * 1e-6
    ]
    ours = [((int(c[0]), int(c[1])), c[2]) for c in contacts[:n]]
    # the same collisions at the same µs (the order within one instant no sensor can see)
    assert sorted((round(t), pair) for pair, t in ours) == sorted(
        (round(t), pair) for pair, t in engine
    )
    assert np.abs(p - xy[1])[on].max() < 0.1
