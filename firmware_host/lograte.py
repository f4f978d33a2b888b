"""Logs that fit the journal: a message that repeats is told a few times, then summed.

A table can repeat itself for hours: a node reporting "sensor saturated" on
every frame, a hub refusing a command, a port that will not open.  Under
systemd every line goes to the journal, whose own rate limit would then drop
lines at random, the important ones too.  :class:`RateLimit` keys a record by
its logger and message template (``"node %s: %s (detail %d)"``, not the
formatted text), lets ``burst`` of them through per ``window_s``, counts the
rest, and adds the count to the next one let through ("; 41 more like this
in the last 60 s"), so nothing repeats silently and nothing floods.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

BURST = 5
WINDOW_S = 60.0


class RateLimit(logging.Filter):
    def __init__(
        self,
        burst: int = BURST,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self.clock = clock
        self._seen: dict[tuple[str, str], list[float]] = {}  # window start, shown, held back

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "audit", False):  # a referee's press: every one is told
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        seen = self._seen.get(key)
        if seen is None or now - seen[0] >= self.window_s:
            held = int(seen[2]) if seen is not None else 0
            self._seen[key] = [now, 1, 0]
            if held:
                record.msg = f"{record.msg}; {held} more like this in the last {self.window_s:g} s"
            return True
        if seen[1] < self.burst:
            seen[1] += 1
            return True
        seen[2] += 1
        return False
