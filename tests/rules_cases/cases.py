"""The clause tables: each rule's positive case beside its failing twin.

A case is a shot told as events (tests/rules_cases/events.py) and the
verdict the last line must carry.  The clause tests, the sensor-set replay
and the ``judge`` command test all read these tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rules.config import RulesConfig

from .events import D, L, Match, W

Build = Callable[[], Match]


@dataclass(frozen=True)
class Case:
    name: str
    build: Build
    verdict: str
    rules: tuple[str, ...] = ()
    satisfied: str | None = None
    config: RulesConfig | None = None


def legal(name: str, build: Build, clause: str, config: RulesConfig | None = None) -> Case:
    return Case(name, build, "legal", (), clause, config)


def foul(name: str, build: Build, *rules: str, config: RulesConfig | None = None) -> Case:
    return Case(name, build, "foul", rules, None, config)


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


ITEM_20 += [
    foul(
        "19.2 note: played away from a touching ball, then nothing",
        _played_away(lambda m: m.cushion(0, 0)),
        "20",
    ),
    legal(
        "19.2 note twin: played away, then a real contact and a pot",
        _played_away(lambda m: m.hit(0, 5).pot(5, 0)),
        "20(1)",
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
]

# ------------------------------------------------------------------ the stroke: 14.2, 15, 17, 18, 19

COMBINED = RulesConfig(discipline="combined")
NEAR = {0: (1500.0, W / 2), 7: (1500.0 + D + 5, W / 2), 5: (800.0, 300.0)}


def near_stroke(path: list[tuple[float, float]]) -> Build:
    """The cue ball 5 mm from ball 7, a prolonged tip contact reaching it, then ball 7 pocketed."""

    def build() -> Match:
        m = after_break().shot(balls=NEAR, duration_us=6000).hit(0, 7, dt=3000).pot(7, 3)
        times = [m.since_stroke(i * 100_000) for i in range(len(path))]
        return m.end(paths={0: [(t, x, y) for t, (x, y) in zip(times, path)]})

    return build


STRAIGHT_FOLLOW = [(1500.0, W / 2), (1750.0, W / 2)]
AT_60 = [(1500.0, W / 2), (1600.0, W / 2 + 173.2), (1700.0, W / 2 + 346.4)]
DRAW_BACK = [(1500.0, W / 2), (1520.0, W / 2), (1300.0, W / 2)]
STUN_ON = [(1500.0, W / 2), (1520.0, W / 2), (1600.0, W / 2)]

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
    legal("19.2(1): played 60° off the line of centres", near_stroke(AT_60), "20(1)"),
    foul(
        "19.2(1) twin: played along the line of centres and followed",
        near_stroke(STRAIGHT_FOLLOW),
        "19.2",
    ),
    legal(
        "19.2(2): straight, but the cue ball did not go forward", near_stroke(DRAW_BACK), "20(1)"
    ),
    foul(
        "19.2(2) twin: straight, stopped, then rolled on past the ball's place",
        near_stroke(STUN_ON),
        "19.2",
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
