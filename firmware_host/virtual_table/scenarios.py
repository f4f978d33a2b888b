"""Named scenarios: table situations the referee must decide, each with its intended verdicts."""

from __future__ import annotations

from collections.abc import Callable

from .match import random_match
from .physics_truth import Shot, Timeline
from .truth import MatchTruth


def single_ball_cushion() -> MatchTruth:
    """One ball rolled into the back cushion: a cushion, line crossings, a stop."""
    tl = Timeline(name="single_ball_cushion")
    tl.place({0: (600.0, 889.0)})
    tl.rest()
    tl.shot(Shot(0, 0.0, 2.5, top=1.0), pause_s=2.0)
    tl.verdict(1, "foul", ["20"])
    return tl.truth()


def straight_shot() -> MatchTruth:
    """A stun shot straight into a ball."""
    tl = Timeline(name="straight_shot")
    tl.place({0: (800.0, 889.0), 1: (1500.0, 889.0)})
    tl.rest()
    tl.shot(Shot(0, 0.0, 2.0), pause_s=2.0)
    return tl.truth()


SCENARIOS: dict[str, Callable[[], MatchTruth]] = {
    "single_ball_cushion": single_ball_cushion,
    "straight_shot": straight_shot,
}

__all__ = ["SCENARIOS", "random_match"]
