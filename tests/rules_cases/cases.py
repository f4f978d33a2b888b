"""The clause tables: each rule's positive case beside its failing twin.

A case is a shot told as events (tests/rules_cases/events.py) and the
verdict the last line (or the line ``index``) must carry, and words its
reason must say (``says``: the clause that decided it).  The clause tests,
the sensor-set replay and the ``judge`` command test all read these tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rules.config import RulesConfig

from .events import MIDDLE, D, L, Match, W

Build = Callable[[], Match]


@dataclass(frozen=True)
class Case:
    name: str
    build: Build
    verdict: str
    rules: tuple[str, ...] = ()
    satisfied: str | None = None
    config: RulesConfig | None = None
    says: tuple[str, ...] = ()  # in the reason
    index: int = -1  # which verdict line of the match


def legal(
    name: str,
    build: Build,
    clause: str,
    *says: str,
    config: RulesConfig | None = None,
    index: int = -1,
) -> Case:
    return Case(name, build, "legal", (), clause, config, says, index)


def foul(
    name: str,
    build: Build,
    *rules: str,
    config: RulesConfig | None = None,
    says: tuple[str, ...] = (),
    index: int = -1,
) -> Case:
    return Case(name, build, "foul", rules, None, config, says, index)


def referee(
    name: str, build: Build, *rules: str, says: tuple[str, ...] = (), index: int = -1
) -> Case:
    return Case(name, build, "referee", rules, None, None, says, index)


def after_break() -> Match:
    return Match().broken()


# Shots the clause tables and the sensor-set replay share.


def pot_after_contact() -> Match:
    return after_break().shot().hit(0, 7).pot(7, 1).end()


def double_hit() -> Match:
    return after_break().shot().tip().hit(0, 7).pot(7, 1).end()


def push() -> Match:
    return after_break().shot(duration_us=30_000).hit(0, 7, dt=20_000).pot(7, 1).end()


def two_cushions() -> Match:
    return after_break().shot().hit(0, 7).cushion(7, 1).cushion(7, 3).end()


def no_contact() -> Match:
    return after_break().shot().cushion(0, 1).cushion(0, 3).end()


def stroke_before_stop() -> Match:
    m = after_break().shot().hit(0, 7).pot(7, 1).end(interrupted=True)
    return m.shot(dt=0).hit(0, 5).pot(5, 0).end()


def touched_in_shot() -> Match:
    return after_break().shot().hit(0, 7).moved(9).pot(7, 1).end()


def moved_beside(pass_mm: float) -> Build:
    """Ball 9 seen moving with no contact while ball 7, struck on by the cue ball, runs
    past it ``pass_mm`` off (surface to surface) on one straight stretch of its path."""

    def build() -> Match:
        balls = {0: (1000.0, 500.0), 7: (1200.0, 500.0), 9: (1600.0, 500.0 + D + pass_mm)}
        m = after_break().shot(balls=balls).hit(0, 7).moved(9, dt=400_000).pot(7, 1)
        path7 = [(m.since_stroke(10_000), 1200.0, 500.0), (m.since_stroke(800_000), 2000.0, 500.0)]
        return m.end(paths={7: path7})

    return build


def to_cushion_3(off_mm: float) -> Build:
    """Ball 7, hit by the cue ball, touches cushion 4 (reported), then its path runs to
    ``off_mm`` (surface to nose) from cushion 3 with no sensor reporting a touch there."""

    def build() -> Match:
        balls = {0: (2800.0, 800.0), 7: (3000.0, 900.0)}
        m = after_break().shot(balls=balls).hit(0, 7).cushion(7, 4)
        nose = L - D / 2 - off_mm
        path7 = [
            (m.since_stroke(10_000), 3000.0, 900.0),
            (m.since_stroke(300_000), 3200.0, W - D / 2),
            (m.since_stroke(600_000), nose, 1200.0),
            (m.since_stroke(900_000), 3300.0, 1100.0),
        ]
        return m.end(paths={7: path7})

    return build


def break_pot() -> Match:
    return Match().shot().hit(0, 1).pot(4, 2).end()


def break_struck_unknown() -> Match:
    """A break whose struck ball the tracker could not name: ball 0 and two object balls
    at cushions.  Ball 0 is the break's cue ball (11.2), so only two object balls count."""
    return Match().shot(cue=None).hit(0, 1).cushion(0, 3).cushion(2, 2).cushion(3, 4).end()


def break_three_cushions() -> Match:
    return Match().shot().hit(0, 1).cushion(2, 3).cushion(3, 2).cushion(4, 4).end()


# ------------------------------------------------------------------ item 20

ITEM_20 = [
    legal(
        "20(1) pocketed after the contact",
        lambda: after_break().shot().hit(0, 7).pot(7, 2).end(),
        "20(1)",
    ),
    foul(
        "20(1) twin: pocketed without a contact",
        lambda: after_break().shot().cushion(0, 1).pot(0, 2).end(),
        "20",
    ),
    legal(
        "20(2)(a) another cushion",
        two_cushions,
        "20(2)(a)",
    ),
    foul(
        "20 in words: the pair is unordered, the cue ball named first as the one that hit",
        lambda: after_break().shot(cue=15).hit(0, 15).hit(0, 7).end(),
        "20",
        says=("after ball 15 hit the coloured ball, the coloured ball and ball 7 touched",),
    ),
    foul(
        "20(2)(a) twin: the same cushion again",
        lambda: after_break().shot().hit(0, 7).cushion(7, 1).cushion(7, 1).end(),
        "20",
    ),
    referee(
        "20(2)(a) a touch of another cushion at a pocket's mouth the tracker cannot settle",
        lambda: (
            after_break()
            .shot()
            .hit(0, 7)
            .cushion(7, 4)
            .add("cushion", ball=7, cushion=3, source="tracker", certain=False)
            .end()
        ),
        "20",
        says=("a touch of cushion 3 by ball 7 at a pocket's mouth that the tracker cannot settle",),
    ),
    legal(
        "20(2)(a) twin: the same touch settled by the tracker",
        lambda: (
            after_break()
            .shot()
            .hit(0, 7)
            .cushion(7, 4)
            .add("cushion", ball=7, cushion=3, source="tracker")
            .end()
        ),
        "20(2)(a)",
    ),
    foul(
        "20(2)(a) twin: no touch at all",
        lambda: after_break().shot().hit(0, 7).cushion(7, 4).end(),
        "20",
    ),
    referee(
        "20(2)(a) the path reaches another cushion and no sensor reported a touch",
        to_cushion_3(off_mm=1.0),
        "20",
        says=("ball 7 hit cushion 3", "the tracker's paths allow it", "20(2)(a) would then hold"),
    ),
    foul(
        "20(2)(a) twin: the path stops 10 mm short of the other cushion",
        to_cushion_3(off_mm=10.0),
        "20",
    ),
    legal(
        "20(2)(b) drives a ball to another cushion",
        lambda: after_break().shot().hit(0, 7).cushion(0, 1).hit(0, 5).cushion(5, 3).end(),
        "20(2)(b)",
    ),
    foul(
        "20(2)(b) twin: driven to the same cushion",
        lambda: after_break().shot().hit(0, 7).cushion(0, 1).hit(0, 5).cushion(5, 1).end(),
        "20",
    ),
    legal(
        "20(2)(c) a ball resting against another cushion",
        lambda: after_break().shot(frozen={5: [3]}).hit(0, 7).cushion(0, 1).hit(0, 5).end(),
        "20(2)(c)",
    ),
    foul(
        "20(2)(c) twin: resting against the same cushion",
        lambda: after_break().shot(frozen={5: [1]}).hit(0, 7).cushion(0, 1).hit(0, 5).end(),
        "20",
    ),
    legal(
        "20(3)(a) crosses, then a cushion",
        lambda: after_break().shot().hit(0, 7).cross(7).cushion(7, 3).end(),
        "20(3)(a)",
    ),
    foul(
        "20(3)(a) twin: one ball crosses, another meets the cushion",
        lambda: after_break().shot().hit(0, 7).cross(0).cushion(7, 3).end(),
        "20",
    ),
    legal(
        "20(3)(b) crosses, then drives a ball to a cushion",
        lambda: after_break().shot().hit(0, 7).cross(0).hit(0, 5).cushion(5, 3).end(),
        "20(3)(b)",
    ),
    foul(
        "20(3)(b) twin: drives the ball before crossing",
        lambda: after_break().shot().hit(0, 7).hit(0, 5).cross(0).cushion(5, 3).end(),
        "20",
    ),
    legal(
        "20(3)(c) crosses, then a ball resting against a cushion",
        lambda: after_break().shot(frozen={5: [4]}).hit(0, 7).cross(0).hit(0, 5).end(),
        "20(3)(c)",
    ),
    foul(
        "20(3)(c) twin: the ball hit rests against no cushion",
        lambda: after_break().shot().hit(0, 7).cross(0).hit(0, 5).end(),
        "20",
    ),
    legal(
        "20(4)(a) a cushion, then crosses",
        lambda: after_break().shot().hit(0, 7).cushion(7, 2).cross(7).end(),
        "20(4)(a)",
    ),
    foul(
        "20(4)(a) twin: one ball meets the cushion, another crosses",
        lambda: after_break().shot().hit(0, 7).cushion(0, 2).cross(7).end(),
        "20",
    ),
    legal(
        "20(4)(b) a cushion, then rolls a ball across",
        lambda: after_break().shot().hit(0, 7).cushion(0, 1).hit(0, 5).cross(5).end(),
        "20(4)(b)",
    ),
    foul(
        "20(4)(b) twin: a chain (5 drives 9 across) does not count",
        lambda: after_break().shot().hit(0, 7).cushion(0, 1).hit(0, 5).hit(5, 9).cross(9).end(),
        "20",
    ),
    legal(
        "20 note 1: cushions after the first contact",
        lambda: after_break().shot().hit(0, 7).cushion(0, 1).cushion(0, 3).end(),
        "20(2)(a)",
    ),
    foul(
        "20 note 1 twin: the first cushion came before the contact",
        lambda: after_break().shot().cushion(0, 1).hit(0, 7).cushion(0, 3).end(),
        "20",
    ),
    legal(
        "20 note 2: two separate collisions",
        lambda: after_break().shot(frozen={7: [3]}).hit(0, 7).hit(7, 0).cushion(0, 1).end(),
        "20 note 2",
    ),
    legal(
        "20 note 2: the frozen ball's cushion heard, then two collisions",
        lambda: (
            after_break()
            .shot(frozen={7: [3]})
            .hit(0, 7)
            .cushion(7, 3)
            .hit(7, 0)
            .cushion(0, 1)
            .end()
        ),
        "20 note 2",
    ),
    foul(
        "20 note 2 twin: two contacts of the pair at the same t_us are one collision",
        lambda: after_break().shot(frozen={7: [3]}).hit(0, 7).hit(7, 0, dt=0).cushion(0, 1).end(),
        "20",
        says=("in a single collision",),
    ),
    legal(
        "20 note 2: the frozen ball hit second, two separate collisions",
        lambda: (
            after_break().shot(frozen={7: [3]}).hit(0, 5).hit(0, 7).hit(7, 0).cushion(0, 1).end()
        ),
        "20 note 2",
        "two separate collisions",
    ),
    legal(
        "20 note 2: the frozen ball hit second, one collision, declared",
        lambda: (
            after_break()
            .key("declare_frozen", 7)
            .shot(frozen={7: [3]})
            .hit(0, 5)
            .hit(0, 7)
            .cushion(0, 1)
            .end()
        ),
        "20 note 2",
        "declared frozen",
    ),
    foul(
        "20 note 2 twin: the frozen ball hit second, one collision, not declared",
        lambda: after_break().shot(frozen={7: [3]}).hit(0, 5).hit(0, 7).cushion(0, 1).end(),
        "20",
        says=("in a single collision and ball 7 was not declared frozen",),
    ),
    foul(
        "20 note 2 twin: back to the cushion the ball rests against",
        lambda: after_break().shot(frozen={7: [3]}).hit(0, 7).hit(7, 0).cushion(0, 3).end(),
        "20",
    ),
    legal(
        "20 note 2: one collision, declared frozen",
        lambda: (
            after_break()
            .key("declare_frozen", 7)
            .shot(frozen={7: [3]})
            .hit(0, 7)
            .cushion(0, 1)
            .end()
        ),
        "20 note 2",
    ),
    foul(
        "20 note 2 twin: one collision, not declared",
        lambda: after_break().shot(frozen={7: [3]}).hit(0, 7).cushion(0, 1).end(),
        "20",
    ),
    legal(
        "20 note 2: declared as 'nearest ball' (255), across the centre line",
        lambda: (
            after_break()
            .key("declare_frozen", 255)
            .shot(balls={0: (2500.0, 900.0), 7: (L - D / 2 - 1, 900.0), 3: (1000.0, 300.0)})
            .hit(0, 7)
            .cross(0)
            .end()
        ),
        "20 note 2",
    ),
    legal(
        "20 note 2: declared, 4 mm from the cushion (beyond the tracker's frozen gap)",
        lambda: (
            after_break()
            .key("declare_frozen", 7)
            .shot(balls={0: (2500.0, 900.0), 7: (L - D / 2 - 4, 900.0)})
            .hit(0, 7)
            .cushion(0, 1)
            .end()
        ),
        "20 note 2",
    ),
    foul(
        "20 note 2 twin: declared, but 50 mm clear of every cushion",
        lambda: (
            after_break()
            .key("declare_frozen", 7)
            .shot(balls={0: (2500.0, 900.0), 7: (L - D / 2 - 50, 900.0)})
            .hit(0, 7)
            .cushion(0, 1)
            .end()
        ),
        "20",
    ),
    foul(
        "20 twin: declared after the stroke does not count",
        lambda: (
            after_break()
            .shot(frozen={7: [3]})
            .key("declare_frozen", 7, dt=0)
            .hit(0, 7)
            .cushion(0, 1)
            .end()
        ),
        "20",
    ),
]

# 19.2's note: a ball touching the cue ball, played away from, is no contact.
TOUCHING = {0: (1500.0, W / 2), 7: (1500.0 + D, W / 2), 5: (800.0, 300.0)}


def _away(m: Match) -> dict[int, list[tuple[int, float, float]]]:
    return {0: [(m.since_stroke(0), 1500.0, W / 2), (m.since_stroke(400_000), 1300.0, W / 2)]}


def _played_away(then: Callable[[Match], Match]) -> Build:
    def build() -> Match:
        m = after_break().shot(balls=TOUCHING).hit(0, 7, dt=0)
        return then(m).end(paths=_away(m))

    return build


# Ball 7 resting against the back cushion (3), the cue ball touching it on the line
# to the cushion: a stroke into 7 cannot move it, and the cue ball rebounds the way a
# stroke away from 7 would go.
PINNED = {0: (L - D / 2 - D, 900.0), 7: (L - D / 2, 900.0), 5: (800.0, 300.0)}


def _pinned(declare: bool, then: Callable[[Match], Match]) -> Build:
    """The cue ball leaves ball 7 straight back towards the front cushion; ``then``
    tells what the sensors reported (a click of a collision with 7, or none)."""

    def build() -> Match:
        m = after_break()
        if declare:
            m.key("declare_frozen", 7)
        m.shot(balls=PINNED)
        x0 = PINNED[0][0]
        path = {0: [(m.since_stroke(0), x0, 900.0), (m.since_stroke(900_000), x0 - 2000, 900.0)]}
        return then(m).end(paths=path)

    return build


ITEM_20 += [
    legal(
        "19.2 note: a stroke into a touching ball pinned against a cushion is a collision (declared)",
        _pinned(True, lambda m: m.hit(0, 7, dt=0).cross(0, dt=400_000)),
        "20 note 2",
        "pinned against cushion 3",
        "19.2(2)",
        "declared frozen",
    ),
    foul(
        "19.2 note twin: into the pinned ball, one collision, not declared",
        _pinned(False, lambda m: m.hit(0, 7, dt=0).cross(0, dt=400_000)),
        "20",
        says=("in a single collision and ball 7 was not declared frozen",),
    ),
    legal(
        "19.2 note: into the pinned ball, two separate collisions",
        _pinned(False, lambda m: m.hit(0, 7, dt=0).hit(7, 0, dt=300).cross(0, dt=400_000)),
        "20 note 2",
        "two separate collisions",
    ),
    foul(
        "19.2 note twin: away from the pinned ball (no collision heard), declared",
        _pinned(True, lambda m: m.cross(0, dt=400_000).cushion(0, 0)),
        "20",
        says=("touched no object ball",),
    ),
    foul(
        "19.2 note: played away from a touching ball, then nothing",
        _played_away(lambda m: m.cushion(0, 0)),
        "20",
        says=("19.2 note",),
    ),
    legal(
        "19.2 note twin: played away, then a real contact and a pot",
        _played_away(lambda m: m.hit(0, 5).pot(5, 0)),
        "20(1)",
        "19.2 note",
    ),
]

# ------------------------------------------------------------------ the break: 12.1 and 11.2

BREAK = [
    legal(
        "12.1(1) a pot after the contact",
        break_pot,
        "12.1(1)",
    ),
    foul(
        "12.1(1) twin: the cue ball pocketed with no contact",
        lambda: Match().shot().pot(0, 1).end(),
        "12.1",
    ),
    legal(
        "12.1(1) is named before (3) completed earlier",
        lambda: Match().shot().hit(0, 1).cushion(2, 3).cushion(3, 2).cross(5).pot(4, 2).end(),
        "12.1(1)",
    ),
    legal(
        "12.1(2) three object balls at cushions",
        break_three_cushions,
        "12.1(2)",
    ),
    foul(
        "12.1(2) twin: only two different object balls",
        lambda: Match().shot().hit(0, 1).cushion(2, 3).cushion(3, 2).cushion(2, 4).end(),
        "12.1",
    ),
    foul(
        "12.1(2) twin: a cushion before the first contact does not count",
        lambda: Match().shot().cushion(2, 3).hit(0, 1).cushion(3, 2).cushion(4, 4).end(),
        "12.1",
    ),
    legal(
        "12.1(3) two at cushions and an object ball across the centre line",
        lambda: Match().shot().hit(0, 1).cushion(2, 3).cushion(3, 2).cross(5).end(),
        "12.1(3)",
    ),
    foul(
        "12.1(3) twin: only the cue ball crossed",
        lambda: Match().shot().hit(0, 1).cushion(2, 3).cushion(3, 2).cross(0).end(),
        "12.1",
    ),
    foul(
        "11.2: the break struck a white ball",
        lambda: Match().shot(cue=3).hit(3, 1).pot(4, 2).end(),
        "11.2",
    ),
    foul(
        "11.2: a white ball struck, even with three object balls at cushions",
        lambda: Match().shot(cue=3).hit(3, 1).cushion(2, 3).cushion(4, 2).cushion(5, 4).end(),
        "11.2",
        says=("played with ball 3, not the coloured ball",),
    ),
    foul(
        "11.2, 12.1(2): struck ball unknown (null): the coloured ball's cushion is no object ball's",
        break_struck_unknown,
        "12.1",
    ),
    legal(
        "11.2, 12.1(2) twin: struck ball unknown, three object balls at cushions",
        lambda: (
            Match()
            .shot(cue=None)
            .hit(0, 1)
            .cushion(0, 3)
            .cushion(2, 2)
            .cushion(3, 4)
            .cushion(4, 1)
            .end()
        ),
        "12.1(2)",
        "object balls 2, 3, 4",
    ),
    foul(
        "11.2, 12.1(3): struck ball unknown (null): the coloured ball's crossing is no object ball's",
        lambda: Match().shot(cue=None).hit(0, 1).cushion(2, 3).cushion(3, 2).cross(0).end(),
        "12.1",
    ),
    legal(
        "11.2, 12.1(3) twin: struck ball unknown, an object ball crossed",
        lambda: Match().shot(cue=None).hit(0, 1).cushion(2, 3).cushion(3, 2).cross(5).end(),
        "12.1(3)",
    ),
]

# ------------------------------------------------------------------ the stroke: 14.2, 15, 17, 18, 19

COMBINED = RulesConfig(discipline="combined")
# Synthetic paths give the stroke exactly: no uncertainty band around 45°.
EXACT = RulesConfig(stroke_angle_band_deg=0.0)


def apart(gap_mm: float) -> dict:
    """The cue ball and ball 7 ``gap_mm`` apart on the table's axis, ball 5 far off."""
    return {0: (1500.0, W / 2), 7: (1500.0 + D + gap_mm, W / 2), 5: (800.0, 300.0)}


NEAR = apart(5.0)
Points = list[tuple[float, float]]


def near_stroke(path: Points, balls: dict = NEAR, duration_us: int = 6000, dt: int = 3000) -> Build:
    """The cue ball 5 mm from ball 7 (or ``balls``), its first contact ``dt`` after the
    stroke (the tip contact lasting ``duration_us``), ball 7 pocketed; the cue ball's path."""

    def build() -> Match:
        m = after_break().shot(balls=balls, duration_us=duration_us).hit(0, 7, dt=dt).pot(7, 3)
        times = [m.since_stroke(i * 100_000) for i in range(len(path))]
        x7, y7 = balls[7]
        seven = [(m.since_stroke(dt), x7, y7), (m.since_stroke(500_000), L - 30.0, y7)]
        return m.end(paths={0: [(t, x, y) for t, (x, y) in zip(times, path)], 7: seven})

    return build


def drawn_to_a_cushion(cushion: bool) -> Build:
    """The cue ball 5 mm from ball 7, struck straight at it: drawn back 200 mm (to a
    cushion, reported when ``cushion``), then rolling on 100 mm past where it met ball 7."""

    def build() -> Match:
        m = after_break().shot(balls=NEAR).hit(0, 7, dt=3000)
        if cushion:
            m = m.cushion(0, 0, dt=197_000)
        m = m.pot(7, 3)
        path = [(0, 1500.0), (100_000, 1507.0), (200_000, 1300.0), (400_000, 1600.0)]
        x7, y7 = NEAR[7]
        seven = [(m.since_stroke(3000), x7, y7), (m.since_stroke(500_000), L - 30.0, y7)]
        cue = [(m.since_stroke(t), x, W / 2) for t, x in path]
        return m.end(paths={0: cue, 7: seven})

    return build


def touching_stroke(path: Points) -> Build:
    """The cue ball touching ball 7; a 0.8 ms tip contact, and the contact sensors report
    the collision 3 ms after the stroke, after the tip left: 19.2 still decides."""
    return near_stroke(path, TOUCHING, duration_us=800, dt=3000)


def straight(*xs: float) -> Points:
    """A path along the line of centres (+x) through these x."""
    return [(x, W / 2) for x in xs]


def at_degrees(angle: float, *steps: float) -> Points:
    """A path from (1500, W/2) at ``angle`` off the line of centres, these mm along."""
    a = math.radians(angle)
    return [(1500.0 + r * math.cos(a), W / 2 + r * math.sin(a)) for r in (0.0, *steps)]


STRAIGHT_FOLLOW = straight(1500.0, 1750.0)
DRAW_BACK = straight(1500.0, 1507.0, 1300.0)  # 2 mm past where it meets ball 7 (5 mm gap)
STUN_ON = straight(1500.0, 1507.0, 1600.0)


# Touching, the line of centres 60° off the table's axis: a stroke exactly 45° off it
# comes out 44.99999999999991 in floating point.
TILTED = {
    0: (1500.0, W / 2),
    7: (1500.0 + D * math.cos(math.pi / 3), W / 2 + D * math.sin(math.pi / 3)),
    5: (800.0, 300.0),
}


def struck(
    angle: float,
    balls: dict = TOUCHING,
    follow: bool = True,
    dt: int = 3000,
    duration_us: int = 800,
    third: int | None = None,
    then: Callable[[Match], Match] = lambda m: m.pot(7, 3, dt=400_000),
) -> Build:
    """Ball 7 struck ``angle`` degrees off the line of centres (turned anticlockwise), as
    equal balls collide: the cue ball runs straight to ball 7 (reported ``dt`` after
    the stroke; touching, it meets it where it stands), ball 7 leaves along the
    contact normal, the cue ball square to it for 40 ms, then with ``follow`` its
    topspin bends it 200 mm forward along that normal, else it stops.  ``third``:
    a ball frozen to 7 on the far side of the normal takes all of 7's momentum
    at once (7 stays).  The cue ball's own path shows only its
    course after the collision (square to the normal), never the stroke."""

    def build() -> Match:
        (cx, cy), (ox, oy) = balls[0], balls[7]
        dx, dy = ox - cx, oy - cy
        a = math.atan2(dy, dx) + math.radians(angle)
        sx, sy = math.cos(a), math.sin(a)
        along = sx * dx + sy * dy
        run = along - math.sqrt(along * along - (dx * dx + dy * dy) + D * D)
        run = run if run > 1e-6 else 0.0  # touching: float noise
        speed = run / (dt / 1e6) if run else 2000.0  # mm/s
        mx, my = cx + run * sx, cy + run * sy  # where the cue ball meets ball 7
        nx, ny = (ox - mx) / D, (oy - my) / D
        normal = speed * (sx * nx + sy * ny)
        vo = (normal * nx, normal * ny)
        vc = (speed * sx - vo[0], speed * sy - vo[1])
        m = after_break().shot(balls=balls, duration_us=duration_us).hit(0, 7, dt=dt)
        if third is not None:
            m.hit(7, third, dt=0)
        then(m)
        t_c = m.since_stroke(dt)
        x1, y1 = mx + vc[0] * 0.04, my + vc[1] * 0.04
        cue = [(m.since_stroke(0), cx, cy), (t_c, mx, my), (t_c + 40_000, x1, y1)]
        if follow:
            cue.append((t_c + 240_000, x1 + 200.0 * nx, y1 + 200.0 * ny))
        mover = 7 if third is None else third
        x0, y0 = balls[mover]
        paths = {
            0: cue,
            mover: [(t_c, x0, y0), (t_c + 400_000, x0 + vo[0] * 0.4, y0 + vo[1] * 0.4)],
        }
        return m.end(paths=paths)

    return build


# Ball 8 frozen to 7 on the line of centres: 7 passes all it gets on to 8 and stays.
CLUSTER = TOUCHING | {8: (1500.0 + 2 * D, W / 2)}
# Ball 7 against the back cushion (3), the cue ball touching it 20° off the table's
# axis: the line of centres points into the cushion, so the cushion pins 7.
_SLANT = (D * math.cos(math.radians(20.0)), D * math.sin(math.radians(20.0)))
PINNED_SLANT = {
    0: (L - D / 2 - _SLANT[0], 900.0 - _SLANT[1]),
    7: (L - D / 2, 900.0),
    5: (800.0, 300.0),
}
# The same two balls 300 mm clear of the cushion.
FREE_SLANT = {b: (x - 300.0, y) for b, (x, y) in PINNED_SLANT.items()}


def struck_pinned(angle: float) -> Build:
    """Ball 7 (``PINNED_SLANT``) struck ``angle`` off the line of centres: the cushion
    takes the push into it, so 7 only slides 60 mm along it and the cue ball comes
    back (its speed along the normal reversed, 0.9 of it); later it pots ball 5.
    The two balls' travel is not the stroke's momentum here."""

    def build() -> Match:
        (cx, cy), (ox, oy) = PINNED_SLANT[0], PINNED_SLANT[7]
        nx, ny = (ox - cx) / D, (oy - cy) / D
        a = math.radians(angle)
        along, across = math.cos(a), math.sin(a)  # of a 1 mm/ms stroke, on n and n turned 90°
        bx, by = -0.9 * along * nx - across * ny, -0.9 * along * ny + across * nx
        m = after_break().shot(balls=PINNED_SLANT, duration_us=800).hit(0, 7, dt=3000)
        m.hit(0, 5, dt=300_000).pot(5, 0)
        t_c = m.since_stroke(3000)
        cue = [
            (m.since_stroke(0), cx, cy),
            (t_c, cx, cy),
            (t_c + 300_000, cx + 300 * bx, cy + 300 * by),
        ]
        seven = [(t_c, ox, oy), (t_c + 400_000, ox, oy + 60.0)]
        return m.end(paths={0: cue, 7: seven})

    return build


def cut_short(first: Callable[[Match], Match], nodes: tuple[str, ...] | None = None) -> Build:
    """A shot (``first`` after the stroke) cut short by the next stroke, which pots ball 5."""

    def build() -> Match:
        m = Match(nodes).broken() if nodes else after_break()
        first(m.shot()).end(interrupted=True, certain=nodes is None)
        return m.shot(dt=0).hit(0, 5).pot(5, 0).end(certain=nodes is None)

    return build


def estimated_end(dt: int) -> Build:
    """Middle set: the fusion's shot_end is only an estimate (``certain: false``); the
    next stroke comes ``dt`` after it (0: the fusion ended the shot at that stroke)."""

    def build() -> Match:
        m = Match(MIDDLE).broken().shot().hit(0, 7).pot(7, 1).end(certain=False)
        return m.shot(dt=dt).hit(0, 5).pot(5, 0).end(certain=False)

    return build


STROKE = [
    legal("18: one tip contact", pot_after_contact, "20(1)"),
    foul(
        "18 twin: the tip touched twice",
        double_hit,
        "18",
    ),
    legal(
        "19.1: the tip left before the contact",
        lambda: after_break().shot(duration_us=1000).hit(0, 7, dt=20_000).pot(7, 1).end(),
        "20(1)",
    ),
    foul(
        "19.1 twin: the tip still on at the contact (push)",
        push,
        "19.1",
    ),
    legal(
        "19.2(1): played 60° off the line of centres, 5 mm apart",
        struck(60.0, NEAR),
        "20(1)",
        "60.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    foul(
        "19.2(1) twin: played along the line of centres and followed",
        near_stroke(STRAIGHT_FOLLOW),
        "19.2",
    ),
    referee(
        "19.2: 10.2 mm apart, within the reading's 0.3 mm of 10 mm, followed: near or not, the referee's",
        near_stroke(STRAIGHT_FOLLOW, apart(10.2), duration_us=800),
        "19.2",
        says=("10.2 mm from ball 7, within the tracker's 0.3 mm of the 10 mm", "if near: "),
    ),
    legal(
        "19.2 twin: 10.4 mm apart, beyond the band: not near, and no push",
        near_stroke(STRAIGHT_FOLLOW, apart(10.4), duration_us=800),
        "20(1)",
    ),
    foul(
        "19.2 twin: 9.6 mm apart, below the band: near, followed",
        near_stroke(STRAIGHT_FOLLOW, apart(9.6), duration_us=800),
        "19.2",
    ),
    referee(
        "19.1: 9.8 mm apart, 60° off, the tip on at the contact: excused if near, a push if not",
        struck(60.0, apart(9.8), duration_us=6000),
        "19.1",
        says=("if not: tip still on the cue ball",),
    ),
    legal(
        "19.1 twin: 9.8 mm apart, 60° off, the tip gone: legal near or not",
        struck(60.0, apart(9.8)),
        "20(1)",
        "not under 45°: 19.2(1)",
    ),
    legal(
        "19.2(1): exactly 45° is not under 45° (44.99999999999991 in floating point)",
        struck(45.0, TILTED),
        "20(1)",
        "45.0° off the line of centres, not under 45°: 19.2(1)",
        config=EXACT,
    ),
    foul(
        "19.2(1) twin: 44.9° and followed",
        struck(44.9),
        "19.2",
        config=EXACT,
        says=("44.9° off the line of centres (under 45°: not 19.2(1))", "not 19.2(2)"),
    ),
    referee(
        "19.2(1): read 40°, within the reading's 8° of 45°, and followed: the referee decides",
        struck(40.0),
        "19.2",
        says=("within the reading's 8° of 45°",),
    ),
    foul(
        "19.2(1) twin: read 36°, outside the band, and followed",
        struck(36.0),
        "19.2",
    ),
    referee(
        "19.2(1): read 52°, within the band on the legal side, and followed: the referee decides",
        struck(52.0),
        "19.2",
    ),
    legal(
        "19.2(1) twin: read 54°, outside the band",
        struck(54.0),
        "20(1)",
        "54.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    legal(
        "19.2(2): straight, but the cue ball did not go forward",
        near_stroke(DRAW_BACK),
        "20(1)",
        "19.2(2)",
    ),
    foul(
        "19.2(2) twin: straight, stopped, then rolled on (the object ball's place is no limit)",
        near_stroke(STUN_ON),
        "19.2",
        says=("went 95.0 mm forward after the collision (over 5 mm: not 19.2(2))",),
    ),
    legal(
        "19.2(2): drawn back to a cushion, then past the ball's place off the cushion",
        drawn_to_a_cushion(True),
        "20(1)",
        "went 2.0 mm forward after the collision, within 5 mm: 19.2(2)",
    ),
    foul(
        "19.2(2) twin: drawn back, then past the ball's place with no cushion between",
        drawn_to_a_cushion(False),
        "19.2",
        says=("went 95.0 mm forward",),
    ),
    legal(
        "19.2(2): touching, 4 mm of follow (within the tracker's 5 mm)",
        touching_stroke(straight(1500.0, 1504.0, 1300.0)),
        "20(1)",
        "went 4.0 mm forward after the collision, within 5 mm: 19.2(2)",
    ),
    referee(
        "19.2(2) twin: touching, 6 mm of follow, within the paths' 2 mm of the limit",
        touching_stroke(straight(1500.0, 1506.0, 1300.0)),
        "19.2",
        says=("went 6.0 mm forward", "within the paths' 2 mm of the limit"),
    ),
    foul(
        "19.2(2) twin: touching, 8 mm of follow",
        touching_stroke(straight(1500.0, 1508.0, 1300.0)),
        "19.2",
        says=("went 8.0 mm forward",),
    ),
    legal(
        "19.2(2): 5 mm apart, 4 mm of follow after meeting the ball",
        near_stroke(straight(1500.0, 1509.0, 1300.0)),
        "20(1)",
        "went 4.0 mm forward",
    ),
    referee(
        "19.2(2) twin: 5 mm apart, 6 mm of follow after meeting the ball",
        near_stroke(straight(1500.0, 1511.0, 1300.0)),
        "19.2",
    ),
    foul(
        "19.2(2) twin: 5 mm apart, 8 mm of follow after meeting the ball",
        near_stroke(straight(1500.0, 1513.0, 1300.0)),
        "19.2",
    ),
    foul(
        "19.2: touching, a 0.8 ms tip contact, the collision reported after the tip left",
        touching_stroke(STRAIGHT_FOLLOW),
        "19.2",
        says=("touching ball 7",),
    ),
    foul(
        "19.2 twin: touching, the collision reported while the tip was on",
        near_stroke(STRAIGHT_FOLLOW, TOUCHING, duration_us=800, dt=0),
        "19.2",
    ),
    legal(
        "19.2 twin: touching, a 0.8 ms tip contact, drawn back",
        touching_stroke(straight(1500.0, 1300.0)),
        "20(1)",
        "19.2(2)",
    ),
    # 19.2(1) is the stroke, not the cue ball's course after the collision: a near
    # ball is met within the cue ball's first 2 mm (before the tracker's next frame),
    # and the paths only show the cue ball leaving square to the line of centres.
    foul(
        "19.2(1): touching, struck 30° off, the cue ball's path square to the line after it, then following",
        struck(30.0),
        "19.2",
        says=("30.0° off the line of centres (under 45°: not 19.2(1))", "not 19.2(2)"),
    ),
    legal(
        "19.2(1) twin: the same, struck 60° off",
        struck(60.0),
        "20(1)",
        "60.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    foul(
        "19.2(1): 5 mm apart, the cue ball's path with a vertex where it meets 7: struck 30° off, following",
        struck(30.0, NEAR),
        "19.2",
        says=("5 mm from ball 7, was played 30.0° off",),
    ),
    legal(
        "19.2(1): struck 60° off with the tip still on at the collision (it drives along the cue)",
        struck(60.0, duration_us=6000),
        "20(1)",
        "60.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    foul(
        "19.2(1): a third ball frozen behind takes the momentum at once, struck 30° off",
        struck(30.0, CLUSTER, third=8, then=lambda m: m.pot(8, 3, dt=400_000)),
        "19.2",
        says=("30.0° off the line of centres (under 45°: not 19.2(1))",),
    ),
    legal(
        "19.2(1) twin: the same cluster struck 60° off",
        struck(60.0, CLUSTER, third=8, then=lambda m: m.pot(8, 3, dt=400_000)),
        "20(1)",
        "60.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    legal(
        "19.2(1): a ball pinned by a cushion, struck 30° off: the cue ball's path is read, it came back",
        struck_pinned(30.0),
        "20(1)",
        "pinned against cushion 3), came back off it",
        "19.2(2)",
    ),
    foul(
        "19.2(1) twin: the same stroke at the ball clear of the cushion, following",
        struck(30.0, FREE_SLANT, then=lambda m: m.hit(0, 5, dt=300_000).pot(5, 0)),
        "19.2",
        says=("30.0° off the line of centres (under 45°: not 19.2(1))",),
    ),
    legal("14.1: the pot came before every ball stopped", pot_after_contact, "20(1)"),
    foul(
        "14.1 twin: a pot reported after the shot ended belongs to no shot",
        lambda: after_break().shot().hit(0, 7).end().pot(7, 1),
        "20",
    ),
    foul(
        "14.2: a stroke before every ball stopped",
        stroke_before_stop,
        "14.2",
    ),
    legal(
        "14.2 twin: the previous shot ended",
        lambda: after_break().shot().hit(0, 7).pot(7, 1).end().shot().hit(0, 5).pot(5, 0).end(),
        "20(1)",
    ),
    legal(
        "14.2: the shot cut short had completed 20(2)(a) before the next stroke",
        cut_short(lambda m: m.hit(0, 7).cushion(7, 1).cushion(7, 3)),
        "20(2)(a)",
        index=-2,
    ),
    referee(
        "14.2 twin: cut short before any clause completed: referee, not a second foul",
        cut_short(lambda m: m.hit(0, 7).cushion(7, 1)),
        "20",
        says=("before the next stroke cut the shot short",),
        index=-2,
    ),
    foul(
        "14.2: a foul already certain in the shot cut short stands (18)",
        cut_short(lambda m: m.tip().hit(0, 7).cushion(7, 1)),
        "18",
        index=-2,
    ),
    referee(
        "14.2 on the middle set: the end was an estimate (shot_end interrupted, uncertain)",
        cut_short(lambda m: m.hit(0, 7).pot(7, 1), MIDDLE),
        "14.2",
        says=("without a tracker",),
    ),
    referee(
        "14.2 on the middle set: the fusion ended the shot at the next stroke",
        estimated_end(0),
        "14.2",
    ),
    legal(
        "14.2 twin on the middle set: the next stroke came after the estimated end",
        estimated_end(1_000_000),
        "20(1)",
    ),
    foul(
        "15 (combined): the tip struck a white ball",
        lambda: after_break().shot(cue=5).hit(5, 7).pot(7, 1).end(),
        "15",
        config=COMBINED,
    ),
    legal(
        "15 twin (combined): the coloured ball struck",
        lambda: after_break().shot(cue=0).hit(0, 7).pot(7, 1).end(),
        "20(1)",
        config=COMBINED,
    ),
    legal(
        "15 twin (free): any ball may be struck",
        lambda: after_break().shot(cue=5).hit(5, 7).pot(0, 1).end(),
        "20(1)",
    ),
    foul(
        "15 by the keypad during the shot",
        lambda: after_break().shot().key("referee_foul", 15).hit(0, 7).pot(7, 1).end(),
        "15",
    ),
    foul(
        "17: a ball touched during the shot",
        touched_in_shot,
        "17",
    ),
    referee(
        "17: a ball moved with no contact, but another ball's path passed touching it",
        moved_beside(1.0),
        "17",
        says=("with no contact reported, but ball 7 came within 1 mm of it",),
    ),
    foul(
        "17 twin: the other ball passed 20 mm off",
        moved_beside(20.0),
        "17",
    ),
    referee(
        "17: a ball moved with no contact, 0.2 ms from a contact of two other balls",
        lambda: after_break().shot().hit(0, 7).hit(7, 12).moved(9, dt=200).pot(7, 1).end(),
        "17",
        says=("a contact of ball 7 and ball 12 was heard 0.2 ms from its start",),
    ),
    foul(
        "17 twin: the contact of the other balls came 10 ms earlier",
        lambda: after_break().shot().hit(0, 7).hit(7, 12).moved(9).pot(7, 1).end(),
        "17",
    ),
    foul(
        "several fouls in one shot are all listed",
        lambda: (
            after_break().shot(duration_us=30_000).hit(0, 7, dt=20_000).tip(dt=5000).moved(9).end()
        ),
        "17",
        "18",
        "19.1",
        "20",
    ),
]

CLAUSES = ITEM_20 + BREAK + STROKE
