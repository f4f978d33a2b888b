"""A recording as frames on a time line: both directions, each with its clock.

A recording is a ``.bin`` part (the table's bytes exactly, ICD §8) and,
when the daemon wrote it, a ``.rxt`` (host receive time per chunk) and a
``.tx`` (the frames the host sent, with their host times) beside it
(:mod:`firmware_host.recorder`).  Tools that show the link in time order
(``pcap``, ``stats``) need, per frame: its wire bytes, its direction and a
time.  The time is the host's clock (``time.monotonic_ns()``) when the
recording has one, else the hub's: the unwrapped ``t_us`` of the latest hub
frame at or before it on the wire (the hub stamps several frames a second,
so that is the hub clock when the frame arrived, to within the gap between
two hub frames).  A hub reboot restarts the hub clock at an arbitrary value:
hub times are only ordered within one boot.

Frames are the runs between ``0x00`` delimiters, so a bad frame is a frame
here too; bytes after the last delimiter are an unfinished frame and left
out.  Everything is columnar (numpy); bytes are sliced only on request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..recorder import read_rx_times, read_sent

HOST_CLOCK, HUB_CLOCK = "host", "hub"
_WRAP = 1 << 32


@dataclass
class Recording:
    """Every frame of a recording in time order (``time_ns`` non-decreasing within a boot)."""

    buf: np.ndarray  # uint8: the capture, then the host frames one after another
    capture_bytes: int
    start: np.ndarray  # int64, a frame's first byte in buf
    stop: np.ndarray  # int64, one past its delimiter
    offset: np.ndarray  # int64, the table frame's capture offset / where the stream stood (host)
    host: np.ndarray  # bool, the host sent it (from the .tx side file)
    time_ns: np.ndarray  # int64, in ``clock``
    clock: str  # HOST_CLOCK or HUB_CLOCK

    def __len__(self) -> int:
        return len(self.start)

    def frame(self, i: int) -> bytes:
        return self.buf[self.start[i] : self.stop[i]].tobytes()


def wire_frames(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first byte, one past the delimiter) of every non-empty frame in a byte stream."""
    ends = np.flatnonzero(buf == 0)
    starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else ends
    keep = ends > starts
    return starts[keep].astype(np.int64), ends[keep].astype(np.int64) + 1


def hub_clock_at(buf: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The hub's unwrapped clock (µs) at each capture position: its latest frame's stamp.

    Positions before the first hub frame take that first stamp; a capture
    without one gives zeros.
    """
    from protocol.decoder import decode_capture
    from protocol.kernels import DUPLICATE, OK

    frames = decode_capture(buf).frames
    hub = frames[np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0)]
    if not len(hub):
        return np.zeros(len(positions), np.int64)
    t = hub["t_us"].astype(np.int64)
    steps = np.diff(t)
    t[1:] += _WRAP * np.cumsum(steps < -(_WRAP // 2))  # a wrap, not a step back
    at = np.searchsorted(hub["offset"], positions, side="right") - 1
    return t[np.maximum(at, 0)]


def load(path: str | Path, data: bytes | None = None) -> Recording:
    """A recording from its ``.bin`` part (``data``: its bytes, if already read)."""
    path = Path(path)
    capture = np.frombuffer(path.read_bytes() if data is None else data, np.uint8)
    sent = read_sent(path)
    buf = np.concatenate([capture, *(np.frombuffer(s.data, np.uint8) for s in sent)])
    start, stop = wire_frames(capture)
    lengths = np.array([len(s.data) for s in sent], np.int64)
    host_start = len(capture) + np.cumsum(lengths) - lengths
    rx_path = path.with_suffix(".rxt")
    rx = read_rx_times(rx_path) if rx_path.exists() else np.zeros(0)
    sent_at = np.array([s.rx_offset for s in sent], np.int64)
    if len(rx):
        chunk = np.searchsorted(rx["offset"], stop - 1, side="right") - 1
        table_t = rx["host_rx_ns"][np.maximum(chunk, 0)]
        host_t = np.array([s.host_ns for s in sent], np.int64)
        clock = HOST_CLOCK
    else:
        table_t = hub_clock_at(capture, start) * 1000
        host_t = hub_clock_at(capture, np.maximum(sent_at - 1, 0)) * 1000
        clock = HUB_CLOCK
    # In time order; a host frame sent at the instant a chunk arrived comes after it.
    host = np.concatenate([np.zeros(len(start), bool), np.ones(len(sent), bool)])
    time_ns = np.concatenate([table_t, host_t]).astype(np.int64)
    place = np.concatenate([stop, sent_at])
    order = np.lexsort((host, place, time_ns)) if clock == HOST_CLOCK else np.lexsort((host, place))
    return Recording(
        buf=buf,
        capture_bytes=len(capture),
        start=np.concatenate([start, host_start])[order],
        stop=np.concatenate([stop, host_start + lengths])[order],
        offset=np.concatenate([start, sent_at])[order],
        host=host[order],
        time_ns=time_ns[order],
        clock=clock,
    )
