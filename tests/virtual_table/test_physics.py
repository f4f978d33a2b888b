"""The virtual table's physics: the laws a sensor model and a referee rely on.

Every figure the sensors turn into bytes (impact times, rebound speeds,
where a ball stops, whether it drops) comes from here, so each law is
checked against its closed form.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.virtual_table.match import random_match
from firmware_host.virtual_table.physics import (
    EV_BALL,
    EV_CUSHION,
    EV_POCKET,
    G_MM_S2,
    Geometry,
    Impulse,
    PhysicsConfig,
    Table2D,
)
from firmware_host.virtual_table.physics_truth import (
    Shot,
    Timeline,
    rack_balls,
    rolling_distance_mm,
)
from firmware_host.virtual_table.truth import MOVING, SPINNING
from protocol.geometry import DEFAULT_TABLE

T = DEFAULT_TABLE
L, W, D = T.length_mm, T.width_mm, T.ball_mm
R = D / 2


def velocity_at(sim: Table2D, ball: int, t: float, before: bool) -> np.ndarray:
    """A ball's velocity just before (or at) time t, from its trajectory segments."""
    rows = [r for r in sim.segments.rows[ball] if (r[0] < t if before else r[0] <= t)]
    r = rows[-1]
    dt = t - r[0]
    return np.array([r[3] + r[5] * dt, r[4] + r[6] * dt])


def strike(
    sim: Table2D, ball: int, angle_deg: float, speed_mps: float, top: float = 0.0, t: float = 0.0
) -> None:
    for imp in Shot(ball, angle_deg, speed_mps, top=top).impulses(t):
        sim.apply(imp)


@settings(max_examples=40, deadline=None)
@given(
    offset=st.floats(-0.95, 0.95),
    speed=st.floats(0.6, 8.0),
    top=st.floats(-1.0, 1.0),
    moving_target=st.booleans(),
)
def test_ball_contact_conserves_momentum_and_parts_at_the_restitution(
    offset: float, speed: float, top: float, moving_target: bool
) -> None:
    sim = Table2D()
    sim.place(0.0, 0, (1000.0, 889.0))
    sim.place(0.0, 1, (1400.0, 889.0 + offset * D))
    if moving_target:
        strike(sim, 1, 180.0, 0.3)
    strike(sim, 0, 0.0, speed, top)
    sim.run_until()
    contacts = [e for e in sim.events if e.kind == EV_BALL]
    assert contacts, "the cue ball must reach the object ball"
    t = contacts[0].t_s
    before = [velocity_at(sim, b, t, True) for b in (0, 1)]
    after = [velocity_at(sim, b, t, False) for b in (0, 1)]
    np.testing.assert_allclose(before[0] + before[1], after[0] + after[1], atol=1e-6)
    # the line of centres at the contact: the normal parting speed is e times the closing speed
    rows = [[r for r in sim.segments.rows[b] if r[0] <= t][-1] for b in (0, 1)]
    n = np.array(rows[1][1:3]) - np.array(rows[0][1:3])
    assert np.linalg.norm(n) == pytest.approx(D, abs=1e-3)
    n /= np.linalg.norm(n)
    closing = (before[0] - before[1]) @ n
    parting = (after[1] - after[0]) @ n
    assert parting == pytest.approx(PhysicsConfig().e_ball * closing, rel=1e-6, abs=1e-3)


@pytest.mark.parametrize("mu_roll", [0.01, 0.015, 0.02])
@pytest.mark.parametrize("speed", [0.4, 0.7])
def test_a_rolling_ball_stops_after_v2_over_2_mu_g(mu_roll: float, speed: float) -> None:
    config = PhysicsConfig(mu_roll=mu_roll)
    sim = Table2D(config=config)
    sim.place(0.0, 3, (200.0, 889.0))
    sim.apply(Impulse(0.0, 3, (speed * 1000, 0.0), (speed * 1000, 0.0)))  # rolling from the start
    sim.run_until()
    expected = rolling_distance_mm(speed, config)
    assert sim.p[3, 0] - 200.0 == pytest.approx(expected, abs=1e-6)
    assert sim.t == pytest.approx(speed * 1000 / (mu_roll * G_MM_S2))


def test_a_ball_struck_without_spin_slides_then_rolls_at_five_sevenths() -> None:
    sim = Table2D()
    sim.place(0.0, 0, (300.0, 889.0))
    strike(sim, 0, 0.0, 2.0)  # a centre-ball hit: no spin at all
    sim.run_until()
    rows = sim.segments.rows[0]
    t_roll = 2 * 2000.0 / (7 * PhysicsConfig().mu_slide * G_MM_S2)
    assert rows[1][0] == pytest.approx(t_roll)
    assert math.hypot(rows[1][3], rows[1][4]) == pytest.approx(2000.0 * 5 / 7)
    assert rows[0][7] == rows[1][7] == MOVING


def test_contact_time_is_exact_not_stepped() -> None:
    """A stun ball meets a ball 300 mm away when v t - mu g t^2 / 2 = 300 (still sliding)."""
    sim = Table2D()
    sim.place(0.0, 0, (1000.0, 889.0))
    sim.place(0.0, 1, (1000.0 + D + 300.0, 889.0))
    strike(sim, 0, 0.0, 5.0)
    sim.run_until()
    a = PhysicsConfig().mu_slide * G_MM_S2
    v = 5000.0
    t = (v - math.sqrt(v * v - 2 * a * 300.0)) / a
    assert next(e.t_s for e in sim.events if e.kind == EV_BALL) == pytest.approx(t, abs=1e-12)


@pytest.mark.parametrize("e_cushion", [0.55, 0.7, 0.4])
@pytest.mark.parametrize(
    ("start", "angle", "cushion"),
    [
        ((1000.0, 889.0), 180.0, 0),
        ((1000.0, 889.0), -90.0, 1),
        ((2600.0, 889.0), 0.0, 3),
        ((2600.0, 889.0), 90.0, 4),
    ],
)
def test_a_ball_driven_straight_into_a_cushion_returns_at_the_restitution(
    e_cushion: float, start: tuple[float, float], angle: float, cushion: int
) -> None:
    sim = Table2D(config=PhysicsConfig(e_cushion=e_cushion))
    sim.place(0.0, 2, start)
    strike(sim, 2, angle, 1.5, top=1.0)
    sim.run_until()
    hit = next(e for e in sim.events if e.kind == EV_CUSHION)
    assert (hit.ball, hit.other) == (2, cushion)
    v_in = velocity_at(sim, 2, hit.t_s, True)
    v_out = velocity_at(sim, 2, hit.t_s, False)
    np.testing.assert_allclose(v_out, -e_cushion * v_in, atol=1e-6)
    assert hit.speed_mps == pytest.approx(np.linalg.norm(v_in) / 1000)


def _pocket_shot(pocket: int, offset_mm: float) -> Table2D:
    """A ball rolled at a pocket's mouth centre, its line shifted sideways by offset_mm."""
    geo = Geometry.of(T, PhysicsConfig())
    mid = (geo.mouth_a[pocket] + geo.mouth_b[pocket]) / 2
    n = geo.mouth_n[pocket]
    side = np.array([-n[1], n[0]])
    start = mid - n * 500.0 + side * offset_mm
    sim = Table2D()
    sim.place(0.0, 7, tuple(start))
    strike(sim, 7, math.degrees(math.atan2(n[1], n[0])), 1.0, top=1.0)
    sim.run_until()
    return sim


@pytest.mark.parametrize("pocket", range(6))
def test_a_ball_aimed_at_a_pockets_centre_drops(pocket: int) -> None:
    sim = _pocket_shot(pocket, 0.0)
    drops = [e for e in sim.events if e.kind == EV_POCKET]
    assert [(e.ball, e.other) for e in drops] == [(7, pocket)]
    assert not sim.present[7]
    assert not [e for e in sim.events if e.kind == EV_CUSHION]


@pytest.mark.parametrize("pocket", range(6))
@pytest.mark.parametrize("side", [-1, 1])
def test_a_ball_aimed_at_a_jaw_rebounds_off_it(pocket: int, side: int) -> None:
    opening = PhysicsConfig().corner_mm if pocket in (0, 2, 3, 5) else PhysicsConfig().middle_mm
    sim = _pocket_shot(pocket, side * opening / 2)
    assert not [e for e in sim.events if e.kind == EV_POCKET]
    assert sim.present[7]
    first = next(e for e in sim.events if e.kind == EV_CUSHION)
    geo = Geometry.of(T, PhysicsConfig())
    assert first.other in {int(geo.jaw_cushion[2 * pocket]), int(geo.jaw_cushion[2 * pocket + 1])}


@pytest.mark.parametrize(
    ("middle_mm", "offset_mm", "jaw", "drops"),
    [
        (120.0, 20.0, False, True),  # a wide pocket: clean in
        (82.5, 20.0, True, False),  # the real opening: the jaw throws it out
        (82.5, 5.0, False, True),  # the real opening, nearly straight: clean in
        (82.5, 10.0, True, True),  # clips the jaw but the centre still passes between: in
    ],
)
def test_the_pocket_opening_decides_between_jaw_and_drop(
    middle_mm: float, offset_mm: float, jaw: bool, drops: bool
) -> None:
    sim = Table2D(config=PhysicsConfig(middle_mm=middle_mm))
    sim.place(0.0, 4, (L / 2 + offset_mm, 600.0))
    strike(sim, 4, -90.0, 1.0, top=1.0)
    sim.run_until()
    assert any(e.kind == EV_CUSHION for e in sim.events) is jaw
    assert any(e.kind == EV_POCKET for e in sim.events) is drops


def test_a_full_rack_broken_at_12_mps_ends_at_rest_on_the_table_or_in_pockets() -> None:
    sim = Table2D()
    for ball, xy in rack_balls(T, 15).items():
        sim.place(0.0, ball, xy)
    sim.place(0.0, 0, (600.0, 889.0))
    apex = T.back_mark
    strike(sim, 0, math.degrees(math.atan2(apex[1] - 889.0, apex[0] - 600.0)), 12.0, top=0.3, t=1.0)
    sim.run_until()
    assert not sim.moving().any()
    on = sim.p[sim.present]
    assert ((on[:, 0] >= R - 1e-6) & (on[:, 0] <= L - R + 1e-6)).all()
    assert ((on[:, 1] >= R - 1e-6) & (on[:, 1] <= W - R + 1e-6)).all()
    gaps = np.linalg.norm(on[:, None] - on[None], axis=2) + np.eye(len(on)) * 1e9
    assert gaps.min() >= D - 1e-3
    pocketed = {e.ball for e in sim.events if e.kind == EV_POCKET}
    assert pocketed == set(np.flatnonzero(~sim.present).tolist())
    assert len([e for e in sim.events if e.kind == EV_CUSHION]) >= 5


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    angle=st.floats(-180.0, 180.0),
    speed=st.floats(0.5, 10.0),
    top=st.floats(-1.0, 1.0),
)
def test_balls_never_overlap_nor_leave_the_table(
    seed: int, angle: float, speed: float, top: float
) -> None:
    """Whatever the stroke: no ball sinks into another or through a cushion (only into a pocket)."""
    rng = np.random.default_rng(seed)
    tl = Timeline()
    placed: list[np.ndarray] = []
    while len(placed) < 7:
        xy = rng.uniform((R, R), (L - R, W - R))
        if all(np.linalg.norm(xy - q) >= D for q in placed):
            placed.append(xy)
    tl.place({b: (float(x), float(y)) for b, (x, y) in enumerate(placed)})
    tl.rest()
    tl.shot(Shot(0, angle, speed, top=top), pause_s=0.5)
    truth = tl.truth()
    t = np.linspace(0.0, truth.duration_s, 4000)
    t = np.concatenate([t, [e["t_s"] for e in truth.events]])
    xy, _, present = truth.sample(t)
    gap = np.linalg.norm(xy[:, :, None] - xy[:, None], axis=3)
    both = present[:, :, None] & present[:, None] & ~np.eye(16, dtype=bool)
    assert (gap[both] >= D - 1e-3).all()
    pockets = np.array([T.pocket_xy(k) for k in range(6)])
    near_pocket = (np.linalg.norm(xy[:, :, None] - pockets, axis=3) < 90.0).any(axis=2)
    inside = (xy[..., 0] >= R - 1e-6) & (xy[..., 0] <= L - R + 1e-6)
    inside &= (xy[..., 1] >= R - 1e-6) & (xy[..., 1] <= W - R + 1e-6)
    assert (inside | near_pocket | ~present).all()


def test_a_ball_spinning_in_place_is_moving_until_the_spin_dies() -> None:
    """Item 14.1: the shot ends only when the spin about the vertical has stopped too."""
    tl = Timeline()
    tl.place({0: (1000.0, 889.0)})
    tl.rest()
    tl.shot(Shot(0, 0.0, 0.3, top=1.0, side_rad_s=40.0), pause_s=1.0)
    truth = tl.truth()
    start = next(e["t_s"] for e in truth.events if e["type"] == "shot_start")
    end = next(e["t_s"] for e in truth.events if e["type"] == "shot_end")
    assert end - start == pytest.approx(40.0 / PhysicsConfig().spin_decel_rad_s2)
    roll_stop = start + 300.0 / (PhysicsConfig().mu_roll * G_MM_S2)
    _, state, _ = truth.sample(np.array([roll_stop - 0.1, roll_stop + 0.1, end + 0.1]))
    assert list(state[:, 0]) == [MOVING, SPINNING, 0]
    stops = [e for e in truth.events if e["type"] == "_ball_stop"]
    assert [e["t_s"] for e in stops] == [end]


def test_a_slow_ball_comes_to_rest_against_the_cushion() -> None:
    """A rebound under the freeze speed leaves the ball touching the cushion (frozen, item 20)."""
    tl = Timeline()
    tl.place({5: (800.0, R + 5.0)})
    tl.rest()
    tl.shot(Shot(5, -2.0, 0.4, top=1.0), pause_s=1.0)  # glancing into the left-front cushion
    truth = tl.truth()
    end = next(e for e in truth.events if e["type"] == "shot_end")
    rest = tl._layout(end["t_s"])
    assert rest["frozen"] == {"5": [1]}


def test_sample_agrees_with_the_events() -> None:
    truth = random_match(seed=5, minutes=1.0)
    t = np.array([e["t_s"] for e in truth.events if e["type"] == "cushion"])
    balls = np.array([e["ball"] for e in truth.events if e["type"] == "cushion"])
    xy, _, present = truth.sample(t)
    at = xy[np.arange(len(t)), balls]
    gaps = [
        T.cushion_gap(e["cushion"], *p)
        for e, p in zip([e for e in truth.events if e["type"] == "cushion"], at, strict=True)
    ]
    # a rebound off a cushion nose (gap 0) or a jaw at a pocket (beside the nose line)
    assert np.median(np.abs(gaps)) < 1e-6
    assert present[np.arange(len(t)), balls].all()
    drops = [e for e in truth.events if e["type"] == "pocket"]
    if drops:
        _, _, after = truth.sample(np.array([e["t_s"] + 1e-6 for e in drops]))
        assert not after[np.arange(len(drops)), [e["ball"] for e in drops]].any()
    xy2, _, _ = truth.sample(np.array([t[0]]))
    np.testing.assert_array_equal(xy2[0], xy[0])


def test_truth_is_json_and_deterministic() -> None:
    a = random_match(seed=11, minutes=1.0)
    b = random_match(seed=11, minutes=1.0)
    assert json.dumps(a.events) == json.dumps(b.events)
    assert json.dumps(a.verdicts) == json.dumps(b.verdicts)
    c = random_match(seed=12, minutes=1.0)
    assert json.dumps(a.events) != json.dumps(c.events)


def test_ten_random_minutes_simulate_fast() -> None:
    """The sensor model's budget is 10 s for 10 full-sensor minutes; physics takes a small part."""
    t0 = time.perf_counter()
    truth = random_match(seed=3, minutes=10.0)
    elapsed = time.perf_counter() - t0
    assert truth.duration_s >= 600.0
    shots = [e for e in truth.events if e["type"] == "shot_start"]
    assert len(shots) >= 20
    assert {e["type"] for e in truth.events} >= {
        "ball_contact",
        "cushion",
        "line_cross",
        "_ball_start",
        "rest",
    }
    assert elapsed < 5.0
