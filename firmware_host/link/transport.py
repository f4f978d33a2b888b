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
import errno
import fcntl
import grp
import logging
import os
import pwd
import queue
import stat
import termios
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import serial
from serial.threaded import Protocol, ReaderThread

log = logging.getLogger("firmware_host.transport")  # the name logs have always shown

DEFAULT_BAUD = 921_600
WAIT_REPORT_S = 12.0  # an absent port: a line this often (5 a minute: all lograte lets through)
LATENCY_TIMER_MS = 1  # an FTDI adapter holds received bytes up to this long (16 by default)
SYSFS = Path("/sys")
PTY_MAJORS = range(136, 144)  # Unix98 pseudo-terminal slaves (the kernel's devices.txt)
PTY_GONE = (
    "a pseudo-terminal never comes back and its number goes to the next one opened "
    "(maybe a shell): not reopened (a bridge that restarts, such as socat, "
    "keeps a stable name with a symlink: link=/path)"
)


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
    GONE = "gone"  # a pseudo-terminal named directly closed: never reopened (PTY_GONE)
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


def is_device(url: str) -> bool:
    """A local device path (``/dev/ttyUSB0``), not a pyserial URL (``socket://...``)."""
    return "://" not in url


def names_a_pty(url: str, port: Any) -> bool:
    """The URL is a pseudo-terminal's own node (``/dev/pts/7``), not a symlink to one."""
    st = os.fstat(port.fileno())
    return (
        stat.S_ISCHR(st.st_mode)
        and os.major(st.st_rdev) in PTY_MAJORS
        and os.path.realpath(url) == os.path.abspath(url)
    )


BY_ID = Path("/dev/serial/by-id")


def by_id_names(directory: Path = BY_ID) -> dict[str, str]:
    """Each serial device's stable name: ``{"/dev/ttyUSB0": "/dev/serial/by-id/usb-FTDI_…"}``.

    udev links every USB serial port there by vendor, product and serial
    number, so the name stays when the adapter comes back as ``ttyUSB1``
    (a replug, a reboot with two adapters): the one to give as ``--port``.
    """
    try:
        links = sorted(directory.iterdir())
    except OSError:  # no USB serial device plugged in: udev made no folder
        return {}
    return {os.path.realpath(link): str(link) for link in links}


def access_problem(path: str) -> str | None:
    """Why this process may not open the device read-write, in words; None if it may.

    The usual case on a fresh machine: the device is ``root:dialout 0660`` and
    the user is not in ``dialout``; the line names the group and the fix.
    """
    if os.access(path, os.R_OK | os.W_OK):
        return None
    st = os.stat(path)
    group = _name(grp.getgrgid, st.st_gid)
    user = _name(pwd.getpwuid, os.geteuid())
    mine = {os.getegid(), *os.getgroups()}
    if st.st_mode & 0o060 == 0o060 and st.st_gid not in mine:
        return (
            f"permission denied: the device belongs to group {group}, and user {user} is not "
            f"in it (sudo usermod -aG {group} {user}, then log in again)"
        )
    owner = _name(pwd.getpwuid, st.st_uid)
    return (
        f"permission denied (mode {stat.S_IMODE(st.st_mode):04o}, owner {owner}, "
        f"group {group}; this is user {user})"
    )


def _name(lookup: Callable[[int], Any], number: int) -> str:
    try:
        return str(lookup(number)[0])
    except KeyError:  # an id without a name
        return str(number)


def low_latency(device: str, sysfs: Path = SYSFS) -> tuple[int, str] | None:
    """The USB serial adapter's latency timer to 1 ms, where its driver has one (FTDI).

    An FTDI chip holds what it received until 62 bytes or the timer (16 ms
    by default) pass, so every lamp command's ACK came up to 16 ms late.
    The kernel shows the timer in sysfs beside the tty (``device/latency_timer``).
    Only root may write it: an unprivileged daemon says so, and the udev rule
    of ``service install --udev`` sets it at every plug-in.  Returns the log
    level and the words to log, or None where the driver has no such timer
    (a CDC-ACM hub, a pty, a URL).
    """
    st = os.stat(device)
    timer = (
        sysfs / "dev" / "char" / f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" / "device"
    ) / "latency_timer"
    try:
        was = int(timer.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return logging.WARNING, f"{device}: cannot read its latency timer ({timer}): {exc}"
    if was <= LATENCY_TIMER_MS:
        return logging.INFO, f"{device}: USB latency timer {was} ms"
    try:
        timer.write_text(f"{LATENCY_TIMER_MS}\n")
    except OSError as exc:
        return logging.WARNING, (
            f"{device}: USB latency timer {was} ms (adds up to {was} ms to every lamp "
            f"command's ACK); cannot set it to {LATENCY_TIMER_MS} ms: {exc.strerror or exc} "
            "(`firmware-host service install --udev` prints a udev rule that sets it)"
        )
    return logging.INFO, f"{device}: USB latency timer {was} ms -> {LATENCY_TIMER_MS} ms"


def _claim(port: Any) -> None:
    """The tty for us alone (TIOCEXCL): any later open(2) is EBUSY, root's aside.

    pyserial's ``exclusive=True`` is an flock, which only programs that flock
    respect; a terminal program or ModemManager opening the device would
    otherwise share its bytes.
    """
    fcntl.ioctl(port.fileno(), termios.TIOCEXCL)


def _release(port: Any) -> None:
    """TIOCNXCL before closing: the flag outlives our fd while the tty exists (a pty)."""
    fd = getattr(port, "fd", None)  # None once another thread closed the port
    if port.is_open and fd is not None:
        with suppress(OSError):  # a vanished device, or closed since: nothing left to release
            fcntl.ioctl(fd, termios.TIOCNXCL)


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

    def close(self) -> None:
        if isinstance(self.serial, serial.Serial):  # a local tty (spy:// wraps one too)
            _release(self.serial)
        super().close()


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
        sysfs: Path = SYSFS,
        wait_report_s: float = WAIT_REPORT_S,
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
        self.sysfs = sysfs
        self.wait_report_s = wait_report_s
        self._waiting_since = 0.0  # monotonic s: the start of the present outage
        self._reported_wait = 0.0  # its length when last logged

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
    def closing(self) -> threading.Event:
        """Set by :meth:`close`: no reopen will follow."""
        return self._closing

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
                self._waiting_since = time.monotonic()
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
                self._set_state(LinkState.CONNECTING, error=self._why(exc), attempt=attempt)
                self._closing.wait(self.backoff.delay_s(attempt))
                continue
            pty = is_device(self.url) and names_a_pty(self.url, port)
            if is_device(self.url):
                self._tune(port)
            error = self._run_connection(port)
            attempt = 0
            if error is not None and pty:
                # Reopening would split a stranger's bytes with it and write our lamp
                # commands into its terminal.
                self.stats.losses += 1
                self._set_state(LinkState.GONE, error=f"{error}; {PTY_GONE}")
                self._closing.wait()
            elif error is not None:
                self.stats.losses += 1
                self._set_state(LinkState.LOST, error=error)
                # Reopen at once (a brief glitch), then back off if it stays gone.
        self._set_state(LinkState.CLOSED)

    def _why(self, exc: BaseException) -> str:
        """An open's failure in words; a refused device names its group (dialout)."""
        if is_device(self.url) and os.path.exists(self.url):
            problem = access_problem(self.url)
            if problem is not None:
                return problem
        if getattr(exc, "errno", None) in (errno.EBUSY, errno.EWOULDBLOCK):
            return f"{exc} (another program has it: a second daemon, ModemManager, a terminal)"
        return str(exc)

    def _tune(self, port: serial.SerialBase) -> None:
        """A local tty: ours alone (TIOCEXCL), and the adapter's latency timer at 1 ms."""
        try:
            _claim(port)
        except OSError as exc:
            log.warning("%s: cannot take the port for this process alone: %s", self.url, exc)
        try:
            told = low_latency(self.url, self.sysfs)
        except OSError as exc:  # vanished between the open and now: the reader will see it
            told = logging.DEBUG, f"{self.url}: no latency timer read: {exc}"
        if told is not None:
            log.log(*told)

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
        if state in (LinkState.LOST, LinkState.GONE):
            # A consumer of on_status (the daemon) says it in its own words, once: whether
            # it is a loss at all (a virtual table hanging up at its match's end is not).
            log.log(
                logging.INFO if self._on_status else logging.WARNING,
                "%s: link %s: %s",
                self.url,
                state.value,
                error,
            )
        elif state is LinkState.CONNECTING and error:
            # The first failure is news; then a reminder every wait_report_s (an absent
            # device is waited for: a USB adapter that enumerates late, a cable out).
            waited = time.monotonic() - self._waiting_since
            if attempt == 1:
                log.warning("%s: open failed (attempt 1): %s; waiting for it", self.url, error)
                self._reported_wait = 0.0
            elif waited - self._reported_wait >= self.wait_report_s:
                log.warning(
                    "%s: still waiting for the port (%.0f s, attempt %d): %s",
                    self.url,
                    waited,
                    attempt,
                    error,
                )
                self._reported_wait = waited
            else:
                log.debug("%s: open failed (attempt %d): %s", self.url, attempt, error)
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
