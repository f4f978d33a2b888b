"""How long after its hub time each event left the live pipeline: the daemon's own watch on
the 50 ms live bound, whatever else (the page, a broker, a slow disk) runs beside it.

Measured on the host's clock mapped onto the hub's (the timing core's
host-clock estimate), for the events a sensor stamps (a cushion, a pocket, a
contact ...), in 0.1 ms bins up to a second: constant memory over any match.

>>> lag = ReleaseLag()
>>> for ms in (1.0, 2.0, 3.0, 40.0):
...     lag.add(ms)
>>> lag.count, lag.percentile(50), lag.max_ms
(4, 2.0, 40.0)
"""

from __future__ import annotations

import numpy as np

#: the events stamped at a sensor's instant; ``rest`` waits for a quiet second by design
SENSED = frozenset(
    ("cushion", "pocket", "line_cross", "cue_contact", "shot_start", "ball_contact", "shot_end")
)
BIN_MS = 0.1
MAX_MS = 1000.0  # anything later is counted in the last bin (and in max_ms exactly)


class ReleaseLag:
    def __init__(self) -> None:
        self._bins = np.zeros(int(MAX_MS / BIN_MS) + 1, np.int64)
        self.count = 0
        self.max_ms = 0.0

    def add(self, ms: float) -> None:
        ms = max(ms, 0.0)
        self._bins[min(round(ms / BIN_MS), len(self._bins) - 1)] += 1
        self.count += 1
        self.max_ms = max(self.max_ms, ms)

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (ms, to the bin), 0 before any event."""
        if not self.count:
            return 0.0
        rank = int(np.searchsorted(np.cumsum(self._bins), q / 100 * self.count))
        return round(min(rank, len(self._bins) - 1) * BIN_MS, 1)

    def text(self) -> str:
        """``events out 1.2 ms after their hub time (p50), p99 6.3 ms, max 12.0 ms``."""
        if not self.count:
            return "no sensed event timed"
        return (
            f"events out {self.percentile(50):.1f} ms after their hub time (p50), "
            f"p99 {self.percentile(99):.1f} ms, max {self.max_ms:.1f} ms"
        )
