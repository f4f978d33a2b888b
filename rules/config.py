"""What the engine is told rather than what it sees: the settings and the sensor set.

Everything items 8-20 leave open is a :class:`RulesConfig` field with a
documented default (docs/rules.md).  What the sensors present can decide
is a :class:`SensorSet`, built from the ``boot`` event's ``nodes`` list so
that a table without a tracker gets ``referee`` instead of a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

DISCIPLINES = ("free", "combined")

# Node names as in protocol.catalogue.NODE_NAMES (a test keeps them in step);
# the engine stays free of the construct catalogue.
SENSOR_NODES = ("hub", "rails", "pockets", "cue", "tracker", "lines", "acoustic", "keypad")
MINIMUM_NODES = ("hub", "rails", "pockets", "cue")
MIDDLE_NODES = (*MINIMUM_NODES, "lines", "acoustic")


@dataclass(frozen=True)
class RulesConfig:
    """Settings beyond the rules' text.

    ``near_gap_mm``: balls closer than this count as
    "so close that a triple contact can hardly be avoided" (19.2).
    ``near_gap_band_mm``: a gap read within this of ``near_gap_mm`` may lie on
    either side of it (about four times the 0.07 mm rms to which the tracker
    reads a gap at rest, as the stroke's band is three times its rms): 19.2 and
    the push are decided there only where both readings agree, else left to
    the referee.
    ``frozen_gap_mm``: a ball this close to a cushion nose rests against it
    (item 20), the tracker's uncertainty.  ``penalty_ball``: a foul removes
    one white ball from the table for the opponent, so a re-rack after it has
    one ball fewer (note to 12.2).  ``hand_moves_after_foul``: after a foul,
    balls moved by hand before the next shot are the penalty ball being
    taken, not item 17.  ``near_contact_us``: without a tracker, a first
    contact this soon after the stroke may be a 19.2 case (balls touching or
    nearly), whatever the tip contact's duration, so it is left to the
    referee; a later contact the tip was still on is a push (19.1).
    ``stroke_window_us``: 19.2(1) reads the stroke from both balls' travel
    this long after the collision (their momentum), see docs/rules.md.
    ``stroke_angle_band_deg``: three times that reading's uncertainty (2.8° rms
    on the virtual table): a stroke read within it of 45° may lie on either
    side, so 19.2(1) is left to the referee there unless 19.2(2) decides.
    """

    discipline: str = "free"
    near_gap_mm: float = 10.0
    near_gap_band_mm: float = 0.3
    near_contact_us: int = 5000
    frozen_gap_mm: float = 1.5
    rack_tolerance_mm: float = 10.0
    path_tolerance_mm: float = 2.0
    follow_tolerance_mm: float = 5.0
    stroke_window_us: int = 15_000
    stroke_angle_band_deg: float = 8.0
    penalty_ball: bool = True
    hand_moves_after_foul: bool = True

    def __post_init__(self) -> None:
        if self.discipline not in DISCIPLINES:
            raise ValueError(f"discipline must be one of {DISCIPLINES}, not {self.discipline!r}")


@dataclass(frozen=True)
class SensorSet:
    """The nodes present, and the decisions they allow (RULES.md's sensor table)."""

    nodes: frozenset[str] = frozenset(SENSOR_NODES)

    @property
    def tracker(self) -> bool:
        """Ball identities, positions, paths, frozen balls: 19.2, 17, 11.3, 8, item 20 by ball."""
        return "tracker" in self.nodes

    @property
    def contact_times(self) -> bool:
        """When the cue ball first met another ball: push (19.1), pots after the first contact."""
        return self.tracker or "acoustic" in self.nodes
