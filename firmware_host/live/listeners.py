"""The daemon's sinks behind one interface: what the pipeline thread tells each, in order.

A sink is anything the refereeing feeds but does not depend on: the
recorder (the bytes read and the frames sent), the command line's printer,
the live page, the club's broker, the status file and the foul lamp.  Each
implements :class:`Listener` (it subclasses it and overrides only what it
needs: the other calls are no-ops), and :class:`Listeners` tells them all:

* in order: the sinks added ``first`` (the broker's durable spool: a line is
  printed and the lamp driven only once it is kept), then the others in the
  order added, then the lamp, always last (it acts on what the others kept);
* each in isolation: a sink that raises costs only itself.  Its failure is
  logged (the first with its traceback), counted by its name
  (:attr:`Listeners.failures`, the daemon's closing stats) and the next sink
  is told; the refereeing never sees the exception.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from rules import indicator_for

from ..link.command_link import CommandLink
from ..link.recorder import CaptureRecorder

log = logging.getLogger("firmware_host.daemon")

Event = dict[str, Any]  # an EVENTS.md line
Line = dict[str, Any]  # a verdict or notice line (the referee's)
Balls = dict[str, list[float]]


class Listener(Protocol):
    """One of the daemon's sinks.  Every call comes from the pipeline thread and must not
    block it (a slow consumer queues, as the page and the broker do)."""

    #: the sink's name in the log and in :attr:`Listeners.failures`
    name: str

    def on_read(self, data: bytes, host_rx_ns: int) -> None:
        """Bytes as the port delivered them, before the pipeline judges them."""

    def on_sent(self, frame: bytes, host_tx_ns: int) -> None:
        """A frame the host sent the table (a lamp command, a referee's press as KEYPAD);
        never SETUP_SIGNING: the table key is given to no sink."""

    def on_event(self, event: Event) -> None:
        """An ordered event (EVENTS.md), in ``t_us`` order."""

    def on_line(self, line: Line, state: Any) -> None:
        """A verdict or notice line, with the referee's match state after it."""

    def on_balls(self, balls: Balls) -> None:
        """Where the tracker sees the balls, each read that brings a tracker frame."""

    def on_turn(self, now_ns: int) -> None:
        """Every turn of the pipeline thread's loop (at least every ``TICK_S``), host clock."""

    def on_health(self, status: dict[str, Any], problems: list[str]) -> None:
        """The status, once a second (``service/health.py``), and what is wrong in words."""

    def close(self) -> None:
        """The daemon's run is over: nothing more comes."""


class Callbacks(Listener):
    """Plain functions for lines and events (the command line's printer, a test's lists)."""

    def __init__(
        self,
        on_line: Callable[[Line], None] | None = None,
        on_event: Callable[[Event], None] | None = None,
        name: str = "output",
    ) -> None:
        self.name = name
        self._line = on_line
        self._event = on_event

    def on_line(self, line: Line, state: Any) -> None:
        if self._line is not None:
            self._line(line)

    def on_event(self, event: Event) -> None:
        if self._event is not None:
            self._event(event)


class Recording(Listener):
    """The raw capture (``run --record``): every read with its host time, the frames sent."""

    name = "recorder"

    def __init__(self, recorder: CaptureRecorder) -> None:
        self.recorder = recorder

    def on_read(self, data: bytes, host_rx_ns: int) -> None:
        self.recorder.write(data, host_rx_ns)

    def on_sent(self, frame: bytes, host_tx_ns: int) -> None:
        self.recorder.write_sent(frame, host_tx_ns)

    def close(self) -> None:
        self.recorder.close()


class Lamp(Listener):
    """The foul indicator: "ready" at a shot's start, then what each verdict line says."""

    name = "lamp"

    def __init__(self, link: CommandLink) -> None:
        self.link = link

    def on_event(self, event: Event) -> None:
        if event["type"] == "shot_start":
            self.link.set_indicator("ready")

    def on_line(self, line: Line, state: Any) -> None:
        lamp = indicator_for(line)
        if lamp is not None:
            self.link.set_indicator(lamp.state, lamp.rule)


class Listeners:
    """The daemon's sinks, told in order, each in isolation (see the module's docstring)."""

    def __init__(self, last: Listener) -> None:
        self._sinks: list[Listener] = [last]
        #: sink name -> calls that raised
        self.failures: dict[str, int] = {}

    def add(self, listener: Listener, *, first: bool = False) -> None:
        """After the sinks already there (``first``: before them), always before the last."""
        self._sinks.insert(0 if first else len(self._sinks) - 1, listener)

    def read(self, data: bytes, host_rx_ns: int) -> None:
        self._tell(lambda sink: sink.on_read(data, host_rx_ns))

    def sent(self, frame: bytes, host_tx_ns: int) -> None:
        self._tell(lambda sink: sink.on_sent(frame, host_tx_ns))

    def event(self, event: Event) -> None:
        self._tell(lambda sink: sink.on_event(event))

    def line(self, line: Line, state: Any) -> None:
        self._tell(lambda sink: sink.on_line(line, state))

    def balls(self, balls: Balls) -> None:
        self._tell(lambda sink: sink.on_balls(balls))

    def turn(self, now_ns: int) -> None:
        self._tell(lambda sink: sink.on_turn(now_ns))

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        self._tell(lambda sink: sink.on_health(status, problems))

    def close(self) -> None:
        self._tell(lambda sink: sink.close())

    def _tell(self, call: Callable[[Listener], None]) -> None:
        for sink in self._sinks:
            try:
                call(sink)
            except Exception:  # a sink's bug or its outside world: never the refereeing's
                name = sink.name
                failed = self.failures[name] = self.failures.get(name, 0) + 1
                if failed == 1:
                    log.exception("sink %s failed; the refereeing goes on without it", name)
                else:
                    log.error("sink %s failed again (%d times so far)", name, failed)
