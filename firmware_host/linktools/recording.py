"""A recording as frames on a time line: both directions, each with its clock.

A recording is a ``.bin`` part (the table's bytes exactly, ICD §8) and,
when the daemon wrote it, a ``.rxt`` (host receive time per chunk) and a
``.tx`` (the frames the host sent, with their host times) beside it
(:mod:`firmware_host.link.recorder`).  Tools that show the link in time order
(``pcap``, ``stats``) need, per frame: its wire bytes, its direction and a
time.  The time is the host's clock (``time.monotonic_ns()``) when the
recording has one, else the hub's: the unwrapped ``t_us`` of the latest hub
frame at or before it on the wire (the hub stamps several frames a second,
so that is the hub clock when the frame arrived, to within the gap between
two hub frames).  A hub reboot restarts the hub clock at an arbitrary value:
each boot's hub times are carried on from where the last boot's ended.

Frames are the runs between ``0x00`` delimiters, so a bad frame is a frame
here too.  Bytes after the last delimiter are a frame the capture cut
(``CUT``: the recording ended inside it), and a first frame that fails its
checks in a capture that does not begin with a delimiter is the end of a
frame the host joined in the middle of (``JOINED``, ICD §1).  Each table
frame carries the decoder's ``seq`` mark (:mod:`protocol.seqwindow`).
Everything is columnar (numpy); bytes are sliced only on request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from protocol.decoder import Decoded, decode_capture
from protocol.kernels import BAD_COBS, MAX_ENCODED

from ..link.recorder import SentFrame, read_rx_times, read_sent
from ..timing.unwrap import unwrap, unwrap_chained
from .hosttime import recording_speed

HOST_CLOCK, HUB_CLOCK = "host", "hub"
WHOLE, CUT, JOINED = 0, 1, 2  # a frame as the recording holds it (Recording.kind)
KIND_NAMES = {WHOLE: "whole", CUT: "cut at the capture's end", JOINED: "joined mid-frame"}


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
    seq_mark: np.ndarray  # uint8, the decoder's seq mark (protocol.seqwindow; NONE: host, bad)
    seq_gap: np.ndarray  # uint16, GAP: frames of its node missing just before it
    kind: np.ndarray  # uint8, WHOLE, CUT or JOINED
    speed: float = 1.0  # a virtual table played this many times faster (time_ns scaled by it)

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


def arrival_ns(rx: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Host receive time (``.rxt`` records) of the chunk that held each byte offset."""
    chunk = np.maximum(np.searchsorted(rx["offset"], offsets, side="right") - 1, 0)
    return rx["host_rx_ns"][chunk]


def unwrap_u32(t: np.ndarray) -> np.ndarray:
    """A 32-bit clock (µs, wraps every 71.6 min) as int64 that keeps counting: the timing
    core's own unwrapping, on one node's column."""
    return unwrap(t.astype(np.int64), 32)


def boot_starts(decoded: Decoded) -> np.ndarray:
    """Capture offsets where each boot after the first starts: a HELLO with a new
    ``boot_id`` (the repeat after a REQUEST_HELLO keeps its id: not a reboot)."""
    hello = decoded.tables.get("HELLO")
    if hello is None or not len(hello):
        return np.zeros(0, np.int64)
    ids = hello["boot_id"]
    return hello["offset"][np.flatnonzero(ids[1:] != ids[:-1]) + 1].astype(np.int64)


def hub_clock_at(decoded: Decoded, positions: np.ndarray) -> np.ndarray:
    """The hub's clock (µs) at each capture position: its latest frame's stamp.

    Unwrapped, from 0 at the first hub frame, and each boot carried on from
    where the last one ended (a reboot restarts the hub clock at an arbitrary
    value), so the result never steps back by more than the hub's own frames
    do.  Positions before the first hub frame take 0; a capture without one
    gives zeros.
    """
    from protocol.kernels import DUPLICATE, OK

    frames = decoded.frames
    hub = frames[np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0)]
    if not len(hub):
        return np.zeros(len(positions), np.int64)
    boot = np.searchsorted(boot_starts(decoded), hub["offset"], side="right")
    # each boot from where the last ended: one pass (a mask per boot: quadratic in boots)
    t = unwrap_chained(hub["t_us"].astype(np.int64), boot, np.array([-1, 0, 0], np.int64), 32)
    at = np.searchsorted(hub["offset"], positions, side="right") - 1
    return t[np.maximum(at, 0)]


def joined_bytes(first: np.void, first_byte: int) -> int:
    """The length of a stream's first frame (decoder frame table row) when it is the end of a
    frame the reader joined in the middle of (ICD §1: a host may attach mid-frame), else 0:
    the stream does not begin with a delimiter and the frame fails its checks, no longer
    than a frame can be."""
    if first["offset"] != 0 or first_byte == 0 or first["status"] < BAD_COBS:
        return 0
    return int(first["length"]) if first["length"] <= MAX_ENCODED else 0


def _table_frames(
    capture: np.ndarray, decoded: Decoded
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(start, stop, seq_mark, seq_gap, kind) of the capture's frames, a cut tail included."""
    start, stop = wire_frames(capture)
    kind = np.zeros(len(start), np.uint8)
    tail = int(stop[-1]) if len(stop) else 0
    if tail < len(capture):
        start, stop = np.append(start, tail), np.append(stop, len(capture))
        kind = np.append(kind, np.uint8(CUT))
    mark, gap = np.zeros(len(start), np.uint8), np.zeros(len(start), np.uint16)
    frames = decoded.frames
    if len(frames):
        at = np.minimum(np.searchsorted(frames["offset"], start), len(frames) - 1)
        known = frames["offset"][at] == start
        mark[known], gap[known] = frames["seq_mark"][at[known]], frames["seq_gap"][at[known]]
        if joined_bytes(frames[0], int(capture[0])):
            kind[0] = JOINED
    return start, stop, mark, gap, kind


def load(path: str | Path, data: bytes | None = None) -> Recording:
    """A recording from its ``.bin`` part (``data``: its bytes, if already read)."""
    path = Path(path)
    capture = np.frombuffer(path.read_bytes() if data is None else data, np.uint8)
    sent = read_sent(path)
    buf = np.concatenate([capture, *(np.frombuffer(s.data, np.uint8) for s in sent)])
    decoded = decode_capture(capture)
    start, stop, mark, gap, kind = _table_frames(capture, decoded)
    lengths = np.array([len(s.data) for s in sent], np.int64)
    host_start = len(capture) + np.cumsum(lengths) - lengths
    rx_path = path.with_suffix(".rxt")
    rx = read_rx_times(rx_path) if rx_path.exists() else np.zeros(0)
    sent_at = np.array([s.rx_offset for s in sent], np.int64)
    speed = 1.0
    if len(rx):
        table_t = arrival_ns(rx, stop - 1)
        host_t = np.array([s.host_ns for s in sent], np.int64)
        clock = HOST_CLOCK
        speed = _speed(decoded, rx, capture)
    else:
        table_t = hub_clock_at(decoded, start) * 1000
        host_t = hub_clock_at(decoded, np.maximum(sent_at - 1, 0)) * 1000
        clock = HUB_CLOCK
    # In time order; a host frame sent at the instant a chunk arrived comes after it.
    host = np.concatenate([np.zeros(len(start), bool), np.ones(len(sent), bool)])
    time_ns = np.concatenate([table_t, host_t]).astype(np.int64)
    place = np.concatenate([stop, sent_at])
    order = np.lexsort((host, place, time_ns)) if clock == HOST_CLOCK else np.lexsort((host, place))
    if speed != 1.0 and len(time_ns):  # the table's time, not the host's
        time_ns = time_ns.min() + ((time_ns - time_ns.min()) * speed).astype(np.int64)
    return Recording(
        buf=buf,
        capture_bytes=len(capture),
        start=np.concatenate([start, host_start])[order],
        stop=np.concatenate([stop, host_start + lengths])[order],
        offset=np.concatenate([start, sent_at])[order],
        host=host[order],
        time_ns=time_ns[order],
        clock=clock,
        seq_mark=np.concatenate([mark, np.zeros(len(sent), np.uint8)])[order],
        seq_gap=np.concatenate([gap, np.zeros(len(sent), np.uint16)])[order],
        kind=np.concatenate([kind, np.zeros(len(sent), np.uint8)])[order],
        speed=speed,
    )


def frame_arrival_us(decoded: Decoded, capture: np.ndarray, rx: np.ndarray) -> np.ndarray:
    """Each decoded frame's host receive time (µs): the chunk its delimiter came in."""
    starts, stops = wire_frames(capture)
    at = np.clip(np.searchsorted(starts, decoded.frames["offset"]), 0, max(len(stops) - 1, 0))
    return arrival_ns(rx, stops[at] - 1) / 1e3 if len(stops) else np.zeros(0)


def _speed(decoded: Decoded, rx: np.ndarray, capture: np.ndarray) -> float:
    boot = np.searchsorted(boot_starts(decoded), decoded.frames["offset"], side="right")
    return recording_speed(decoded.frames, boot, frame_arrival_us(decoded, capture, rx))


class SentInterleaver:
    """The host's frames of a part, handed out between the table's frames in time order.

    For a reader that streams the table's frames (``decode``): ask
    :meth:`due` with each table frame's capture offset, in order, and get
    the host frames sent before it.  With a ``.rxt`` the order is by host
    time (a table frame's time is that of the chunk its first byte came
    in); without one, by where the received stream stood when each was sent.
    """

    def __init__(self, part: str | Path) -> None:
        self._part = Path(part)
        self.pending: list[SentFrame] = []
        self._taken = 0  # frames handed out so far
        self._rx: np.ndarray | None = None
        self.refresh()

    def refresh(self) -> None:
        """Read what was appended to the side files since (a recording still being written)."""
        sent = read_sent(self._part)
        self.pending += sent[self._taken + len(self.pending) :]
        rx_path = self._part.with_suffix(".rxt")
        self._rx = read_rx_times(rx_path) if rx_path.exists() else None

    def __bool__(self) -> bool:
        return bool(self.pending)

    def due(self, offset: int) -> list[SentFrame]:
        """The host frames sent before the table frame that starts at ``offset``."""
        if self._rx is not None and len(self._rx):
            arrived = int(arrival_ns(self._rx, np.array([offset]))[0])
            n = next((i for i, s in enumerate(self.pending) if s.host_ns >= arrived), None)
        else:
            n = next((i for i, s in enumerate(self.pending) if s.rx_offset > offset), None)
        n = len(self.pending) if n is None else n
        out, self.pending = self.pending[:n], self.pending[n:]
        self._taken += n
        return out

    def rest(self) -> list[SentFrame]:
        out, self.pending = self.pending, []
        self._taken += len(out)
        return out
