"""Wire bytes to verdicts, one stage after another, with no I/O of its own.

The daemon feeds it chunks as the port delivers them; ``replay`` feeds a
capture's bytes through the very same object in read-sized chunks, so a
replay decides exactly what the daemon would have decided live.

>>> pipe = Pipeline()                                   # doctest: +SKIP
>>> out = pipe.feed(chunk.data, chunk.host_rx_ns)       # doctest: +SKIP
>>> out.events, out.lines                               # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.decoder import Decoded, StreamDecoder
from rules import Referee, RulesConfig

from .fusion.stream import EventStream

REPLAY_CHUNK = 4096  # what one serial read typically returns


@dataclass
class Step:
    """What one feed produced: the events it released and the lines they decided."""

    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)


class Pipeline:
    """Decoder → timing core and fusion → rules engine."""

    def __init__(self, rules: RulesConfig | None = None) -> None:
        self.decoder = StreamDecoder()
        self.events = EventStream()
        self.referee = Referee(config=rules or RulesConfig())

    def feed(self, data: bytes, host_rx_ns: int | None = None) -> Step:
        return self.feed_decoded(self.decoder.feed(data), host_rx_ns)

    def feed_decoded(self, decoded: Decoded, host_rx_ns: int | None = None) -> Step:
        """The stages after the decoder, for a caller that looks at the frames too."""
        return self._judge(self.events.feed(decoded, host_rx_ns))

    def tick(self, host_now_ns: int) -> Step:
        """No new bytes: release what the host clock says is settled."""
        return self._judge(self.events.tick(host_now_ns))

    def flush(self) -> Step:
        """End of input: every event still held, and the lines they decide."""
        step = self._judge(self.events.flush())
        step.lines += self.referee.finish()
        return step

    def _judge(self, events: list[dict[str, Any]]) -> Step:
        lines = [line for event in events for line in self.referee.feed(event)]
        return Step(events, lines)


def replay(
    data: bytes,
    rules: RulesConfig | None = None,
    chunk: int = REPLAY_CHUNK,
    pipe: Pipeline | None = None,
) -> Step:
    """A whole capture through the live pipeline, as if read from the port.

    Pass ``pipe`` to read its counters afterwards (``pipe.events.losses()``).
    """
    pipe = pipe or Pipeline(rules)
    total = Step()
    for start in range(0, len(data), chunk):
        step = pipe.feed(data[start : start + chunk])
        total.events += step.events
        total.lines += step.lines
    end = pipe.flush()
    total.events += end.events
    total.lines += end.lines
    return total
