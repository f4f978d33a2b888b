"""What the daemon tells the page: verdicts, the lamp, the match state, health, shots, balls.

The pipeline thread publishes here and never waits, and its cost does not
grow with the browsers: a message is encoded once and appended to one list,
and one ``call_soon_threadsafe`` wakes the web server's loop, which copies
it into each browser's bounded queue (3 000 browsers once cost the pipeline
thread 22 ms a message: a wake-up per browser).  A browser that falls
``QUEUE`` messages behind is dropped: its stream ends, and the page's
EventSource reconnects and starts again from a snapshot; never the referee
its time.  A new browser first gets a snapshot of everything current, then
the stream.  The tracker's ball
positions come at up to 120 Hz; the page gets them at most ``BALLS_HZ``
times a second (the latest), which is as smooth as the eye needs.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections import deque
from typing import Any

from rules import indicator_for

from ..pictures.rules_text import english

KEEP_VERDICTS = 20  # the page lists the last ones
KEEP_SHOTS = 50  # shots kept for their pictures
QUEUE = 256  # messages a browser may fall behind by before it is dropped
BALLS_HZ = 30.0  # ball positions sent to the page at most this often
END = "\n"  # a stream's last item: never a message (each is a JSON object)


class Stream:
    """One browser's queue on the server's loop; ``dropped`` once it fell ``QUEUE`` behind."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue(QUEUE)
        self.dropped = asyncio.Event()

    def put(self, text: str) -> None:
        if self.queue.full():
            self.dropped.set()  # the handler ends the stream; the browser starts afresh
        else:
            self.queue.put_nowait(text)

    def drop(self) -> None:
        """End the stream now (the feed started again): an empty text wakes its handler."""
        self.put("")
        self.dropped.set()

    def end(self) -> None:
        """End the stream after what is queued (the daemon has gone)."""
        self.put(END)


class Broadcast:
    """Messages to every browser's event stream, from any thread, never waiting (see above)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None  # the web server's
        self._streams: set[Stream] = set()  # touched on the loop only
        self._outbox: list[str] = []  # encoded, not yet handed to the streams
        self._woken = False  # a hand-over is scheduled on the loop
        self._overflowed = False  # the outbox overflowed since the last hand-over

    @property
    def streams(self) -> int:
        return len(self._streams)

    def subscribe(self) -> Stream:
        """A new browser's stream (on the server's loop)."""
        stream = Stream()
        with self._lock:
            self._loop = asyncio.get_running_loop()
        self._streams.add(stream)
        return stream

    def unsubscribe(self, stream: Stream) -> None:
        self._streams.discard(stream)

    def end(self) -> None:
        """Every stream ends after what was sent to it (any thread; the daemon has gone)."""
        with self._lock:
            loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._end_streams)  # after any hand-over scheduled
        except RuntimeError:  # the server's loop has closed: nobody is listening
            pass

    def _end_streams(self) -> None:
        for stream in list(self._streams):
            stream.end()

    def _send(self, message: dict[str, Any]) -> None:
        if self._loop is None:  # no browser has come yet (or never will: the daemon's mirror)
            return
        text = json.dumps({**message, "sent_unix": time.time()}, separators=(",", ":"))
        with self._lock:
            loop = self._loop
            assert loop is not None
            if len(self._outbox) >= QUEUE:  # the loop is that far behind: every stream is
                self._outbox.clear()  # dropped at the hand-over, and starts afresh
                self._overflowed = True
            self._outbox.append(text)
            wake, self._woken = not self._woken, True
        if wake:
            try:
                loop.call_soon_threadsafe(self._hand_over)
            except RuntimeError:  # the server's loop has closed: nobody is listening
                with self._lock:
                    self._outbox.clear()
                    self._woken = False

    def _hand_over(self) -> None:
        """On the loop: what the pipeline sent since the last time, to every stream."""
        with self._lock:
            texts, self._outbox, self._woken = self._outbox, [], False
            overflowed, self._overflowed = self._overflowed, False
        for stream in list(self._streams):
            if overflowed:
                stream.drop()
            for text in texts:
                stream.put(text)


class LiveFeed(Broadcast):
    def __init__(self) -> None:
        super().__init__()
        self._verdicts: deque[dict[str, Any]] = deque(maxlen=KEEP_VERDICTS)
        self._lamp: dict[str, Any] | None = None
        self._state: dict[str, Any] | None = None
        self._health: dict[str, Any] | None = None
        self._balls: dict[str, list[float]] = {}
        self._balls_sent = 0.0
        self._table: dict[str, float] | None = None
        self._shot_events: dict[int, list[dict[str, Any]]] = {}

    # -- from the pipeline thread --------------------------------------------------------

    def event(self, ev: dict[str, Any]) -> None:
        """Keep each shot's events (for its picture once it is over), and the table's size."""
        if ev["type"] == "boot":
            with self._lock:
                self._table = ev["table"]
            self._send({"table": ev["table"]})
        shot = ev.get("shot")
        if shot is None:
            return
        with self._lock:
            self._shot_events.setdefault(int(shot), []).append(ev)
            while len(self._shot_events) > KEEP_SHOTS:
                del self._shot_events[min(self._shot_events)]

    def balls(self, balls: dict[str, list[float]]) -> None:
        """Where the tracker sees the balls now: sent on at most ``BALLS_HZ`` times a second."""
        now = time.monotonic()
        with self._lock:
            self._balls = balls
            if now - self._balls_sent < 1 / BALLS_HZ:
                return
            self._balls_sent = now
        self._send({"balls": balls})

    def line(self, line: dict[str, Any], state: dict[str, Any] | None = None) -> None:
        """A verdict or notice line as the daemon printed it, with the match state after it
        (``jsonout.match_state``'s)."""
        lamp = indicator_for(line)
        with self._lock:
            if line.get("kind") == "verdict":
                self._verdicts.append(line)
            if lamp is not None:
                self._lamp = {"state": lamp.state, "rule": lamp.rule, "t_us": line["t_us"]}
            if state is not None:
                self._state = state
            message = {"line": line, "lamp": self._lamp, "state": self._state}
        self._send(message)

    def state(self, state: dict[str, Any] | None) -> None:
        """The match state before any line (a new match, or one resumed from a recording):
        the page shows it from its first second instead of "not known yet"."""
        with self._lock:
            self._state = state
            message = {"state": self._state}
        self._send(message)

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        health = {**status, "problems": problems}
        with self._lock:
            self._health = health
        self._send({"health": health})

    # -- between the daemon and the page's process (web/process.py) -----------------------

    def kept(self) -> dict[str, Any]:
        """Everything kept, for a feed in another process to start again from."""
        with self._lock:
            events = [[shot, list(evs)] for shot, evs in self._shot_events.items()]
            return self._current() | {"shot_events": events}

    def reset(self, kept: dict[str, Any]) -> None:
        """Start again from another feed's :meth:`kept` (messages were lost between the two):
        every browser is dropped and starts again from a snapshot of it."""
        with self._lock:
            self._verdicts = deque(kept["verdicts"], maxlen=KEEP_VERDICTS)
            self._lamp, self._state = kept["lamp"], kept["state"]
            self._health, self._balls = kept["health"], kept["balls"]
            self._table = kept["table"]
            self._shot_events = {int(shot): evs for shot, evs in kept["shot_events"]}
            loop = self._loop
            self._outbox.clear()
            if loop is None:  # no browser has come yet
                return
            self._overflowed = True  # at the next hand-over every stream is dropped
            wake, self._woken = not self._woken, True
        if wake:
            try:
                loop.call_soon_threadsafe(self._hand_over)
            except RuntimeError:  # the server's loop has closed
                with self._lock:
                    self._woken = False

    # -- for the web server ----------------------------------------------------------------

    def _current(self) -> dict[str, Any]:
        """What a page shows now (under ``_lock``)."""
        return {
            "verdicts": list(self._verdicts),
            "lamp": self._lamp,
            "state": self._state,
            "health": self._health,
            "balls": self._balls,
            "table": self._table,
        }

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            current = copy.deepcopy(self._current())
        return current | {"rule_words": english()}  # item -> its words: the page cites a rule

    def shot_events(self, shot: int) -> list[dict[str, Any]] | None:
        with self._lock:
            events = self._shot_events.get(shot)
            return list(events) if events is not None else None

    def verdict_of(self, shot: int) -> dict[str, Any] | None:
        with self._lock:
            final = [v for v in self._verdicts if v.get("shot") == shot and not v.get("early")]
        return final[-1] if final else None

    def health_now(self) -> dict[str, Any] | None:
        with self._lock:
            return copy.deepcopy(self._health)
