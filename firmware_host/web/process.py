"""The live page in a process of its own (``run --web``): the refereeing never shares a GIL
or a core's turn with the browsers.

In the daemon's process the page cost the refereeing its time however the
server was written: every request, refusal and byte sent is Python work that
holds the interpreter's lock the pipeline thread needs (1 000 event-stream
clients and 200 slow connections doubled the release lag p99, docs/security.md).
So the server (``web/server.py``, unchanged) runs in a child process, niced
(``PAGE_NICE``: a core goes to the refereeing first), and the daemon tells it
what happens over a Unix socket:

* the pipeline thread calls :class:`PageProcess` as it called the
  :class:`~.feed.LiveFeed` (``line``, ``event``, ``balls``, ``state``,
  ``health``): it keeps what a page starts from (the same ``LiveFeed``, with
  no browsers: a few appends under a lock) and puts the call on a bounded
  list, and never waits: no encoding, no system call;
* one writer thread wakes at most every ``BATCH_S``, encodes what came as one
  JSON line and writes it to the socket (its system call gives up the lock);
* a page process that falls ``PENDING`` calls behind (starved of CPU, or
  stopped) loses them, never the refereeing its time: the list is emptied and
  the page process starts again from everything kept (``reset``: its browsers
  are dropped and reconnect to a fresh snapshot);
* a referee's key from the page comes back over the same socket and is
  judged by ``Daemon.press`` as before; its answer (or its ValueError) goes
  back to the page, which answers the browser (202 or 400).

The page process ends when the socket closes: the daemon stopped (its
writer sent what was waiting, the match's last verdict often among it, then
ended the socket; the page sends its browsers what came and ends their
streams) or was killed.  The token travels over the socket, never on a command
line (``ps``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from ..jsonout import match_state
from ..live.listeners import Listener
from .feed import BALLS_HZ, LiveFeed

log = logging.getLogger(__name__)

PENDING = 4096  # calls the page process may fall behind by before it starts again
BATCH_S = 0.01  # the writer thread sends what came in this long at once
PAGE_NICE = 10  # the page process's niceness above the daemon's
START_S = 60.0  # the page process says it is listening within this (a loaded machine)
STOP_S = 5.0
END_S = 2.0  # the browsers' streams get this long to be sent what came before they end
PRESS_S = 10.0  # the daemon judges a key at once; past this the page says it did not


class PageError(OSError):
    """The page process could not listen (``strerror`` says why)."""


class PageProcess(Listener):
    """The daemon's side: the feed the pipeline thread calls (one of the daemon's sinks:
    ``Daemon.listen``), and the page's process."""

    name = "page"

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.kept = LiveFeed()  # what a page starts from (never has a browser of its own)
        self._pending: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()
        self._lost = True  # nothing is sent until the page process starts from what is kept
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._balls_sent = 0.0
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._writer: threading.Thread | None = None  # one of them: stop waits for its last batch
        self.press: Any = None
        self.resets = 0  # times the page process fell behind and started again

    # -- from the pipeline thread (never waits) --------------------------------------------

    def _post(self, *call: Any) -> None:
        with self._lock:
            if len(self._pending) >= PENDING:  # a key's answer is kept; the rest is in a reset
                self._pending = [c for c in self._pending if c[0] == "pressed"]
                self._lost = True
            elif not self._lost:
                self._pending.append(call)
        if not self._wake.is_set():
            self._wake.set()

    def event(self, ev: dict[str, Any]) -> None:
        self.kept.event(ev)
        self._post("event", ev)

    def balls(self, balls: dict[str, list[float]]) -> None:
        self.kept.balls(balls)
        now = time.monotonic()
        if now - self._balls_sent >= 1 / BALLS_HZ:
            self._balls_sent = now
            self._post("balls", balls)

    def line(self, line: dict[str, Any], state: Any = None) -> None:
        shown = match_state(state)
        self.kept.line(line, shown)
        self._post("line", line, shown)

    def state(self, state: Any) -> None:
        shown = match_state(state)
        self.kept.state(shown)
        self._post("state", shown)

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        self.kept.health(status, problems)
        self._post("health", status, problems)

    # the daemon's sink (live/listeners.py); its life is run's (``stop``), not the daemon's
    on_event, on_line, on_balls, on_health = event, line, balls, health

    # -- life ------------------------------------------------------------------------------

    def launch(self) -> PageProcess:
        """The page process started: it loads its modules while the daemon starts."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "firmware_host.web.process", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
            )
        self._sock = ours
        return self

    def start(self, token: Any = None, press: Any = None) -> int:
        """Listening, with the referee's token and keys (``Daemon.press``); the port bound
        (0: any free one)."""
        if self._sock is None:
            self.launch()
        ours = self._sock
        assert ours is not None
        self.press = press
        with self._lock:  # the page has everything kept before it listens (the match state)
            kept, self._lost, self._pending = self.kept.kept(), False, []
        hello = {
            "kept": kept,
            "host": self.host,
            "port": self.port,
            "token": None if token is None else token.value,
            "press": press is not None,
            "level": logging.getLogger().getEffectiveLevel(),  # the daemon's -v
        }
        ours.sendall(json.dumps(hello).encode() + b"\n")
        reader = ours.makefile("rb")
        ours.settimeout(START_S)
        try:
            first = reader.readline()
        except TimeoutError:
            first = b""
        ours.settimeout(None)
        said = json.loads(first) if first else ["error", "the page process did not start"]
        if said[0] != "listening":
            self.stop()
            raise PageError(0, said[1])
        self.port = said[1]
        self._writer = threading.Thread(target=self._write, name="page writer", daemon=True)
        for thread in (
            self._writer,
            threading.Thread(target=self._read, args=(reader,), name="page reader", daemon=True),
        ):
            thread.start()
            self._threads.append(thread)
        return self.port

    def stop(self) -> None:
        """What the pipeline gave goes out first (the match's last verdict is often a
        moment old), then the page process ends its browsers' streams and itself."""
        self._closed.set()
        self._wake.set()
        if self._writer is not None:
            self._writer.join(STOP_S)  # the last batch, then the page's end of file
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(STOP_S)
        if self._proc is not None:
            try:
                self._proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._sock is not None:
            self._sock.close()

    # -- the writer and reader threads -------------------------------------------------------

    def _write(self) -> None:
        assert self._sock is not None
        closing = False
        while not closing:
            self._wake.wait()
            closing = self._closed.is_set()  # (before the list is taken: nothing is left)
            if not closing:
                time.sleep(BATCH_S)  # what comes meanwhile goes in the same write
            self._wake.clear()
            with self._lock:
                calls, self._pending = self._pending, []
                lost, self._lost = self._lost, False
            if lost:
                calls = [("reset", self.kept.kept()), *calls]
                self.resets += 1
            if not calls:
                continue
            try:
                text = json.dumps(calls, separators=(",", ":"), default=str)
            except (TypeError, ValueError):  # (a bug) the page starts again from what is kept
                log.exception("the live page: %d calls not encoded", len(calls))
                with self._lock:
                    self._lost = True
                continue
            try:
                self._sock.sendall(text.encode() + b"\n")
            except OSError:
                if not self._closed.is_set():
                    log.error("the live page's process is gone: the page is not served")
                return
        try:
            self._sock.shutdown(socket.SHUT_WR)  # the page process reads its end of file
        except OSError:
            pass

    def _read(self, reader: Any) -> None:
        """The page's requests: a referee's key, judged here; the answer goes back."""
        for raw in reader:
            try:
                what, ident, key, arg, source = json.loads(raw)
                assert what == "press" and self.press is not None
            except (ValueError, TypeError, AssertionError):
                continue
            try:
                self.press(key, arg, source=source)
                answer = None
            except (ValueError, TypeError) as exc:
                answer = str(exc)
            with self._lock:  # an answer is never dropped (a reset keeps the list's tail)
                self._pending.append(("pressed", ident, answer))
            self._wake.set()


# -- the page's process --------------------------------------------------------------------


class _Daemon:
    """The page process's side of the socket: calls in, keys out."""

    def __init__(self, sock: socket.socket, feed: LiveFeed) -> None:
        self.sock = sock
        self.feed = feed
        self.loop: asyncio.AbstractEventLoop | None = None
        self._send_lock = threading.Lock()
        self._waiting: dict[int, asyncio.Future[str | None]] = {}
        self._ids = itertools.count(1)

    def send(self, message: Any) -> None:
        with self._send_lock:
            self.sock.sendall(json.dumps(message).encode() + b"\n")

    async def press(self, key: str, arg: Any, *, source: str) -> None:
        """A referee's key to the daemon (on the server's loop); its ValueError raised here."""
        loop = asyncio.get_running_loop()
        self.loop = loop
        ident = next(self._ids)
        answer: asyncio.Future[str | None] = loop.create_future()
        self._waiting[ident] = answer
        try:
            await loop.run_in_executor(None, self.send, ["press", ident, key, arg, source])
            refused = await asyncio.wait_for(answer, PRESS_S)
        except TimeoutError:
            refused = f"the daemon did not answer within {PRESS_S:g} s"
        finally:
            self._waiting.pop(ident, None)
        if refused is not None:
            raise ValueError(refused)

    def _answered(self, ident: int, refused: str | None) -> None:
        answer = self._waiting.get(ident)
        if answer is not None and not answer.done():
            answer.set_result(refused)

    def serve(self, reader: Any) -> None:
        """The daemon's calls, until it closes the socket."""
        feed = self.feed
        for raw in reader:
            for call in json.loads(raw):
                what, args = call[0], call[1:]
                if what == "pressed":
                    if self.loop is not None:
                        self.loop.call_soon_threadsafe(self._answered, *args)
                elif what == "reset":
                    feed.reset(*args)
                elif what in ("event", "balls", "line", "state", "health"):
                    getattr(feed, what)(*args)


def main(fd: int) -> int:
    from ..live.referee_token import RefereeToken
    from ..lograte import RateLimit  # the daemon's log lines, as the daemon writes them
    from .server import WebServer

    sock = socket.socket(fileno=fd)
    reader = sock.makefile("rb")
    said = reader.readline()
    if not said:  # the daemon ended before its page was wanted
        return 0
    hello = json.loads(said)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimit())
    logging.basicConfig(level=hello["level"], handlers=[handler])
    # Its life is the socket's: a Ctrl-C or a stop for the daemon's group ends the daemon,
    # which closes the socket; this ends at that, without a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.nice(PAGE_NICE)
    except OSError:
        pass
    feed = LiveFeed()
    feed.reset(hello["kept"])
    daemon = _Daemon(sock, feed)
    token = RefereeToken(hello["token"]) if hello["token"] is not None else None
    server = WebServer(
        feed, hello["host"], hello["port"], token, daemon.press if hello["press"] else None
    )
    try:
        port = server.start()
    except OSError as exc:
        daemon.send(["error", exc.strerror or str(exc)])
        return 1
    daemon.send(["listening", port])
    try:
        daemon.serve(reader)
    except (OSError, ValueError):
        pass
    # The daemon has gone: its browsers are sent what came, their streams end, and this
    # ends at once (a browser's open stream would hold the server's clean-up for a minute),
    # with the refusals not yet said said.
    feed.end()
    deadline = time.monotonic() + END_S
    while feed.streams and time.monotonic() < deadline:
        time.sleep(0.01)
    server.refusals.flush()
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
