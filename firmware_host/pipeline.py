"""Wire bytes to verdicts, one stage after another, with no I/O of its own.

The daemon feeds it chunks as the port delivers them; ``replay`` feeds a
capture's bytes through the very same object in read-sized chunks, so a
replay decides exactly what the daemon would have decided live.

>>> pipe = Pipeline()                                   # doctest: +SKIP
>>> out = pipe.feed(chunk.data, chunk.host_rx_ns)       # doctest: +SKIP
>>> out.events, out.lines                               # doctest: +SKIP
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.catalogue import KEYPAD_KEYS, NODE_NAMES
from protocol.decoder import Conflict, Decoded, StreamDecoder
from rules import Referee, RulesConfig

from .fusion.stream import EventStream

REPLAY_CHUNK = 4096  # what one serial read typically returns
#: The fouls a referee calls from the page or the broker: the ones no sensor sees (ICD KEYPAD 6)
REFEREE_FOULS = (15, 16, 17)


def check_press(key: str, arg: int = 0) -> tuple[str, int]:
    """A keypad press from outside the table, checked before it is queued: the caller hears
    of a bad one at once, in words, instead of the pipeline dropping it later."""
    if key not in KEYPAD_KEYS.values():
        raise ValueError(
            f"key {key!r}: not a keypad key (one of: {', '.join(KEYPAD_KEYS.values())})"
        )
    if isinstance(arg, bool) or not isinstance(arg, int) or not 0 <= arg <= 255:
        raise ValueError(f"arg {arg!r}: not a whole number from 0 to 255")
    if key == "referee_foul" and arg not in REFEREE_FOULS:
        raise ValueError(f"arg {arg}: a referee foul names item 15, 16 or 17")
    if key == "declare_frozen" and not (arg <= 15 or arg == 255):
        raise ValueError(f"arg {arg}: a ball number 0-15, or 255 for the ball nearest the cue ball")
    return key, arg


def conflict_text(conflict: Conflict) -> str:
    """Both frames of a seq conflict in a few words, for the notice."""

    def one(frame: Any) -> str:
        if frame is None:
            return "an earlier frame not kept"
        fields = " ".join(f"{k}={v}" for k, v in getattr(frame, "fields", {}).items())
        return f"{getattr(frame, 'name', 'UNKNOWN')} seq {frame.seq} t_us {frame.t_us} {fields}"

    return f"{one(conflict.earlier)}; then {one(conflict.later)}"


@dataclass
class Step:
    """What one feed produced: the events it released and the lines they decided."""

    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)


class Pipeline:
    """Decoder → timing core and fusion → rules engine."""

    def __init__(self, rules: RulesConfig | None = None, signing: Any = None) -> None:
        """``signing``: the table key's check (protocol.signing.SignatureCheck), or None."""
        self.decoder = StreamDecoder(signing)
        self.events = EventStream()
        self.referee = Referee(config=rules or RulesConfig())

    def feed(self, data: bytes, host_rx_ns: int | None = None) -> Step:
        return self.feed_decoded(self.decoder.feed(data), host_rx_ns)

    def feed_decoded(self, decoded: Decoded, host_rx_ns: int | None = None) -> Step:
        """The stages after the decoder, for a caller that looks at the frames too.

        A seq conflict (two frames claiming one seq: a forger, issue 29) is told to the
        referee after the events of the same feed, at the newest hub time.
        """
        step = self._judge(self.events.feed(decoded, host_rx_ns))
        for conflict in decoded.conflicts:
            node = NODE_NAMES.get(conflict.later.node, str(conflict.later.node))
            t_us = self.events.timeline.hub_now
            step.lines += self.referee.doubt(node, t_us, conflict_text(conflict))
        return step

    def press(self, key: str, arg: int = 0, host_now_ns: int | None = None) -> Step:
        """A keypad press from the host (the referee's page, the broker): judged exactly as a
        KEYPAD frame at that instant would be."""
        return self._judge(self.events.press(*check_press(key, arg), host_now_ns))

    def tick(self, host_now_ns: int) -> Step:
        """No new bytes: release what the host clock says is settled."""
        return self._judge(self.events.tick(host_now_ns))

    def hub_time_at(self, host_ns: int | None) -> int:
        """The hub's time at a host instant (``time.monotonic_ns()``), as the timing core
        maps it now: how long an event waited for its release, live."""
        return self.events.timeline.hub_time_at(host_ns)

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
    presses: Sequence[tuple[int, str, int]] = (),
    flush: bool = True,
) -> Step:
    """A whole capture through the live pipeline, as if read from the port.

    ``presses``: the referee's keys a recording kept (``recorded_presses``),
    each pressed where the stream stood when it was pressed live.  Pass
    ``pipe`` to read its counters afterwards (``pipe.events.losses()``);
    ``flush=False`` leaves a cut shot for more bytes (a resumed daemon).
    """
    total = Step()
    for step in replay_steps([data], rules, chunk, pipe, presses, flush):
        total.events += step.events
        total.lines += step.lines
    return total


def replay_steps(
    reads: Iterable[bytes],
    rules: RulesConfig | None = None,
    chunk: int = REPLAY_CHUNK,
    pipe: Pipeline | None = None,
    presses: Sequence[tuple[int, str, int]] = (),
    flush: bool = True,
) -> Iterator[Step]:
    """:func:`replay` over a capture read in pieces of any size (``reads``), step by step:
    memory stays bounded by one read whatever the capture's length.

    The pipeline is fed exactly the chunks :func:`replay` feeds it (every ``chunk`` bytes
    from the stream's start, and cut where a press was made), so the reads' sizes never
    change a verdict.
    """
    pipe = pipe or Pipeline(rules)
    pending = deque(sorted(presses))
    buf = bytearray()
    pos = 0  # stream offset of buf[0]

    def press_upto(at: int) -> Iterator[Step]:
        while pending and pending[0][0] <= at:
            _, key, arg = pending.popleft()
            yield pipe.press(key, arg)

    def segments(last: bool) -> Iterator[Step]:
        nonlocal pos
        while buf:
            yield from press_upto(pos)
            end = (pos // chunk + 1) * chunk
            if pending:
                end = min(end, pending[0][0])
            if pos + len(buf) < end and not last:
                return  # the segment ends in bytes not read yet
            n = min(end - pos, len(buf))
            piece = bytes(buf[:n])
            del buf[:n]
            pos += n
            yield pipe.feed(piece)

    for data in reads:
        buf += data
        yield from segments(last=False)
    yield from segments(last=True)
    for _, key, arg in pending:  # pressed after the last byte received
        yield pipe.press(key, arg)
    if flush:
        yield pipe.flush()
