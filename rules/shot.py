"""One shot's judgement: the events between ``shot_start`` and ``shot_end`` to a verdict.

Every check returns :class:`Finding` values instead of deciding alone: a
foul, an item the sensors present leave open, or the clause that made the
shot legal.  The referee folds them into one EVENTS.md verdict, so several
fouls in one shot are all listed and a foul that is certain is not hidden
behind an item the sensors could not decide.

This module holds what every check shares: the shot as the referee collected
it, findings, and the geometry of balls at rest and on their paths.  The
checks are in files by what they judge: :mod:`.stroke` (15, 11.2, 18, 19),
:mod:`.result` (12.1 and 20), :mod:`.paths` (touches the tracker's paths
show that no sensor reported, and the evidence rule 17 is weighed against).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from protocol.geometry import DEFAULT_TABLE, Table

from .config import RulesConfig

# An event as the checks read it, of any type: the referee takes each type as its TypedDict
# (rules/catalogue.py, ``CushionEvent`` ...) and hands them on as this, read-only.
Event = Mapping[str, Any]
Point = tuple[float, float]
Path = tuple[int, float, float]  # t_us, x, y


@dataclass(frozen=True)
class Finding:
    """One reason behind a verdict: ``rule`` as written in the rules (or a clause)."""

    rule: str
    reason: str
    evidence: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return f"{self.reason}: {self.rule}"


MOVED_SLACK_US = 50_000  # a moving ball is first seen moving up to this long after its contact


@dataclass
class Shot:
    """What the referee collected about one shot while it ran."""

    number: int | None
    player: int
    is_break: bool
    start: Event
    events: list[Event] = field(default_factory=list)
    end: Event | None = None
    # DECLARE_FROZEN; None: nearest, unknown; a string (judge lets a hand-written arg be one)
    # matches no ball
    declared: set[int | str | None] = field(default_factory=set)
    fouls: list[Finding] = field(
        default_factory=list
    )  # 14.2, 11.3, 17, keypad calls: not from the stroke
    open: list[Finding] = field(default_factory=list)  # 14.2 on an estimated end
    table: Table = DEFAULT_TABLE
    announced: set[str] = field(default_factory=set)  # rules announced early
    cut_short: bool = False  # a new tip contact came before every ball stopped (14.2)
    moved: list[Event] = field(default_factory=list)  # ball_moved in the shot: 17, at its end

    @property
    def ball_mm(self) -> float:
        return self.table.ball_mm

    @property
    def struck(self) -> int | None:
        """The ball the tracker saw the tip strike, or None."""
        return self.start.get("cue_ball")

    @property
    def cue_ball(self) -> int | None:
        """The cue ball: the ball struck; on a break the coloured ball when the tracker
        could not tell (11.2: it is always the break's cue ball)."""
        struck = self.struck
        return 0 if struck is None and self.is_break else struck

    @property
    def tips(self) -> list[Event]:
        return [e for e in self.events if e["type"] == "cue_contact"]

    @property
    def t0(self) -> int:
        """The stroke: the first tip contact (the shot's start, 14.1)."""
        tips = self.tips
        return int(tips[0]["t_us"] if tips else self.start["t_us"])

    @property
    def tip_duration(self) -> int:
        tips = self.tips
        return int(tips[0].get("duration_us", 0)) if tips else 0

    @property
    def t_us(self) -> int:
        return int((self.end or self.start)["t_us"])

    def positions(self) -> dict[int, Point]:
        return positions_of(self.start.get("balls"))

    def path(self, ball: int) -> list[Path]:
        paths = (self.end or {}).get("paths") or {}
        return [
            (int(t), float(x), float(y)) for t, x, y in paths.get(str(ball), paths.get(ball, []))
        ]


@dataclass
class Outcome:
    fouls: list[Finding] = field(default_factory=list)
    open: list[Finding] = field(default_factory=list)
    satisfied: Finding | None = None
    pocketed: list[int | None] = field(default_factory=list)  # balls legally pocketed
    notes: list[Finding] = field(default_factory=list)  # clauses that excused the stroke


def positions_of(raw: dict[str, Any] | None) -> dict[int, Point]:
    """An event's ``balls`` ({"7": [x, y]}) keyed by ball number."""
    return {int(b): (float(xy[0]), float(xy[1])) for b, xy in (raw or {}).items()}


def frozen_map(raw: dict[str, Any] | None) -> dict[int, set[int]]:
    return {int(b): {int(c) for c in cs} for b, cs in (raw or {}).items()}


def ball_name(ball: int | None) -> str:
    if ball is None:
        return "a ball"
    return "the coloured ball" if ball == 0 else f"ball {ball}"


def ms_text(dt_us: int) -> str:
    """A span of µs as a reason says it."""
    return f"{dt_us / 1000:.1f} ms"


def surface_gap(a: Point, b: Point, ball_mm: float) -> float:
    """How far apart two balls' surfaces are (negative: overlapping readings)."""
    return math.dist(a, b) - ball_mm


def is_centre_cross(ev: Event) -> bool:
    """A crossing of the centre line (not the house line)."""
    return ev["type"] == "line_cross" and ev.get("line") == "centre"


def position_at(path: list[Path], rest: Point, t_start: int, t: int) -> Point:
    """Where a ball at rest at ``rest`` until ``t_start`` was at ``t``, on its path
    (straight, evenly timed between vertices; its last vertex once past it)."""
    points = [(t_start, rest[0], rest[1])] + [p for p in path if p[0] > t_start]
    for (ta, xa, ya), (tb, xb, yb) in pairwise(points):
        if t <= tb:
            f = (t - ta) / (tb - ta) if tb > ta else 1.0
            return xa + f * (xb - xa), ya + f * (yb - ya)
    return points[-1][1], points[-1][2]


def resting_against(shot: Shot, config: RulesConfig) -> dict[int, set[int]]:
    """Balls resting against cushions at the shot's start: reported frozen, within
    ``frozen_gap_mm`` of a nose by the tracker's positions, or declared (DECLARE_FROZEN)
    and within ``near_gap_mm`` of the nearest nose: the declaration settles what the
    tracker cannot resolve, not a ball plainly clear of every cushion."""
    out = frozen_map(shot.start.get("frozen"))
    table = shot.table
    for ball, (x, y) in shot.positions().items():
        nearest = table.cushion_of(x, y)
        gap = table.cushion_gap(nearest, x, y)
        limit = config.near_gap_mm if ball in shot.declared else config.frozen_gap_mm
        if gap <= limit:
            out.setdefault(ball, set()).add(nearest)
    return {b: cs for b, cs in out.items() if cs}
