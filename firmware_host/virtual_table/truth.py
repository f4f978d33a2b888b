"""The contract between the table physics and the sensor model.

The physics (``physics.py``, ``scenarios.py``) plays a match and returns a
:class:`MatchTruth`: what really happened, in *true* time (seconds since the
match started, one perfect clock).  The sensor model (``sensors.py``) turns
it into wire bytes through every node's imperfect clock and sensor, and
writes the ground truth beside the capture with true hub times.

Events are EVENTS.md event dicts, with ``t_s`` (true seconds, float) in
place of ``t_us``; the sensor model adds ``t_us`` from the hub clock.
Kinds starting with ``_`` are physics detail the sensor model needs but
EVENTS.md does not define; they are stripped from the truth file:

* ``_ball_start`` / ``_ball_stop`` ``{"ball"}`` -- a ball begins or ends motion
  (spinning in place counts as moving, item 14.1);
* ``_line_touch`` ``{"ball", "line", "side"}`` -- a ball's body entered a
  line's curtain (centre within a radius of it) and left on ``side``, the
  side it came from, without its centre crossing (the curtain reports
  direction 2); stamped when it leaves.

``shot_end.paths`` vertices are ``[t_s, x_mm, y_mm]``, true seconds like
every ``t_s``: map them to hub microseconds as the events are.  Verdicts
carry ``evidence_s`` (true seconds) for EVENTS.md's ``evidence``.  The
physics' ``boot`` event has only ``table``; the sensor model knows the
``boot_id`` and the ``nodes``.

Every ``cushion``, ``pocket`` and ``ball_contact`` event also carries
``speed_mps`` (normal impact speed for a cushion, relative speed for a
contact, ball speed for a pocket), so sensors can model amplitudes and
unreported soft impacts.  ``cue_contact`` carries ``duration_us`` and
``force_n`` and ``ball`` (the ball the tip struck).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.geometry import Table

N_BALLS = 16  # ball 0 is the coloured ball, 1-15 the white balls

# BALL_TRACK.state bits (ICD §4)
MOVING, SPINNING, OCCLUDED = 1, 2, 4


@dataclass
class MatchTruth:
    """What really happened on the table during a whole match or scenario.

    ``sample(t_s)`` gives, for an array of n true times, ``xy`` (n, 16, 2)
    in mm, ``state`` (n, 16) uint8 MOVING/SPINNING bits, and ``present``
    (n, 16) bool (the ball is on the playing surface).
    """

    table: Table
    duration_s: float
    events: list[dict[str, Any]]
    sample: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    name: str = ""
    # the strokes as played, one dict per shot (physics detail: shot, player, break, ball,
    # angle_deg, speed_mps, contact_ms, top, side_rad_s, double_hit_ms, t_start_s, t_end_s,
    # interrupted); lets a test re-judge a truth without the timeline that made it
    strokes: list[dict[str, Any]] = field(default_factory=list)
