"""Named scenarios: table situations the referee must decide, each with its intended verdicts.

Why designed by search: a layout and a stroke that *should* show, say,
item 20 (2)(b) may not once friction, throw of the cushions and the other
balls have their say.  Each scenario places its balls deliberately, then
tries strokes from a deterministic list (the nominal one first) until the
ground truth, judged by :mod:`.physics_verdicts`, gives exactly the
intended verdict and the scenario's own check of the situation passes.
The list is ordered so that the first or one of the first candidates
works; the search guards against a physics change silently breaking the
scenario (it raises instead).

A candidate is taken only if its neighbours (the angle a little either
side, the speed a little faster and slower) show the situation too, so the
chosen stroke sits inside the region that shows it, not on its edge where a
last-bit difference in floating point would flip the outcome.  Candidates
are re-iterable sequences, never a shared generator: a generator left
half-consumed by one build would make the next build of the same scenario
start elsewhere (or run dry), so a scenario's stroke would depend on what
the process built before.

Every builder returns a :class:`MatchTruth` whose ``verdicts`` are the
intended ones.  ``SCENARIOS`` maps name -> builder (no arguments).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocol.geometry import DEFAULT_TABLE

from .match import random_match
from .physics_truth import Shot, Timeline
from .truth import MatchTruth

T = DEFAULT_TABLE
L, W, D = T.length_mm, T.width_mm, T.ball_mm
R = D / 2
CX = T.centre_line_x

Point = tuple[float, float]
Intent = tuple[int | None, str, tuple[str, ...], str | None]  # shot, verdict, rules, satisfied


def angle_to(a: Point, b: Point) -> float:
    """Direction in degrees from a to b."""
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))


def ghost_angle(cue: Point, obj: Point, goal: Point) -> float:
    """Direction to strike ``cue`` so that it sends ``obj`` towards ``goal`` (ghost-ball aim)."""
    ux, uy = goal[0] - obj[0], goal[1] - obj[1]
    n = math.hypot(ux, uy)
    return angle_to(cue, (obj[0] - D * ux / n, obj[1] - D * uy / n))


def mouth(pocket: int) -> Point:
    """The middle of a pocket's mouth, a little inside it (where a straight pot aims)."""
    x, y = T.pocket_xy(pocket)
    return (x, y)


def around(x0: float, step: float, n: int) -> tuple[float, ...]:
    """x0, then alternately further above and below it: a search that tries the nominal first.

    A tuple, not a generator: it may sit in a default argument or be walked twice.
    """
    return (x0, *(x0 + sign * k * step for k in range(1, n + 1) for sign in (1, -1)))


Play = Callable[[Timeline, Any], None]

# How far a neighbour of a candidate lies: well above the last bit of a
# double, well below the search's own steps (0.1 degree, 0.05 m/s at the finest).
NEIGHBOUR_DEG = 0.02
NEIGHBOUR_SPEED = 0.005  # relative


def _nudged(params: Any, d_deg: float, speed_factor: float) -> Any:
    """The candidate with its (first) stroke turned by d_deg and its speed scaled."""
    if isinstance(params, Shot):
        return dataclasses.replace(
            params,
            angle_deg=params.angle_deg + d_deg,
            speed_mps=params.speed_mps * speed_factor,
        )
    first, *rest = params
    return (_nudged(first, d_deg, speed_factor), *rest)


def neighbours(params: Any) -> list[Any]:
    """The four strokes just around a candidate: turned either way, faster and slower."""
    return [
        _nudged(params, -NEIGHBOUR_DEG, 1.0),
        _nudged(params, NEIGHBOUR_DEG, 1.0),
        _nudged(params, 0.0, 1.0 - NEIGHBOUR_SPEED),
        _nudged(params, 0.0, 1.0 + NEIGHBOUR_SPEED),
    ]


@dataclass
class Design:
    """A layout, a family of strokes and the verdicts they must produce."""

    name: str
    layout: dict[int, Point]
    play: Play  # plays the shots of one candidate on a timeline already holding the layout
    candidates: Sequence[Any]  # a Shot, or a tuple whose first item is a Shot
    intended: Sequence[Intent]
    check: Callable[[MatchTruth], bool] = lambda truth: True
    racked: int = 0  # rack this many white balls first (a break)
    setup: Callable[[Timeline], None] | None = None

    def timeline(self) -> Timeline:
        tl = Timeline(name=self.name)
        tl.wait(1.0)
        if self.racked:
            tl.rack(self.racked)
        tl.place(self.layout, every_s=0.5)
        tl.rest()
        if self.setup is not None:
            self.setup(tl)
        return tl

    def build(self) -> MatchTruth:
        for params in self.candidates:
            truth = self.shows(params)
            if truth is not None and all(self.shows(n) is not None for n in neighbours(params)):
                return truth
        raise RuntimeError(
            f"scenario {self.name}: no candidate stroke shows the intended situation"
        )

    def shows(self, params: Any) -> MatchTruth | None:
        """The truth of one candidate if it gives the intended verdicts and passes the check."""
        tl = self.timeline()
        try:
            self.play(tl, params)
        except RuntimeError:  # a numerical runaway: not this candidate
            return None
        truth = tl.truth()
        if verdicts_match(truth.verdicts, self.intended) and self.check(truth):
            return truth
        return None


def verdicts_match(verdicts: list[dict[str, Any]], intended: Sequence[Intent]) -> bool:
    got = [
        (v["shot"], v["verdict"], tuple(v["rules"]), v.get("satisfied"))
        for v in verdicts
        if v["kind"] == "verdict"
    ]
    return got == list(intended)


# ---------------------------------------------------------------- helpers for checks


def events(truth: MatchTruth, kind: str, shot: int | None = None) -> list[dict[str, Any]]:
    return [e for e in truth.events if e["type"] == kind and (shot is None or e["shot"] == shot)]


def first_contact(truth: MatchTruth, shot: int = 1) -> dict[str, Any]:
    cue = events(truth, "shot_start", shot)[0]["cue_ball"]
    return next(e for e in events(truth, "ball_contact", shot) if cue in e["balls"])


def one_shot(pause_s: float = 3.0) -> Play:
    """Play a single stroke built from the candidate (a Shot)."""

    def play(tl: Timeline, shot: Shot) -> None:
        tl.shot(shot, pause_s=pause_s)

    return play


def strokes(ball: int, angles: Iterable[float], speeds: Iterable[float], **kw: Any) -> list[Shot]:
    """Every angle with every speed, angle by angle."""
    speeds = list(speeds)
    return [Shot(ball, a, s, **kw) for a in angles for s in speeds]


# ---------------------------------------------------------------- breaks (12.1)


def _break_design(
    name: str,
    satisfied: str | None,
    cue_xy: Point,
    speeds: Sequence[float],
    offsets: Sequence[float],
    n: int = 15,
    check: Callable[[MatchTruth], bool] = lambda t: True,
    rules: tuple[str, ...] | None = None,
    **kw: Any,
) -> Design:
    apex = T.back_mark

    def play(tl: Timeline, shot: Shot) -> None:
        tl.shot(shot, pause_s=3.0, is_break=True)

    candidates = [
        Shot(0, angle_to(cue_xy, apex) + off, s, top=0.3) for off in offsets for s in speeds
    ]

    verdict = "legal" if satisfied else "foul"
    return Design(
        name,
        {0: cue_xy},
        play,
        candidates,
        [(1, verdict, rules if rules is not None else (() if satisfied else ("12.1",)), satisfied)],
        check,
        racked=n,
        **kw,
    )


def break_pot() -> MatchTruth:
    """12.1(1): a ball pocketed on the break.

    A full-rack break is chaotic: strokes that pot, with neighbours that pot
    too, are scattered.  The search starts at one found by searching around
    the apex (11 m/s, 4.2 degrees below it), which saves testing ~60 others.
    """
    return _break_design(
        "break_12_1_1", "12.1(1)", (600.0, 889.0), (11.0, 12.0, 10.0), around(-4.2, 0.15, 40)
    ).build()


def break_three_cushions() -> MatchTruth:
    """12.1(2): three object balls at cushions, nothing pocketed."""
    return _break_design(
        "break_12_1_2", "12.1(2)", (600.0, 889.0), (12.0,), around(0.0, 0.2, 20)
    ).build()


def break_two_cushions_and_centre() -> MatchTruth:
    """12.1(3): only two object balls at cushions, but one crossed the centre line."""
    return _break_design(
        "break_12_1_3",
        "12.1(3)",
        (600.0, 889.0),
        (3.0, 2.5, 3.5, 2.0, 4.0, 4.5, 5.0),
        around(0.0, 0.5, 8),
    ).build()


def break_illegal() -> MatchTruth:
    """12.1 not met: a soft break sends too few balls anywhere."""
    return _break_design(
        "break_illegal", None, (600.0, 889.0), (1.5, 1.8, 2.0, 1.2), around(0.0, 0.5, 6)
    ).build()


def coloured_outside_house() -> MatchTruth:
    """11.3: the coloured ball 20 mm beyond the house line; warned, then broken from there."""

    def warn(tl: Timeline) -> None:
        tl.notice(["11.3"], "coloured ball is outside the house")

    return _break_design(
        "coloured_outside_11_3",
        None,
        (T.house_line_x + 20.0, 889.0),
        (12.0,),
        around(0.0, 0.2, 20),
        rules=("11.3",),
        setup=warn,
    ).build()


def incomplete_rack() -> MatchTruth:
    """Item 8 note: a ten-ball incomplete pyramid, broken legally."""
    return _break_design(
        "incomplete_rack", "12.1(2)", (600.0, 889.0), (12.0,), around(0.0, 0.2, 20), n=10
    ).build()


# ---------------------------------------------------------------- the stroke (18, 19)


def pot_layout(cue_gap_mm: float) -> tuple[dict[int, Point], float]:
    """Object ball 1 lined up on corner pocket 0, the cue ball cue_gap_mm behind it.

    Returns the layout and the direction of the line of centres (cue -> object).
    """
    obj = (420.0, 420.0)
    line = angle_to(obj, mouth(0))  # object -> pocket
    back = math.radians(line + 180.0)
    dist = D + cue_gap_mm
    cue = (obj[0] + dist * math.cos(back), obj[1] + dist * math.sin(back))
    return {0: cue, 1: obj}, line


def push() -> MatchTruth:
    """19.1: the tip (a 12 ms contact) still on the cue ball when it meets a ball 20 mm away."""
    layout, line = pot_layout(20.0)

    def check(truth: MatchTruth) -> bool:
        tip = events(truth, "cue_contact", 1)[0]
        return first_contact(truth)["t_s"] <= tip["t_s"] + tip["duration_us"] / 1e6

    return Design(
        "push",
        layout,
        one_shot(),
        strokes(0, around(line, 0.1, 10), (2.0, 1.8, 2.2), contact_ms=12.0),
        [(1, "foul", ("19.1",), None)],
        check,
    ).build()


def _touching(
    name: str, off_deg: float, top: float, intended: Intent, follow_through: bool = True
) -> MatchTruth:
    """Cue ball touching ball 1, which is lined up on corner pocket 0; stroked off_deg off the line."""
    layout, line = pot_layout(0.0)

    def check(truth: MatchTruth) -> bool:
        stroke = truth.strokes[0]["angle_deg"]
        off = abs((stroke - line + 180.0) % 360.0 - 180.0)
        return (off >= 45.0) == (abs(off_deg) >= 45.0)

    return Design(
        name,
        layout,
        one_shot(),
        strokes(
            0,
            around(line + off_deg, 0.5, 6),
            (2.0, 1.5, 2.5, 3.0),
            top=top,
            follow_through=follow_through,
        ),
        [intended],
        check,
    ).build()


def push_45() -> MatchTruth:
    """19.2(1): cue ball touching the object ball, played 55° off the line of centres: not a push."""
    return _touching("push_19_2_45deg", 55.0, 0.0, (1, "legal", (), "20(1)"))


def push_45_fail() -> MatchTruth:
    """19.2(1) failing twin: played 15° off the line of centres and following through: a foul."""
    return _touching("push_19_2_45deg_fail", 15.0, 1.0, (1, "foul", ("19.2",), None))


def push_no_follow() -> MatchTruth:
    """19.2(2): straight at a touching ball, a stab with draw: the cue ball does not go forward."""
    return _touching(
        "push_19_2_no_follow",
        0.0,
        -1.0,
        (1, "legal", (), "20(1)"),
        follow_through=False,
    )


def push_no_follow_fail() -> MatchTruth:
    """19.2(2) failing twin: straight through a touching ball, following through: the cue ball goes on."""
    return _touching(
        "push_19_2_no_follow_fail",
        0.0,
        1.0,
        (1, "foul", ("19.2",), None),
    )


def double_hit() -> MatchTruth:
    """18: the tip touches the cue ball a second time 25 ms after the stroke."""
    layout, line = pot_layout(300.0)
    return Design(
        "double_hit",
        layout,
        one_shot(),
        strokes(0, around(line, 0.1, 10), (1.5, 2.0, 1.2), double_hit_ms=25.0),
        [(1, "foul", ("18",), None)],
        lambda t: len(events(t, "cue_contact", 1)) == 2,
    ).build()


# ---------------------------------------------------------------- item 20


def _only(clause: str) -> Callable[[MatchTruth], bool]:
    """The shot meets exactly this clause and no other (the judge's full list)."""
    from .physics_verdicts import judge_shot

    def check(truth: MatchTruth) -> bool:
        shot_events = [e for e in truth.events if e["shot"] == 1]
        angle = truth.strokes[0]["angle_deg"]
        return set(
            judge_shot(shot_events, truth.table, is_break=False, stroke_deg=angle).satisfied
        ) == {clause}

    return check


def _touched(a: int, b: int) -> Callable[[MatchTruth], bool]:
    """Balls a and b met during the shot."""
    return lambda truth: any(set(e["balls"]) == {a, b} for e in events(truth, "ball_contact", 1))


def _no_pot_no_cushion(truth: MatchTruth) -> bool:
    return not events(truth, "pocket") and not events(truth, "cushion")


def _one_cushion(truth: MatchTruth) -> bool:
    return len(events(truth, "cushion")) == 1


def _one_cushion_no_centre(truth: MatchTruth) -> bool:
    centre = [e for e in events(truth, "line_cross") if e["line"] == "centre"]
    return _one_cushion(truth) and not centre


def _crossed_and_touched(a: int, b: int) -> Callable[[MatchTruth], bool]:
    return lambda truth: (
        _touched(a, b)(truth)
        and any(e["ball"] == b and e["line"] == "centre" for e in events(truth, "line_cross", 1))
    )


def _back_to_the_same_cushion(truth: MatchTruth) -> bool:
    """Ball 1 rebounds off cushion 1, meets ball 2, and ball 2 then reaches cushion 1 too."""
    rebound = [
        e["t_s"] for e in events(truth, "cushion", 1) if e["ball"] == 1 and e["cushion"] == 1
    ]
    meet = [e["t_s"] for e in events(truth, "ball_contact", 1) if set(e["balls"]) == {1, 2}]
    back = [e["t_s"] for e in events(truth, "cushion", 1) if e["ball"] == 2 and e["cushion"] == 1]
    return bool(rebound and meet and back) and rebound[0] < meet[0] < back[-1]


def _rebound_and_crossing_before_contact(truth: MatchTruth) -> bool:
    t_c = first_contact(truth)["t_s"]
    before = [e for e in truth.events if e["shot"] == 1 and e["t_s"] < t_c]
    return any(e["type"] == "cushion" for e in before) and any(
        e["type"] == "line_cross" and e["line"] == "centre" for e in before
    )


@dataclass(frozen=True)
class Aimed:
    """One stroke of ball 0 from a layout: a ghost-ball aim sending ball 1 towards ``goal``
    (or straight at ``at``), searched over angle (``spread`` steps, ``n`` each way) and speed."""

    doc: str
    layout: dict[int, Point]
    clause: str | None  # None: a foul of item 20
    check: Callable[[MatchTruth], bool]
    goal: Point | None = None
    at: Point | None = None
    speeds: tuple[float, ...] = (1.5, 1.0, 2.0, 0.8, 2.5, 3.0)
    spread: float = 1.0
    n: int = 12
    top: float = 0.0

    def build(self, name: str) -> MatchTruth:
        cue = self.layout[0]
        base = (
            ghost_angle(cue, self.layout[1], self.goal)
            if self.goal
            else angle_to(cue, self.at or cue)
        )
        intended: Intent = (
            (1, "legal", (), self.clause) if self.clause else (1, "foul", ("20",), None)
        )
        candidates = strokes(0, around(base, self.spread, self.n), self.speeds, top=self.top)
        return Design(name, self.layout, one_shot(), candidates, [intended], self.check).build()


_POT, _ = pot_layout(250.0)
_FRONT = {0: (900.0, 700.0), 1: (700.0, 450.0)}  # (2): all in the front half, no centre line
_TWO_B = {0: (1300.0, 500.0), 1: (1100.0, 200.0)}
_CROSS = {0: (1500.0, 700.0), 1: (1700.0, 800.0)}  # (3): ball 1 starts just before the centre line
_CROSS_C = {0: (1400.0, 1100.0), 1: (1650.0, 1250.0)}
_FOUR = {
    0: (1200.0, 700.0),
    1: (1300.0, 400.0),
}  # (4): off the left cushion towards the centre line
_FOUR_A = {0: (1100.0, 900.0), 1: (1300.0, 600.0)}

ITEM20: dict[str, Aimed] = {
    "item20_1": Aimed(
        "20(1): the object ball pocketed.", _POT, "20(1)", _only("20(1)"), at=mouth(0), spread=0.1
    ),
    "item20_1_fail": Aimed(
        "20(1) failing twin: the object ball rolls towards the pocket but stops short.",
        _POT,
        None,
        _no_pot_no_cushion,
        at=mouth(0),
        speeds=(0.3, 0.25, 0.35),
        spread=0.1,
    ),
    "item20_2a": Aimed(
        "20(2)(a): the object ball rebounds off the left cushion and runs into the front cushion.",
        _FRONT,
        "20(2)(a)",
        _only("20(2)(a)"),
        goal=(450.0, 0.0),
        speeds=(1.5, 2.0, 2.5, 3.0),
    ),
    "item20_2a_fail": Aimed(
        "20(2)(a) failing twin: the object ball rebounds off the left cushion and stops.",
        _FRONT,
        None,
        _one_cushion,
        goal=(450.0, 0.0),
        speeds=(0.6, 0.5, 0.7, 0.8),
    ),
    "item20_2b": Aimed(
        "20(2)(b): the cue ball rebounds off the left cushion and drives ball 2 into the front cushion.",
        _TWO_B | {2: (450.0, 300.0)},
        "20(2)(b)",
        _only("20(2)(b)"),
        goal=(900.0, 0.0),
        n=20,
        speeds=(2.0, 2.5, 3.0, 1.5),
        top=0.5,
    ),
    "item20_2b_fail": Aimed(
        "20(2)(b) failing twin: the driven ball goes to the cushion the driver rebounded from.",
        _TWO_B | {2: (800.0, 60.0)},
        None,
        _back_to_the_same_cushion,
        goal=(900.0, 0.0),
        n=20,
        speeds=(1.0, 1.5, 1.2),
        top=0.5,
    ),
    "item20_2c": Aimed(
        "20(2)(c): the object ball rebounds off the left cushion and touches ball 2 frozen to the front cushion.",
        _FRONT | {2: (R, 250.0)},
        "20(2)(c)",
        _touched(1, 2),
        goal=(400.0, 0.0),
        n=20,
        speeds=(0.8, 1.0, 0.7, 1.2, 0.6),
    ),
    "item20_2c_fail": Aimed(
        "20(2)(c) failing twin: the touched ball rests against the cushion the rebound came from.",
        _FRONT | {2: (250.0, R)},
        None,
        _touched(1, 2),
        goal=(450.0, 0.0),
        n=20,
        speeds=(0.8, 1.0, 0.7, 0.6, 1.2),
    ),
    "item20_3a": Aimed(
        "20(3)(a): the object ball crosses the centre line and reaches the right cushion.",
        _CROSS,
        "20(3)(a)",
        _only("20(3)(a)"),
        goal=(2400.0, W),
        speeds=(1.0, 1.5, 0.8, 2.0),
    ),
    "item20_3a_fail": Aimed(
        "20(3)(a) failing twin: a ball crosses the centre line and stops before any cushion.",
        _CROSS,
        None,
        lambda t: bool(events(t, "line_cross")) and not events(t, "cushion"),
        goal=(2400.0, W),
        speeds=(0.4, 0.35, 0.45, 0.3),
    ),
    "item20_3b": Aimed(
        "20(3)(b): the object ball crosses the centre line and drives ball 2 into the back cushion.",
        {0: (1400.0, 889.0), 1: (1650.0, 889.0), 2: (2900.0, 889.0)},
        "20(3)(b)",
        _only("20(3)(b)"),
        goal=(2900.0, 889.0),
        spread=0.3,
        speeds=(2.0, 2.5, 1.5, 3.0),
    ),
    "item20_3b_fail": Aimed(
        "20(3)(b) failing twin: the object ball crosses the centre line and nudges ball 2, which stops short.",
        {0: (1400.0, 889.0), 1: (1650.0, 889.0), 2: (2200.0, 889.0)},
        None,
        _touched(1, 2),
        goal=(2200.0, 889.0),
        spread=0.3,
        speeds=(0.6, 0.7, 0.5, 0.8),
    ),
    "item20_3c": Aimed(
        "20(3)(c): the object ball crosses the centre line and touches ball 2 frozen to the right cushion.",
        _CROSS_C | {2: (2200.0, W - R)},
        "20(3)(c)",
        _touched(1, 2),
        goal=(2200.0, W - R),
        spread=0.3,
        n=10,
        speeds=tuple(around(0.9, 0.05, 8)),
    ),
    "item20_3c_fail": Aimed(
        "20(3)(c) failing twin: the touched ball is 30 mm off the cushion, not resting against it.",
        _CROSS_C | {2: (2200.0, W - R - 30.0)},
        None,
        _touched(1, 2),
        goal=(2200.0, W - R - 30.0),
        spread=0.3,
        n=10,
        speeds=tuple(around(0.8, 0.03, 10)),
    ),
    "item20_4a": Aimed(
        "20(4)(a): the object ball rebounds off the left cushion and crosses the centre line.",
        _FOUR_A,
        "20(4)(a)",
        _only("20(4)(a)"),
        goal=(1550.0, 0.0),
        speeds=(1.0, 1.2, 0.8, 1.5),
    ),
    "item20_4a_fail": Aimed(
        "20(4)(a) failing twin: a ball rebounds off the left cushion and stops short of the centre line.",
        _FOUR_A,
        None,
        _one_cushion_no_centre,
        goal=(1550.0, 0.0),
        speeds=(0.6, 0.5, 0.7, 0.45),
    ),
    "item20_4b": Aimed(
        "20(4)(b): the object ball rebounds off the left cushion and rolls ball 2 across the centre line.",
        _FOUR | {2: (1660.0, 366.0)},
        "20(4)(b)",
        _crossed_and_touched(1, 2),
        goal=(1450.0, 0.0),
        spread=0.5,
        speeds=(1.5, 2.0, 2.5, 1.2, 3.0),
    ),
    "item20_4b_fail": Aimed(
        "20(4)(b) failing twin: the object ball rebounds and touches ball 2, which stops short of the line.",
        _FOUR | {2: (1560.0, 250.0)},
        None,
        _touched(1, 2),
        goal=(1450.0, 0.0),
        spread=0.5,
        speeds=tuple(around(0.8, 0.05, 8)),
    ),
    "note1_order": Aimed(
        "Note 1: the rebound and the crossing of 20(4)(a) happen, but before the first contact.",
        {0: (2200.0, 1200.0), 1: (1733.0, 895.0)},
        None,
        _rebound_and_crossing_before_contact,
        at=(2000.0, 0.0),
        spread=0.5,
        speeds=tuple(around(1.8, 0.2, 5)),
        top=1.0,
    ),
}


# note 2: the first object ball rests against a cushion and sends the cue ball on.

_NOTE2 = {0: (1100.0, 450.0), 1: (1100.0, R)}


def _note2(
    name: str,
    declare: bool,
    clause: str | None,
    check: Callable[[MatchTruth], bool],
    layout: dict[int, Point] = _NOTE2,
    angles: Sequence[float] = around(-90.0, 0.5, 6),
    speeds: Sequence[float] = (1.5, 2.0, 1.2, 2.5),
    top: float = 1.0,
) -> MatchTruth:
    def setup(tl: Timeline) -> None:
        if declare:
            tl.wait(2.0)
            tl.keypad("declare_frozen", 1)

    intended: Intent = (1, "legal", (), clause) if clause else (1, "foul", ("20",), None)
    return Design(
        name,
        layout,
        one_shot(),
        strokes(0, angles, speeds, top=top),
        [intended],
        check,
        setup=setup,
    ).build()


def _cue_contacts(truth: MatchTruth) -> int:
    return sum(1 for e in events(truth, "ball_contact", 1) if set(e["balls"]) == {0, 1})


def _one_contact_and_on(truth: MatchTruth) -> bool:
    """One contact with the frozen ball, and the cue ball then reaches another cushion or the centre line."""
    t_c = first_contact(truth)["t_s"]
    on = any(
        e["ball"] == 0
        and e["t_s"] > t_c
        and (
            e["type"] == "line_cross"
            and e["line"] == "centre"
            or e["type"] == "cushion"
            and e["cushion"] != 1
        )
        for e in truth.events
        if e["shot"] == 1 and e["type"] in ("line_cross", "cushion")
    )
    return _cue_contacts(truth) == 1 and on


def note2_separate() -> MatchTruth:
    """Note 2: cue ball -> frozen ball -> cushion -> cue ball again, two separate contacts, then a cushion.

    The object ball rests 1.2 mm off the cushion (frozen within the rules' 1.5 mm), so it
    comes back off the cushion and meets the cue ball a few milliseconds after the first contact.
    """
    layout = {0: (1100.0, 450.0), 1: (1100.0, R + 1.2)}
    return _note2(
        "note2_two_contacts",
        False,
        "20 note 2",
        lambda t: _cue_contacts(t) >= 2,
        layout,
        around(-90.0, 0.5, 4),
        (2.5, 2.0, 3.0, 1.5),
        top=-0.5,
    )


def note2_declared() -> MatchTruth:
    """Note 2: one contact with the frozen ball, but declared with DECLARE_FROZEN: legal."""
    return _note2("note2_declared", True, "20 note 2", _one_contact_and_on)


def note2_neither() -> MatchTruth:
    """Note 2: one contact with the frozen ball and no declaration: a foul."""
    return _note2("note2_neither", False, None, _one_contact_and_on)


# ---------------------------------------------------------------- 14.2, 17


def early_shot() -> MatchTruth:
    """14.2: a pot, then the next stroke while the first shot's cue ball still rolls."""
    layout, line = pot_layout(250.0)
    layout |= {2: (1500.0, 1300.0), 3: (900.0, 1500.0)}
    pot2 = ghost_angle(layout[2], layout[3], mouth(5))

    def play(tl: Timeline, params: tuple[Shot, float]) -> None:
        first, wait = params
        tl.strike(first)
        tl.wait(wait)
        tl.strike(Shot(2, pot2, 2.0))
        tl.settle()

    candidates = [
        (Shot(0, a, 2.0, top=1.0), wait) for a in around(line, 0.1, 6) for wait in (1.5, 1.0, 2.0)
    ]

    def check(truth: MatchTruth) -> bool:
        start2 = events(truth, "shot_start", 2)[0]["t_s"]
        _, state, present = truth.sample(np.array([start2 - 1e-6]))
        return (
            bool((state[0][present[0]] != 0).any())
            and events(truth, "shot_end", 1)[0]["interrupted"]
        )

    return Design(
        "early_shot_14_2",
        layout,
        play,
        candidates,
        [(1, "legal", (), "20(1)"), (2, "foul", ("14.2",), None)],
        check,
    ).build()


def ball_nudged() -> MatchTruth:
    """17: after a shot, a sleeve nudges a ball at rest."""
    layout = {0: (900.0, 700.0), 1: (700.0, 450.0), 5: (2500.0, 1200.0)}

    def play(tl: Timeline, shot: Shot) -> None:
        tl.shot(shot, pause_s=3.0)
        tl.wait(6.0)
        tl.nudge(5, 30.0, 0.15)
        tl.rest()

    return Design(
        "ball_nudged_17",
        layout,
        play,
        strokes(
            0, around(ghost_angle(layout[0], layout[1], (450.0, 0.0)), 1.0, 12), (1.5, 2.0, 2.5)
        ),
        [(1, "legal", (), "20(2)(a)"), (None, "foul", ("17",), None)],
        lambda t: len(events(t, "ball_moved")) == 1,
    ).build()


# ---------------------------------------------------------------- the library


SCENARIOS: dict[str, Callable[[], MatchTruth]] = {
    "break_12_1_1": break_pot,
    "break_12_1_2": break_three_cushions,
    "break_12_1_3": break_two_cushions_and_centre,
    "break_illegal": break_illegal,
    "coloured_outside_11_3": coloured_outside_house,
    "incomplete_rack": incomplete_rack,
    "push": push,
    "push_19_2_45deg": push_45,
    "push_19_2_45deg_fail": push_45_fail,
    "push_19_2_no_follow": push_no_follow,
    "push_19_2_no_follow_fail": push_no_follow_fail,
    "double_hit": double_hit,
    "note2_two_contacts": note2_separate,
    "note2_declared": note2_declared,
    "note2_neither": note2_neither,
    "early_shot_14_2": early_shot,
    "ball_nudged_17": ball_nudged,
    **{name: functools.partial(spec.build, name) for name, spec in ITEM20.items()},
    "random": lambda: random_match(seed=0, minutes=3.0),
}

__all__ = ["SCENARIOS", "random_match"]
