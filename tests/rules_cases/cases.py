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
        "20(2)(a) twin: the same cushion again",
        lambda: after_break().shot().hit(0, 7).cushion(7, 1).cushion(7, 1).end(),
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
NEAR = {0: (1500.0, W / 2), 7: (1500.0 + D + 5, W / 2), 5: (800.0, 300.0)}
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
AT_60 = at_degrees(60.0, 200.0, 400.0)
DRAW_BACK = straight(1500.0, 1507.0, 1300.0)  # 2 mm past where it meets ball 7 (5 mm gap)
STUN_ON = straight(1500.0, 1507.0, 1600.0)
# exactly 45°: in floating point the angle comes out 44.99999999999991
S45 = 50.0 / math.sqrt(2)
AT_45 = [(1500.0, W / 2), (1500.0 + S45, W / 2 + S45), (1500.0 + 4 * S45, W / 2 + 4 * S45)]
AT_44_9 = at_degrees(44.9, 50.0, 200.0)


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
    legal("19.2(1): played 60° off the line of centres", near_stroke(AT_60), "20(1)", "19.2(1)"),
    foul(
        "19.2(1) twin: played along the line of centres and followed",
        near_stroke(STRAIGHT_FOLLOW),
        "19.2",
    ),
    legal(
        "19.2(1): exactly 45° is not under 45° (44.99999999999991 in floating point)",
        touching_stroke(AT_45),
        "20(1)",
        "45.0° off the line of centres, not under 45°: 19.2(1)",
    ),
    foul(
        "19.2(1) twin: 44.9° and followed",
        touching_stroke(AT_44_9),
        "19.2",
        says=("44.9° off the line of centres (under 45°: not 19.2(1))", "not 19.2(2)"),
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
        "19.2(2): touching, 4 mm of follow (within the tracker's 5 mm)",
        touching_stroke(straight(1500.0, 1504.0, 1300.0)),
        "20(1)",
        "went 4.0 mm forward after the collision, within 5 mm: 19.2(2)",
    ),
    foul(
        "19.2(2) twin: touching, 6 mm of follow",
        touching_stroke(straight(1500.0, 1506.0, 1300.0)),
        "19.2",
        says=("went 6.0 mm forward",),
    ),
    legal(
        "19.2(2): 5 mm apart, 4 mm of follow after meeting the ball",
        near_stroke(straight(1500.0, 1509.0, 1300.0)),
        "20(1)",
        "went 4.0 mm forward",
    ),
    foul(
        "19.2(2) twin: 5 mm apart, 6 mm of follow after meeting the ball",
        near_stroke(straight(1500.0, 1511.0, 1300.0)),
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
