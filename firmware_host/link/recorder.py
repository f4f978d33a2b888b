"""Raw capture writer (ICD §8): the byte stream exactly as read, in ``.bin`` parts.

A recording must survive what happens to live loggers (python-can's killed
``can.logger``): it is a context manager, pushes its buffer to the kernel on
a short interval so a crash loses at most that interval, turns SIGTERM into
an orderly close (:func:`exit_on_signals`, installed by the CLI), and rotates
to names that sort in stream order::

    capture-20261130-133500-0001.bin   # session start (UTC), part number
    capture-20261130-133500-0002.bin

Concatenating the parts in name order gives back the exact stream; a part
may start mid-frame, which every capture reader already handles (the host
may attach mid-stream, ICD §1).  With ``rx_times=True`` each part gets a
``.rxt`` side file: one :data:`RX_TIMES_DTYPE` record per chunk (16 bytes,
little-endian ``u8 offset`` into the part, ``i8 host_rx_ns``).

What the host sent goes beside it too (:meth:`CaptureRecorder.write_sent`):
a ``.tx`` side file of one record per host frame, first sends and resends
alike, each a 18-byte little-endian head (``u8 rx_offset``: the part's
length when the frame left, so it sorts between the received bytes;
``i8 host_tx_ns``; ``u2 length``) and then the frame's wire bytes (COBS and
its delimiter).  The ``.bin`` stays the table's stream exactly (ICD §8);
:func:`read_sent` gives the ``.tx`` back as :class:`SentFrame` values.

A write that fails (disk full, device gone) never reaches the caller: the
part is closed where the disk stopped taking bytes, the failure is logged
once, chunks are counted in :attr:`CaptureRecorder.bytes_lost` while it
lasts, and every ``retry_s`` a new part is tried, so the recording resumes
by itself when space returns (the gap is between two parts).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d, CaptureRecorder(d) as rec:
...     rec.write(b"\\x00abc\\x00")
...     rec.bytes_written
5
"""

from __future__ import annotations

import logging
import os
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import BinaryIO, Self

import numpy as np

from ..files import is_regular
from .transport import Chunk

log = logging.getLogger("firmware_host.recorder")  # the name logs have always shown

RETRY_S = 1.0  # while the disk refuses bytes, a new part is tried at most this often
REMIND_S = 60.0  # ... and the log is reminded at most this often

RX_TIMES_DTYPE = np.dtype([("offset", "<u8"), ("host_rx_ns", "<i8")])
_RX_RECORD = struct.Struct("<Qq")
assert _RX_RECORD.size == RX_TIMES_DTYPE.itemsize
_TX_HEAD = struct.Struct("<QqH")  # rx_offset, host_tx_ns, length; the frame's bytes follow
SENT_SUFFIX = ".tx"


@dataclass(frozen=True, slots=True)
class SentFrame:
    """One host frame as it went out: where the received stream stood, when, what."""

    rx_offset: int  # bytes of the part received before it was sent
    host_ns: int  # time.monotonic_ns() of the write
    data: bytes  # the wire bytes, COBS-encoded, delimiter included


def part_name(prefix: str, started: datetime, part: int, suffix: str = ".bin") -> str:
    """``capture-YYYYmmdd-HHMMSS-0001.bin``: the session's UTC start, then the part."""
    return f"{prefix}-{started.astimezone(UTC):%Y%m%d-%H%M%S}-{part:04d}{suffix}"


def read_rx_times(path: str | Path) -> np.ndarray:
    """A ``.rxt`` side file as a structured array (``offset``, ``host_rx_ns``)."""
    return np.fromfile(path, dtype=RX_TIMES_DTYPE)


def read_sent(part_path: str | Path) -> list[SentFrame]:
    """The host frames of a part (its ``.tx`` side file; none if it has none).

    A record cut short by a crash at the file's end is left out.
    """
    path = Path(part_path).with_suffix(SENT_SUFFIX)
    if not path.exists():
        return []
    if not is_regular(path):  # a FIFO would hang the read, a directory end it
        log.warning("%s: not a regular file: the host frames it should hold are not read", path)
        return []
    raw = path.read_bytes()
    out, at = [], 0
    while at + _TX_HEAD.size <= len(raw):
        rx_offset, host_ns, length = _TX_HEAD.unpack_from(raw, at)
        at += _TX_HEAD.size
        if at + length > len(raw):
            break
        out.append(SentFrame(rx_offset, host_ns, raw[at : at + length]))
        at += length
    return out


def recorded_presses(part_path: str | Path) -> list[tuple[int, str, int]]:
    """The referee's presses from the page or the broker that a part kept (``.tx``): each as
    (where the received stream stood, key, arg), for a replay to press them at the same place.

    They are KEYPAD frames from the host's node (0x80), the keypad's frame
    as the host would have received it; the hub never sees them.
    """
    from protocol.catalogue import HOST_NODE, KEYPAD_KEYS
    from protocol.framing import Message, parse_frame

    presses = []
    for sent in read_sent(part_path):
        msg = parse_frame(sent.data[:-1])
        if isinstance(msg, Message) and msg.name == "KEYPAD" and msg.node == HOST_NODE:
            key = KEYPAD_KEYS.get(msg.fields["key"])
            if key is not None:
                presses.append((sent.rx_offset, key, int(msg.fields["arg"])))
    return presses


class CaptureRecorder:
    """Writes chunks to rotating ``.bin`` parts; thread-safe, never loses a chunk on close.

    Threading: :meth:`write` / :meth:`record` from the reader thread (pass
    :meth:`record` as the transport's ``on_chunk``), :meth:`close` from the
    owner; a small daemon thread flushes every ``flush_interval_s`` so a
    quiet link still reaches the disk.  ``bytes`` flush early at
    ``flush_bytes``.  Rotation happens between chunks, before the chunk that
    would push a part past ``max_bytes`` or once a part is ``max_seconds``
    old; a part is never empty.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        prefix: str = "capture",
        max_bytes: int | None = None,
        max_seconds: float | None = None,
        flush_interval_s: float = 0.5,
        flush_bytes: int = 1 << 16,
        retry_s: float = RETRY_S,
        rx_times: bool = False,
        started: datetime | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.max_seconds = max_seconds
        self.flush_interval_s = flush_interval_s
        self.flush_bytes = flush_bytes
        self.rx_times = rx_times
        self.started = started or datetime.now(UTC)
        self.paths: list[Path] = []
        self.bytes_written = 0
        self.dropped_after_close = 0  # chunks that arrived after close(): counted, not written
        self.error: OSError | None = None  # the last write, flush or open that failed
        self.retry_s = retry_s
        self.bytes_lost = 0  # bytes read but not on disk because a write failed
        self.failures = 0  # times recording stopped on an error (each logged once)
        self.sent_lost = 0  # host frames not kept: recording failing or closed
        self._failing = False
        self._lost_in_failure = 0
        self._retry_at = 0.0
        self._reminded_at = 0.0
        self._part_name = ""
        self._clock = clock
        self._lock = threading.Lock()
        self._bin: BinaryIO | None = None
        self._rxt: BinaryIO | None = None
        self._tx: BinaryIO | None = None  # opened by the first write_sent of a part
        self._part_bytes = 0
        self._part_opened = 0.0
        self._unflushed = 0
        self._closed = False
        self._stop = threading.Event()
        self._open_part()
        self._flusher = threading.Thread(target=self._flush_loop, name="capture flush", daemon=True)
        self._flusher.start()

    @property
    def path(self) -> Path:
        """The part being written now (or the last one that took bytes)."""
        return (
            self.paths[-1]
            if self.paths
            else self.directory / part_name(self.prefix, self.started, 1)
        )

    def position(self) -> tuple[Path, int] | None:
        """The part being written and its length: where the stream recorded so far ends
        (None while the recording fails: the bytes since are not on disk)."""
        with self._lock:
            if self._failing or self._bin is None:
                return None
            return self.path, self._part_bytes

    def write(self, data: bytes, host_rx_ns: int | None = None) -> None:
        """Append bytes as read from the port; ``host_rx_ns`` feeds the ``.rxt`` side file."""
        if not data:
            return
        with self._lock:
            if self._closed:
                self.dropped_after_close += 1
                return
            if self._failing and self._clock() < self._retry_at:
                self._lose(len(data))
                return
            try:
                if self._bin is None or self._should_rotate(len(data)):
                    self._close_part()
                    self._open_part()
                assert self._bin is not None
                if self._rxt is not None and host_rx_ns is not None:
                    self._rxt.write(_RX_RECORD.pack(self._part_bytes, host_rx_ns))
                self._bin.write(data)
            except OSError as exc:
                self._fail(exc, len(data))
                return
            self._part_bytes += len(data)
            self.bytes_written += len(data)
            self._unflushed += len(data)
            if self._failing or self._unflushed >= self.flush_bytes:
                # after a failure, flush at once: that proves the disk takes bytes again
                self._flush_locked()
            if self._failing and self._bin is not None:
                self._failing = False
                log.warning(
                    "recording resumed in %s (%d bytes lost while it failed)",
                    self._part_name,
                    self._lost_in_failure,
                )

    def write_sent(self, frame: bytes, host_tx_ns: int) -> None:
        """Keep one frame the host sent (``.tx``), placed after the bytes received so far.

        Thread-safe (the command link's thread calls it).  While the recording
        fails, or after close, the frame is counted in :attr:`sent_lost`.
        """
        with self._lock:
            if self._closed or self._failing or self._bin is None:
                self.sent_lost += 1
                return
            try:
                if self._tx is None:  # "x": never through a file (or symlink) already there
                    self._tx = open(self.path.with_suffix(SENT_SUFFIX), "xb")  # noqa: SIM115
                self._tx.write(_TX_HEAD.pack(self._part_bytes, host_tx_ns, len(frame)) + frame)
            except OSError as exc:
                self._fail(exc, 0)

    def record(self, chunk: Chunk) -> None:
        """``write`` for a transport :class:`~firmware_host.link.transport.Chunk` (an ``on_chunk``)."""
        self.write(chunk.data, chunk.host_rx_ns)

    def flush(self) -> None:
        """Hand everything written so far to the kernel (survives the process being killed)."""
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self) -> None:
        """Flush, fsync and close the last part (idempotent; a failure is logged, not raised)."""
        self._stop.set()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._close_part()
            except OSError as exc:
                self._fail(exc, 0)
        if self._flusher is not threading.current_thread():
            self._flusher.join(1.0)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- parts ---------------------------------------------------------------

    def _should_rotate(self, incoming: int) -> bool:
        if self._part_bytes == 0:
            return False
        if self.max_bytes is not None and self._part_bytes + incoming > self.max_bytes:
            return True
        return (
            self.max_seconds is not None and self._clock() - self._part_opened >= self.max_seconds
        )

    def _open_part(self) -> None:
        part = len(self.paths) + 1
        path = self.directory / part_name(self.prefix, self.started, part)
        # "x": never overwrite an earlier recording that happened to share the second.
        self._bin = open(path, "xb")  # noqa: SIM115 - closed in _close_part
        self.paths.append(path)
        self._part_name = path.name
        self._part_bytes = 0
        if self.rx_times:
            self._rxt = open(path.with_suffix(".rxt"), "xb")  # noqa: SIM115
        self._part_opened = self._clock()
        log.info("recording to %s", path)

    def _close_part(self) -> None:
        files = [f for f in (self._bin, self._rxt, self._tx) if f is not None]
        for f in files:  # an OSError here leaves both open for _fail to account
            f.flush()
            os.fsync(f.fileno())
        for f in files:
            f.close()
        self._bin = self._rxt = self._tx = None
        self._unflushed = 0

    def _flush_locked(self) -> None:
        try:
            for f in (self._bin, self._rxt, self._tx):
                if f is not None:
                    f.flush()
        except OSError as exc:
            self._fail(exc, 0)
            return
        self._unflushed = 0

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            self.flush()

    # -- failures ------------------------------------------------------------

    def _lose(self, n: int) -> None:
        self.bytes_lost += n
        self._lost_in_failure += n
        now = self._clock()
        if now - self._reminded_at >= REMIND_S:
            self._reminded_at = now
            log.warning(
                "still not recording (%s): %d bytes lost so far",
                _why(self.error),
                self._lost_in_failure,
            )

    def _fail(self, exc: OSError, incoming: int) -> None:
        """Drop the part at the last byte the disk took; log once; retry in ``retry_s``."""
        self.error = exc
        attempted = self._part_bytes + incoming
        on_disk = min(self._abandon_part(), attempted)
        self.bytes_written += on_disk - self._part_bytes
        self._part_bytes = on_disk
        now = self._clock()
        self._retry_at = now + self.retry_s
        if not self._failing:
            self._failing, self._lost_in_failure, self._reminded_at = True, 0, now
            self.failures += 1
            log.error(
                "recording to %s failed (%s); refereeing goes on, recording resumes in a new "
                "part when the disk takes bytes again",
                self.directory,
                _why(exc),
            )
        self._lose(attempted - on_disk)

    def _abandon_part(self) -> int:
        """Close the part without flushing what the disk refused; its bytes on disk."""
        on_disk = 0
        if self._bin is not None:
            try:
                on_disk = os.fstat(self._bin.fileno()).st_size
            except (OSError, ValueError):  # ValueError: closed, so flushed and synced
                on_disk = self._part_bytes
        for f in (self._bin, self._rxt, self._tx):
            if f is not None:
                try:
                    f.close()
                except OSError:  # the refused bytes are still buffered: they are the loss
                    pass
        if self._bin is not None and on_disk == 0 and self.paths:
            # nothing of this part reached the disk: no empty file, and its number is reused
            path = self.paths.pop()
            for name in (path, path.with_suffix(".rxt"), path.with_suffix(SENT_SUFFIX)):
                try:
                    name.unlink()
                except OSError:
                    pass
        self._bin = self._rxt = self._tx = None
        self._unflushed = 0
        return on_disk


def _why(exc: OSError | None) -> str:
    return "no error" if exc is None else exc.strerror or str(exc)


def exit_on_signals(
    signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGHUP),
) -> Callable[[], None]:
    """Turn termination signals into ``SystemExit`` so every ``with`` closes its recording.

    For the CLI's main thread (Python runs signal handlers there only).
    Closing a recorder from inside the handler could interrupt a write
    half-way; unwinding the main thread's ``with`` blocks cannot.  Returns a
    function that restores the previous handlers.

        restore = exit_on_signals()
        try:
            with CaptureRecorder(dir) as rec, SerialTransport(url, on_chunk=rec.record) as t:
                ...
        finally:
            restore()
    """

    def _exit(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, _exit) for sig in signals}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
