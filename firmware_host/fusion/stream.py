"""Wire frames to ordered events: the batch path (a capture) and the live path (the daemon).

Both run the same two stateful stages -- :class:`~firmware_host.timing.timeline.Timeline`
(clock mapping, hub-time order) and :class:`~.events.Fusion` (EVENTS.md
events) -- on rows from the decoder; the batch path simply feeds a whole
capture in large slices and flushes at the end, so the two give identical
events for the same bytes.

>>> stream = EventStream()                                   # doctest: +SKIP
>>> for chunk in transport:                                  # doctest: +SKIP
...     for event in stream.feed(decoder.feed(chunk.data), chunk.host_rx_ns):
...         publish(event)
...     # and every few ms, with no data: stream.tick(time.monotonic_ns())
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from firmware_host.timing.rows import C_TRACK, to_rows
from firmware_host.timing.timeline import CLOCK_TYPES, RELEASED_TYPES, Timeline, TimelineParams
from protocol.decoder import Decoded, StreamDecoder, decode_capture
from protocol.geometry import DEFAULT_TABLE, Table

from .events import Fusion, FusionParams

ROW_TYPES = frozenset((*RELEASED_TYPES, *CLOCK_TYPES))
BATCH_ROWS = 1 << 18  # rows per slice on the batch path: bounded memory for any capture


class EventStream:
    """Decoded frames in (stream order), ordered EVENTS.md events out."""

    def __init__(
        self,
        timeline: TimelineParams | None = None,
        fusion: FusionParams | None = None,
        table: Table = DEFAULT_TABLE,
    ) -> None:
        self.timeline = Timeline(timeline, table)
        self.fusion = Fusion(fusion, table)
        #: presses before the stream showed any hub time: (key, arg, host_now_ns)
        self._early: list[tuple[str, int, int | None]] = []

    def feed(self, decoded: Decoded, host_rx_ns: int | None = None) -> list[dict[str, Any]]:
        """The events that the frames of one decoder feed release.

        ``host_rx_ns``: the host's monotonic clock when the chunk was read
        (live); it only makes events come out sooner, never changes them.
        """
        rows, tracks = to_rows(decoded.tables, ROW_TYPES, decoded.marks)
        return self.feed_rows(rows, tracks, host_rx_ns)

    def feed_rows(
        self, rows: np.ndarray, tracks: np.ndarray, host_rx_ns: int | None = None
    ) -> list[dict[str, Any]]:
        ordered = self.timeline.feed_rows(rows, tracks, host_rx_ns)
        events = self.fusion.feed(ordered, self.timeline.released_upto)
        return events + self._place_early() if self._early and self._has_hub_time else events

    def tick(self, host_now_ns: int) -> list[dict[str, Any]]:
        """Live, with no new data: release what the host's clock says is settled."""
        ordered = self.timeline.tick(host_now_ns)
        return self.fusion.feed(ordered, self.timeline.released_upto)

    def press(self, key: str, arg: int, host_now_ns: int | None) -> list[dict[str, Any]]:
        """A keypad press from the host: a keypad event at the hub time the host's clock says.

        Without host times (a replay of bare bytes) it lands at the newest hub
        stamp seen.  It leaves with the events around it, in ``t_us`` order.
        A press before the stream has shown any hub time ("New frame" in the
        first second, before the table's first frame) has no hub instant yet:
        it waits for the first frames, whose host clock then reaches back to
        it, instead of landing at hub time 0, an hour before a hub clock that
        has run that long (the match's clock would jump by as much).
        """
        if not self._has_hub_time:
            self._early.append((key, arg, host_now_ns))
            return []
        return self.fusion.press(self.timeline.hub_time_at(host_now_ns), key, arg)

    @property
    def _has_hub_time(self) -> bool:
        return self.timeline.hub_now > 0

    def _place_early(self) -> list[dict[str, Any]]:
        early, self._early = self._early, []
        return [e for key, arg, host_ns in early for e in self.press(key, arg, host_ns)]

    def flush(self) -> list[dict[str, Any]]:
        """End of the input: everything still held."""
        ordered = self.timeline.flush()
        early = [  # pressed, and no hub time ever came: at the start of what there is
            e for key, arg, _ in self._early for e in self.fusion.press(0, key, arg)
        ]
        self._early = []
        return early + self.fusion.feed(ordered, self.timeline.released_upto) + self.fusion.flush()

    @property
    def counters(self) -> dict[str, int]:
        return {**self.timeline.counters, **self.fusion.counters}

    def losses(self) -> dict[str, int]:
        """The non-zero counters of data lost, dropped or refused, and of strange streams."""
        return {k: v for k, v in self.counters.items() if k not in _TALLIES and v}

    def take_notices(self) -> list[str]:
        """What the stream did that a person should hear of once (clock steps, inferred boots)."""
        notices, self.timeline.notices = self.timeline.notices, []
        return notices


#: Counters that tally the match, not trouble.
_TALLIES = frozenset(("epochs", "shots"))


def events_from_rows(
    rows: np.ndarray, tracks: np.ndarray, stream: EventStream | None = None
) -> list[dict[str, Any]]:
    """Batch path over decoded rows, in slices so memory stays bounded."""
    stream = stream or EventStream()
    out: list[dict[str, Any]] = []
    for start in range(0, len(rows), BATCH_ROWS):
        part = rows[start : start + BATCH_ROWS].copy()
        has = part[:, C_TRACK] >= 0
        part_tracks = tracks[part[has, C_TRACK]]
        part[has, C_TRACK] = np.arange(int(has.sum()))
        out += stream.feed_rows(part, part_tracks)
    return out + stream.flush()


def events_from_capture(
    data: bytes | np.ndarray, stream: EventStream | None = None
) -> list[dict[str, Any]]:
    """Batch path: a whole capture (ICD §8) to its ordered events."""
    decoded = decode_capture(data)
    rows, tracks = to_rows(decoded.tables, ROW_TYPES, decoded.marks)
    return events_from_rows(rows, tracks, stream)


def events_from_chunks(
    chunks: Iterable[bytes], stream: EventStream, decoder: StreamDecoder
) -> Iterator[list[dict[str, Any]]]:
    """Batch path over a capture read in chunks: the events each chunk releases, then the
    flush's.  Memory is one chunk's rows and what the stages hold, whatever the capture's
    length; the events are those of :func:`events_from_capture` (tests/test_stream_chunks.py).
    """
    for chunk in chunks:
        decoded = decoder.feed(chunk)
        rows, tracks = to_rows(decoded.tables, ROW_TYPES, decoded.marks)
        if len(rows):
            yield stream.feed_rows(rows, tracks)
    yield stream.flush()
