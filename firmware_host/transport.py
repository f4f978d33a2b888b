"""Byte transport to the table: any pyserial URL, a reader thread, reconnect.

Transports own only bytes (python-can ``BusABC``): framing, statistics and
the meaning of a new ``HELLO`` sit above them.  A :class:`SerialTransport`
opens whatever ``serial.serial_for_url`` opens (``/dev/ttyUSB0``, a pty path,
``socket://``, ``rfc2217://``, ``loop://``), hands every read to a callback
or a queue as a :class:`Chunk` stamped with the host's receive time, and
survives the cable being pulled: the loss is reported as a
:class:`LinkStatus` and the port is reopened with backoff until
:meth:`SerialTransport.close`.

>>> with SerialTransport("loop://") as link:
...     link.wait_open(1.0) and link.write(b"\\x00hi\\x00")
True
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

import serial
from serial.threaded import Protocol, ReaderThread

log = logging.getLogger(__name__)

DEFAULT_BAUD = 921_600


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes exactly as one read returned them.

    ``host_rx_ns`` is ``time.monotonic_ns()`` taken in the reader thread right
    after the read returned: host clock domain, never a node's ``t_us``.
    """

    data: bytes
    host_rx_ns: int


class LinkState(enum.Enum):
    CONNECTING = "connecting"  # opening the port, or waiting to retry after a failed open
    OPEN = "open"
    LOST = "lost"  # an open port failed: unplugged cable, vanished device, closed peer
    CLOSED = "closed"  # close() was called; terminal


@dataclass(frozen=True, slots=True)
class LinkStatus:
    """One change of the port's state, for the daemon's log and health view."""

    state: LinkState
    url: str
    host_ns: int  # time.monotonic_ns() when the change was seen
    error: str = ""
    attempt: int = 0  # failed opens since the port was last open


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before reopening: ``initial_s`` doubling up to ``max_s``.

    A vanished USB device comes back within a second or two; polling faster
    than 50 ms gains nothing and spams the log.
    """

    initial_s: float = 0.05
    max_s: float = 2.0
    factor: float = 2.0

    def delay_s(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th consecutive failed open (1-based)."""
        return min(self.max_s, self.initial_s * self.factor ** max(0, attempt - 1))


@dataclass
class TransportStats:
    """Counters since the transport was created (never reset by a reconnect)."""

    rx_bytes: int = 0
    rx_chunks: int = 0
    tx_bytes: int = 0
    tx_refused: int = 0  # writes not sent: port not open, write failed or timed out
    opens: int = 0
    losses: int = 0
    callback_errors: int = 0  # exceptions raised by on_chunk/on_status, logged and survived


ChunkCallback = Callable[[Chunk], Any]
StatusCallback = Callable[[LinkStatus], Any]


class _Reader(ReaderThread):
    """pyserial's ReaderThread, minus its one way to die.

    ``ReaderThread.run`` catches only ``SerialException`` around the read,
    but ``in_waiting`` on a vanished USB device raises a bare ``OSError``
    (pyserial #355), which would kill the thread silently.  Report it as a
    lost connection like any other.
    """

    protocol: Protocol | None

    def run(self) -> None:
        try:
            super().run()
        except OSError as exc:
            self.alive = False
            if self.protocol is not None:
                self.protocol.connection_lost(exc)
                self.protocol = None


class _ChunkProtocol(Protocol):
    """Stamps each read and forwards it; records why the connection ended."""

    def __init__(self, owner: SerialTransport, lost: threading.Event) -> None:
        self._owner = owner
        self._lost = lost
        self.error: BaseException | None = None

    def connection_made(self, transport: ReaderThread) -> None:
        # Without cancel_read (socket://, rfc2217://) ReaderThread polls with a
        # 1 s timeout; a shorter one lets close() return promptly.
        if not hasattr(transport.serial, "cancel_read"):
            transport.serial.timeout = self._owner.poll_s
        self._owner.stats.opens += 1
        self._owner._set_state(LinkState.OPEN)

    def data_received(self, data: bytes) -> None:
        self._owner._deliver(Chunk(bytes(data), time.monotonic_ns()))

    def connection_lost(self, exc: BaseException | None) -> None:
        self.error = exc
        self._lost.set()


class SerialTransport:
    """A self-healing byte link to the table.

    Threading: :meth:`open` starts one supervisor thread that opens the port,
    runs a pyserial ``ReaderThread`` on it and reopens it after a loss.
    ``on_chunk`` and ``on_status`` are called from those threads; they must
    be quick and must not call :meth:`close`.  An exception they raise is
    logged and counted, never fatal.  Without ``on_chunk``, chunks go to
    :attr:`chunks` (a ``queue.SimpleQueue``).  :meth:`write` may be called
    from any thread.
    """

    def __init__(
        self,
        url: str,
        *,
        baudrate: int = DEFAULT_BAUD,
        on_chunk: ChunkCallback | None = None,
        on_status: StatusCallback | None = None,
        backoff: Backoff = Backoff(),
        poll_s: float = 0.1,
        write_timeout_s: float = 0.5,
    ) -> None:
        self.url = url
        self.baudrate = baudrate
        self.backoff = backoff
        self.poll_s = poll_s
        self.write_timeout_s = write_timeout_s
        self.stats = TransportStats()
        self.chunks: queue.SimpleQueue[Chunk] = queue.SimpleQueue()
        self._on_chunk = on_chunk
        self._on_status = on_status
        self._lock = threading.Lock()
        self._reader: _Reader | None = None
        self._closing = threading.Event()
        self._opened = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._state = LinkState.CLOSED

    # -- lifecycle ---------------------------------------------------------

    def open(self) -> Self:
        """Start connecting in the background; a port that is absent now is retried."""
        if self._supervisor is not None:
            return self
        self._supervisor = threading.Thread(
            target=self._supervise, name=f"transport {self.url}", daemon=True
        )
        self._supervisor.start()
        return self

    def wait_open(self, timeout_s: float | None = None) -> bool:
        """Block until the port is open (or ``timeout_s`` passes); True if it is."""
        return self._opened.wait(timeout_s)

    @property
    def state(self) -> LinkState:
        return self._state

    @property
    def is_open(self) -> bool:
        return self._state is LinkState.OPEN

    def close(self) -> None:
        """Stop reconnecting, close the port and join the threads (idempotent)."""
        with self._lock:
            self._closing.set()
            reader = self._reader
        if reader is not None:
            reader.close()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(5.0)

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- bytes -------------------------------------------------------------

    def write(self, data: bytes) -> bool:
        """Send bytes if the port is open; False (counted) if they were not sent.

        A refused write is an ordinary event on a serial link (cable out,
        device rebooting), so it is a value, not an exception.
        """
        reader = self._reader
        if reader is None or not reader.alive:
            self.stats.tx_refused += 1
            return False
        try:
            reader.write(data)
        except (serial.SerialException, OSError) as exc:  # SerialTimeoutException included
            self.stats.tx_refused += 1
            log.warning("%s: write of %d bytes failed: %s", self.url, len(data), exc)
            return False
        self.stats.tx_bytes += len(data)
        return True

    # -- threads -----------------------------------------------------------

    def _supervise(self) -> None:
        attempt = 0
        while not self._closing.is_set():
            if attempt == 0:
                self._set_state(LinkState.CONNECTING)
            try:
                port = serial.serial_for_url(
                    self.url,
                    baudrate=self.baudrate,
                    timeout=self.poll_s,
                    write_timeout=self.write_timeout_s,
                    # Two readers of one tty each get half the bytes; refuse the second.
                    exclusive=True,
                )
            except (serial.SerialException, OSError, ValueError) as exc:
                attempt += 1
                self._set_state(LinkState.CONNECTING, error=str(exc), attempt=attempt)
                self._closing.wait(self.backoff.delay_s(attempt))
                continue
            error = self._run_connection(port)
            attempt = 0
            if error is not None:
                self.stats.losses += 1
                self._set_state(LinkState.LOST, error=error)
                # Reopen at once (a brief glitch), then back off if it stays gone.
        self._set_state(LinkState.CLOSED)

    def _run_connection(self, port: serial.SerialBase) -> str | None:
        """Read until the port fails or close(); the failure text, or None on close."""
        lost = threading.Event()
        protocol = _ChunkProtocol(self, lost)
        reader = _Reader(port, lambda: protocol)
        reader.name = f"serial reader {self.url}"
        with self._lock:
            if self._closing.is_set():
                port.close()
                return None
            self._reader = reader
            reader.start()  # connection_made reports OPEN before the first read
        lost.wait()
        with self._lock:
            self._reader = None
        self._opened.clear()
        reader.close()
        if self._closing.is_set():
            return None
        return str(protocol.error) if protocol.error is not None else "port closed"

    def _deliver(self, chunk: Chunk) -> None:
        self.stats.rx_bytes += len(chunk.data)
        self.stats.rx_chunks += 1
        if self._on_chunk is None:
            self.chunks.put(chunk)
            return
        self._call(self._on_chunk, chunk)

    def _set_state(self, state: LinkState, *, error: str = "", attempt: int = 0) -> None:
        previous, self._state = self._state, state
        if state is LinkState.OPEN:
            self._opened.set()
        status = LinkStatus(state, self.url, time.monotonic_ns(), error, attempt)
        if state is LinkState.LOST:
            log.warning("%s: link lost: %s", self.url, error)
        elif state is LinkState.CONNECTING and error:
            # The first failure is news; the retries after it are noise.
            log.log(
                logging.WARNING if attempt == 1 else logging.DEBUG,
                "%s: open failed (attempt %d): %s",
                self.url,
                attempt,
                error,
            )
        elif state is not previous:
            log.info("%s: %s", self.url, state.value)
        if self._on_status is not None:
            self._call(self._on_status, status)

    def _call(self, callback: Callable[[Any], Any], arg: Chunk | LinkStatus) -> None:
        # The reader thread must never die of the consumer's bug (STYLE habit 4):
        # anything the callback raises is counted and logged with its traceback.
        try:
            callback(arg)
        except Exception:
            self.stats.callback_errors += 1
            log.exception("%s: %s callback raised", self.url, type(arg).__name__)
