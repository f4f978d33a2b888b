"""Random matches from a seed: racks, breaks and ordinary shots aimed at balls.

Why aimed: a shot at an empty spot of the cloth gives the sensors nothing
to hear; shots aimed at a ball with a random cut make contacts, cushions,
line crossings and now and then a pot, so a random match exercises every
node.  The same seed always gives the same match.
"""

from __future__ import annotations

import math

import numpy as np

from protocol.geometry import DEFAULT_TABLE, Table

from .physics import EV_POCKET, PhysicsConfig
from .physics_truth import Shot, Timeline
from .truth import MatchTruth

POT_SHARE = 0.6  # shots that try to pot a ball
AIM_ERROR_DEG = 0.005  # point jaws make pockets stricter than cloth ones: players aim finer
POCKET_ENTRY_COS = math.cos(math.radians(15.0))


def _new_frame(tl: Timeline, rng: np.random.Generator) -> None:
    """Hands clear the table, rack fifteen and put the coloured ball in the house."""
    for ball in np.flatnonzero(tl.sim.present):
        tl.remove(int(ball))
    tl.wait(rng.uniform(2.0, 4.0))
    tl.rack(15)
    tl.wait(rng.uniform(1.0, 3.0))
    table = tl.table
    r = table.ball_mm / 2
    x = rng.uniform(table.house_line_x * 0.4, table.house_line_x - r)
    y = rng.uniform(table.width_mm * 0.3, table.width_mm * 0.7)
    tl.place({0: (x, y)})
    tl.rest()


def _aim(tl: Timeline, rng: np.random.Generator, cue: int, target: int) -> float:
    """Direction (deg) from cue to target: a pot attempt (ghost-ball aim at the easiest
    pocket, a little aim error) one shot in POT_SHARE, otherwise a random cut."""
    p = tl.sim.p
    dx, dy = p[target] - p[cue]
    d = tl.table.ball_mm
    if rng.uniform() < POT_SHARE:
        geo = tl.sim.geo
        mouths = (geo.mouth_a + geo.mouth_b) / 2
        to_pocket = mouths - p[target]
        to_pocket /= np.linalg.norm(to_pocket, axis=1)[:, None]
        ghost = p[target] - to_pocket * d
        aim = ghost - p[cue]
        aim /= np.linalg.norm(aim, axis=1)[:, None]
        cut = np.einsum("ij,ij->i", aim, to_pocket)  # cos of the cut angle: 1 is straight
        # a pocket takes a ball only from nearly in front of its mouth (the jaws are a ball apart)
        square = np.einsum("ij,ij->i", to_pocket, geo.mouth_n) >= POCKET_ENTRY_COS
        ok = np.flatnonzero(square & (cut > 0.5))
        if ok.size:
            k = int(ok[np.argmax(cut[ok])])
            return math.degrees(math.atan2(aim[k, 1], aim[k, 0])) + rng.normal(0.0, AIM_ERROR_DEG)
    dist = math.hypot(dx, dy)
    offset = math.asin(max(-1.0, min(1.0, rng.uniform(-0.85, 0.85) * d / max(dist, d))))
    return math.degrees(math.atan2(dy, dx) + offset)


def random_match(
    seed: int = 0,
    minutes: float = 10.0,
    table: Table = DEFAULT_TABLE,
    config: PhysicsConfig | None = None,
    *,
    timeline: type[Timeline] = Timeline,
    frame_shots: int | None = None,
) -> MatchTruth:
    """A match of about ``minutes`` of play: frames of a break then aimed shots, 5-20 s apart.

    ``timeline``: the physics it is played on (a second physics:
    :class:`.pooltool_table.PooltoolTimeline`); ``frame_shots``: a frame ends after that
    many shots after its break (more breaks a match), not only once the table is cleared.
    """
    rng = np.random.default_rng(seed)
    tl = timeline(table, config or PhysicsConfig(), name=f"random-{seed}")
    end = minutes * 60.0
    breaker = 1
    tl.wait(1.0)
    while tl.t < end:
        _new_frame(tl, rng)
        apex = np.array(table.back_mark)
        angle = _aim_at_point(tl.sim.p[0], apex, rng.normal(0.0, 0.6))
        tl.shot(
            Shot(0, angle, rng.uniform(7.0, 12.0), top=rng.uniform(0.0, 0.6)),
            pause_s=rng.uniform(3.0, 8.0),
            player=breaker,
            is_break=True,
        )
        player = _next_player(tl, breaker)
        shots = 0
        while tl.t < end and tl.sim.present.sum() >= 2 and shots != frame_shots:
            shot = _aimed_shot(tl, rng, (0.8, 5.0))
            tl.shot(shot, pause_s=rng.uniform(5.0, 20.0), player=player)
            player = _next_player(tl, player)
            shots += 1
        if tl.t < end:
            tl.wait(rng.uniform(5.0, 10.0))
            tl.keypad("new_frame")
            breaker = 3 - breaker
    return tl.truth()


def busy_match(
    seed: int = 0,
    minutes: float = 60.0,
    table: Table = DEFAULT_TABLE,
    config: PhysicsConfig | None = None,
) -> MatchTruth:
    """A busy table: sixteen balls kept on the cloth, one struck hard every 1.5-3 s.

    Why: a random match pots balls and waits 5-20 s between shots, so most
    of its frames show a quiet table, while the fusion's cost grows with the
    balls moving and the contacts per second.  Here a potted ball goes
    straight back on the cloth and the next stroke comes while the last one's
    balls still roll (an early shot, 14.2, every time: a stress of the
    pipeline, not a match to referee).  ``bench/busy.py`` times it.
    """
    rng = np.random.default_rng(seed)
    tl = Timeline(table, config or PhysicsConfig(), name=f"busy-{seed}")
    end = minutes * 60.0
    tl.wait(1.0)
    _new_frame(tl, rng)
    angle = _aim_at_point(tl.sim.p[0], np.array(table.back_mark), rng.normal(0.0, 0.6))
    tl.shot(Shot(0, angle, rng.uniform(9.0, 12.0), top=0.3), pause_s=2.0, is_break=True)
    player = 2
    while tl.t < end:
        _respot(tl, rng)  # while the last stroke's balls roll, so it is on the cloth when struck
        tl.wait(rng.uniform(1.5, 3.0))
        tl.strike(_aimed_shot(tl, rng, (3.0, 7.0)), player=player)
        player = 3 - player
    return tl.truth()


def _aimed_shot(tl: Timeline, rng: np.random.Generator, speed_mps: tuple[float, float]) -> Shot:
    """One ball on the cloth struck at another (:func:`_aim`), at a speed in ``speed_mps``."""
    balls = np.flatnonzero(tl.sim.present)
    cue, target = (int(b) for b in rng.choice(balls, 2, replace=False))
    return Shot(
        cue,
        _aim(tl, rng, cue, target),
        rng.uniform(*speed_mps),
        top=rng.uniform(-0.6, 1.0),
        contact_ms=rng.uniform(1.0, 2.0),
    )


def _respot(tl: Timeline, rng: np.random.Generator) -> None:
    """Every ball off the cloth back on it, a ball's width from any other."""
    table = tl.table
    d = table.ball_mm
    for ball in np.flatnonzero(~tl.sim.present):
        taken = tl.sim.p[tl.sim.present]
        while True:
            xy = rng.uniform((2 * d, 2 * d), (table.length_mm - 2 * d, table.width_mm - 2 * d))
            if np.min(np.hypot(*(taken - xy).T)) > 2 * d:
                break
        tl.place({int(ball): (float(xy[0]), float(xy[1]))})


def _next_player(tl: Timeline, player: int) -> int:
    """A legal pot keeps the turn; after a foul break the opponent accepts the position (12.2(1))."""
    verdict = tl.judge_last()
    potted = any(
        e.ball is not None and e.kind == EV_POCKET and e.t_s >= tl.shots[-1].t_start
        for e in tl.sim.events
    )
    if verdict["break"] and verdict["verdict"] == "foul":
        tl.wait(2.0)
        tl.keypad("accept")
    return player if verdict["verdict"] == "legal" and potted else 3 - player


def _aim_at_point(src: np.ndarray, dst: np.ndarray, jitter_deg: float) -> float:
    d = dst - src
    return math.degrees(math.atan2(d[1], d[0])) + jitter_deg
