"""One shot's events, paths and verdict, gathered from a capture's replay.

The picture needs what the referee saw: the balls at the stroke
(``shot_start``), their paths (``shot_end``), every event in between in
order, and the shot's final verdict line.  :func:`shots_of` cuts a replay
into those, once, so that ``plot --all`` and the match report do not replay
a capture per shot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from rules.shot import position_at

Event = dict[str, Any]


@dataclass
class ShotView:
    number: int
    start: Event
    end: Event | None
    events: list[Event] = field(default_factory=list)  # between start and end, in order
    verdict: Event | None = None  # the shot's final verdict line (not an early announcement)

    @property
    def t0(self) -> int:
        """The stroke: the first tip contact, else the shot's start."""
        tip = next((e for e in self.events if e["type"] == "cue_contact"), None)
        return int((tip or self.start)["t_us"])

    @property
    def balls(self) -> dict[int, tuple[float, float]]:
        raw = self.start.get("balls") or {}
        return {int(b): (float(xy[0]), float(xy[1])) for b, xy in raw.items()}

    def path(self, ball: int) -> list[tuple[int, float, float]]:
        raw = ((self.end or {}).get("paths") or {}).get(str(ball), [])
        return [(int(t), float(x), float(y)) for t, x, y in raw]

    def at(self, ball: int, t: int) -> tuple[float, float] | None:
        """Where ``ball`` was at ``t``: on its path (straight between vertices), else at rest."""
        rest = self.balls.get(ball)
        return None if rest is None else position_at(self.path(ball), rest, self.t0, t)

    def moving_before(self, ball: int | None, t: int, within_us: int, moved_mm: float) -> bool:
        """Whether ``ball`` was rolling ``within_us`` before ``t``: its path has a leg
        across that instant that goes somewhere (a ball at rest, or one whose path starts
        later -- struck at ``t`` -- has none)."""
        if ball is None:
            return False
        before = t - within_us
        path = self.path(ball)
        for (ta, xa, ya), (tb, xb, yb) in pairwise(path):
            if ta <= before < tb:
                return math.hypot(xb - xa, yb - ya) >= moved_mm
        return False


def shots_of(events: list[Event], lines: list[Event]) -> dict[int, ShotView]:
    """Every shot of a replay, by number."""
    shots: dict[int, ShotView] = {}
    current: ShotView | None = None
    for ev in events:
        kind = ev["type"]
        if kind == "shot_start":
            current = shots[int(ev["shot"])] = ShotView(int(ev["shot"]), ev, None)
        elif current is not None and ev.get("shot") == current.number:
            if kind == "shot_end":
                current.end = ev
            else:
                current.events.append(ev)
    for line in lines:
        shot = line.get("shot")
        if line.get("kind") == "verdict" and shot in shots and not line.get("early"):
            shots[shot].verdict = line
    return shots
