"""Issue 28: what a burst of contacts and a frozen cluster leave the tracker to read, each case
beside its negative twin.

Hand-built as in tests/test_fusion_edges.py (the same :class:`Story`): balls move along
straight pieces, the tracker films them at 120 Hz with its datasheet noise.  A real rack
passes the break's impulse through balls that touch within the contact time (0.2 ms), far
below a frame: the balls in its middle hand nearly all of it on and never show as moving,
while a ball at its back flies off with no mover anywhere near it.
"""

from __future__ import annotations

import math

import pytest
from test_fusion_edges import FULL, MINIMUM, NO_ACOUSTIC, Path, Story, of, unit, verdicts

from protocol.geometry import DEFAULT_TABLE
from rules.rack import rack_positions

L, D = DEFAULT_TABLE.length_mm, DEFAULT_TABLE.ball_mm
R = D / 2
T0 = 1_000_000.0  # the tip contact
RACK = {b + 1: xy for b, xy in enumerate(rack_positions(15, DEFAULT_TABLE))}


def to_the_back_cushion(ball: int, slope: float, v: float, t: float) -> tuple[Path, float, float]:
    """``ball`` leaving its rack place at ``t`` along (1, slope) at v (mm/µs) to cushion 3
    (x = L), back 100 mm from it: its path, when it hits, where along the cushion."""
    x, y = RACK[ball]
    u = unit(1.0, slope)
    run = (L - R - x) / u[0]
    at = (L - R, y + run * u[1])
    hit = t + run / v
    back = (at[0] - 100 * u[0], at[1] + 100 * u[1])
    return Path((t, x, y), (hit, *at), (hit + 100 / (0.3 * v), *back)), hit, at[1]


def rack_break(nodes: int = FULL, *, hand_on: int | None = None) -> Story:
    """The coloured ball full into a touching rack at 6 m/s.  The impulse runs through the
    rack in 0.6 ms; balls 11, 13 and 15 leave its back row for cushion 3 and every other
    rack ball stays where it was (ball 13's neighbours 8, 9, 12 and 14 never move): 12.1(2).
    ``hand_on``: 300 ms later, with the three still rolling far off, a hand moves that rack
    ball 60 mm (item 17).
    """
    v = 6e-3
    p0 = (700.0, RACK[1][1])
    touch = (RACK[1][0] - D, RACK[1][1])
    tc = T0 + (touch[0] - p0[0]) / v
    burst = tc + 600
    balls: dict[int, Path] = {0: Path((T0, *p0), (tc, *touch))}
    balls |= {b: Path((0.0, *xy)) for b, xy in RACK.items()}
    story = Story(nodes)
    last = tc
    for ball, slope, speed in ((11, -0.3, 2.8e-3), (13, 0.0, 3e-3), (15, 0.3, 3.2e-3)):
        balls[ball], hit, y = to_the_back_cushion(ball, slope, speed, burst)
        story.report(hit + 40, "CUSHION_HIT", cushion=3, pos_mm=round(y), amplitude=1500)
        last = max(last, hit)
    if hand_on is not None:
        x, y = RACK[hand_on]
        balls[hand_on] = Path((tc + 300_000, x, y), (tc + 500_000, x, y - 60))
    story.film(balls, 300_000, last + 1_500_000)
    story.report(T0 + 4, "CUE_CONTACT", duration_us=1200, peak_force_dn=600)
    if nodes >> 6 & 1:
        # the burst's clicks, along the chains the impulse ran through
        chain = ((0, 1), (1, 2), (1, 3), (2, 5), (3, 5), (5, 8), (5, 9), (8, 13), (9, 13))
        chain += ((2, 4), (4, 7), (7, 11), (3, 6), (6, 10), (10, 15))
        for i, (a, b) in enumerate(chain):
            story.click(tc + 40 * i, balls[a](tc)[:2], RACK[b])
    return story


@pytest.mark.parametrize("nodes", [FULL, NO_ACOUSTIC], ids=["clicks", "no-acoustic"])
def test_a_break_through_a_touching_rack_is_decided_with_no_ball_moved(nodes):
    """Issue 28.1: ball 13 left the rack's back with no mover near it, its neighbours at rest
    in every frame; it touched them and they the apex the coloured ball struck: it was moved
    by that contact, and the break is legal 12.1(2), not ``referee`` on 17."""
    events = rack_break(nodes).events()
    assert not of(events, "ball_moved")
    assert [e["cue_ball"] for e in of(events, "shot_start")] == [0]
    assert verdicts(events) == [(1, "legal", [], "12.1(2)")]


@pytest.mark.parametrize("nodes", [FULL, NO_ACOUSTIC], ids=["clicks", "no-acoustic"])
def test_twin_a_hand_moving_a_rack_ball_during_the_break_is_still_17(nodes):
    events = rack_break(nodes, hand_on=7).events()
    assert [e["ball"] for e in of(events, "ball_moved")] == [7]
    assert [v[:3] for v in verdicts(events)] == [(1, "foul", ["17"])]


# ---------------------------------------------------------------- a ring-down past 4 ms


def echoed_hit(echo_us: float, echo_pct: int) -> list[dict]:
    """A ball hits cushion 0 at y = 600 (no tracker: the rails alone), and the rails report a
    second CUSHION_HIT at the same place ``echo_us`` later at ``echo_pct`` % of its amplitude."""
    story = Story(MINIMUM)
    story.report(T0, "CUE_CONTACT", duration_us=1200, peak_force_dn=300)
    hit = T0 + 300_000
    story.report(hit, "CUSHION_HIT", cushion=0, pos_mm=600, amplitude=2000)
    story.report(hit + echo_us, "CUSHION_HIT", cushion=0, pos_mm=600, amplitude=20 * echo_pct)
    story.report(hit + 4_000_000, "KEYPAD", key=8, arg=0)  # the shot ends on quiet
    return of(story.events(), "cushion")


@pytest.mark.parametrize(
    ("echo_us", "echo_pct", "hits"),
    [
        (4_060, 30, 1),  # the datasheet's 4 ms, stamped 60 µs late: the impact ringing
        (4_500, 30, 2),  # past 4 ms + 4σ√2 of the stamps' jitter (4.28 ms): a second impact
        (4_060, 45, 2),  # at 45 % of the impact's amplitude: no ring-down (under 40 %)
    ],
)
def test_a_ring_down_stamped_just_past_4_ms_is_no_extra_hit(echo_us, echo_pct, hits):
    """Issue 28.4: both stamps jitter σ 50 µs (ICD §7 rails), so an echo at the datasheet's
    4 ms edge is stamped up to 0.28 ms later; two such echoes became extra hits."""
    assert len(echoed_hit(echo_us, echo_pct)) == hits


# ---------------------------------------------------------------- a frozen cluster's struck ball


def frozen_cluster(off_deg: float) -> Story:
    """The cue ball rests 0.02 mm from ball 8, which touches ball 5 at its side, and ball 5
    touches ball 4 (the cue ball runs forward past 8's place: a ball there, at 8's other side
    or between 5 and the cue ball, would stop it); the stroke is ``off_deg`` off the 0 -> 8
    line of centres, away from 5,
    at 2 m/s with follow.  Ball 8 leaves along that line (cos ``off_deg`` of the speed) into
    pocket 3; the cue ball keeps the rest sideways, then its follow turns it forward: 159 mm
    along the line in all.  Frames are exposed 1.7 ms after the contact: the first shows
    ball 8 3 mm on and the cue ball 1.3 mm at 22.7°, within the tracker's noise of still."""
    v = 2e-3
    n = unit(1.0, 1.0)
    side = (-n[1], n[0])
    p8 = (L - 500.0, DEFAULT_TABLE.width_mm - 500.0)

    def from8(forward: float, sideways: float) -> tuple[float, float]:
        return (
            p8[0] + forward * n[0] + sideways * side[0],
            p8[1] + forward * n[1] + sideways * side[1],
        )

    p0 = from8(-(D + 0.02), 0.0)
    cos, sin = math.cos(math.radians(off_deg)), math.sin(math.radians(off_deg))
    balls = {5: Path((0.0, *from8(0.0, D))), 4: Path((0.0, *from8(D / 2, D + D * 0.866)))}
    run = math.hypot(L - p8[0], DEFAULT_TABLE.width_mm - p8[1]) - 40
    t_pot = T0 + run / (v * cos)
    balls[8] = Path((T0, *p8), (t_pot, *from8(run, 0.0)), gone=t_pot)
    drift = v * sin * 20_000  # sideways in the 20 ms before the follow takes hold
    balls[0] = Path(
        (T0, *p0),
        (T0 + 20_000, *from8(5.0 - D, -drift)),
        (T0 + 150_000, *from8(159.0 - D, -drift - 40 * sin)),
    )
    story = Story()
    story.film(balls, 300_000, t_pot + 1_500_000, at=T0 + 1_700)
    story.report(T0 + 4, "CUE_CONTACT", duration_us=1200, peak_force_dn=300)
    story.click(T0 + 12, p0, p8)
    story.report(t_pot + 70, "POCKET_DROP", pocket=3, colour=0, beam_us=35_000)
    return story


@pytest.mark.parametrize(
    ("off_deg", "verdict"),
    [
        (22.7, (1, "foul", ["19.2"], None)),  # under 45° and the cue ball went on: 19.2
        (60.0, (1, "legal", [], "20(1)")),  # 19.2(1): at least 45° off the line of centres
    ],
)
def test_the_struck_ball_of_a_frozen_cluster_is_the_one_whose_push_the_tracker_shows(
    off_deg, verdict
):
    """Issue 28.2: ball 8 left along the 0 -> 8 line, away from the cue ball touching it: the
    tip cannot have struck it there (the cue would pass through ball 0), so ball 0 was struck
    and 19.2 is judged on it; ``shot_start`` said ball 8 and the shot went legal."""
    events = frozen_cluster(off_deg).events()
    assert [e["cue_ball"] for e in of(events, "shot_start")] == [0]
    assert of(events, "ball_contact")[0]["balls"] == [0, 8]
    assert verdicts(events) == [verdict]
