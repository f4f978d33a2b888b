"""What the daemon tells the page: verdicts, the lamp, the match state, health, shots, balls.

The pipeline thread publishes here and never waits: each browser has a
bounded queue on the web server's loop, filled with ``call_soon_threadsafe``;
a browser that cannot keep up loses its oldest messages (and is told so by
the next snapshot), never the referee its time.  A new browser first gets a
snapshot of everything current, then the stream.  The tracker's ball
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

from ..liveview import match_state
from ..pictures.rules_text import english

KEEP_VERDICTS = 20  # the page lists the last ones
KEEP_SHOTS = 50  # shots kept for their pictures
QUEUE = 256  # messages a slow browser may fall behind by
BALLS_HZ = 30.0  # ball positions sent to the page at most this often


class Broadcast:
    """Messages to every browser's event stream, from any thread, never waiting (see above)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[str]]] = []

    def subscribe(self) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue(QUEUE)
        with self._lock:
            self._clients.append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        with self._lock:
            self._clients = [(lp, q) for lp, q in self._clients if q is not queue]

    def _send(self, message: dict[str, Any]) -> None:
        text = json.dumps({**message, "sent_unix": time.time()}, separators=(",", ":"))
        with self._lock:
            clients = list(self._clients)
        for loop, queue in clients:
            loop.call_soon_threadsafe(_put, queue, text)


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

    def line(self, line: dict[str, Any], state: Any = None) -> None:
        """A verdict or notice line as the daemon printed it, with the match state after it."""
        lamp = indicator_for(line)
        with self._lock:
            if line.get("kind") == "verdict":
                self._verdicts.append(line)
            if lamp is not None:
                self._lamp = {"state": lamp.state, "rule": lamp.rule, "t_us": line["t_us"]}
            if state is not None:
                self._state = match_state(state)
            message = {"line": line, "lamp": self._lamp, "state": self._state}
        self._send(message)

    def state(self, state: Any) -> None:
        """The match state before any line (a new match, or one resumed from a recording):
        the page shows it from its first second instead of "not known yet"."""
        with self._lock:
            self._state = match_state(state)
            message = {"state": self._state}
        self._send(message)

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        health = {**status, "problems": problems}
        with self._lock:
            self._health = health
        self._send({"health": health})

    # -- for the web server ----------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(
                {
                    "verdicts": list(self._verdicts),
                    "lamp": self._lamp,
                    "state": self._state,
                    "health": self._health,
                    "balls": self._balls,
                    "table": self._table,
                }
            ) | {"rule_words": english()}  # item -> its words: the page cites each verdict's rule

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


def _put(queue: asyncio.Queue[str], text: str) -> None:
    if queue.full():
        queue.get_nowait()  # the oldest goes: the browser catches up, the referee never waits
    queue.put_nowait(text)
