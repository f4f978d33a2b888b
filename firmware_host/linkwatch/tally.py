"""The link's running counters: fed by the reader thread, read by the screen.

The reader (the transport's feeder or the capture player) calls
:meth:`LinkTally.feed` with each chunk; the screen calls
:meth:`LinkTally.snapshot` a few times a second.  Both take one lock, and
the reader holds it only for one decoder feed, the screen only while it
copies plain numbers out, so drawing never holds reading up for more than
a snapshot.

Rates are measured on the senders' own clocks (the ``t_us`` of the frames
of one node and type over the last :data:`RATE_WINDOW_US`), so they are the
sensors' true rates whatever the play speed or the host's scheduling: a
tracker at 120 Hz reads 120 Hz from a capture played 20 times faster.  Ages,
"changed recently" and bytes per second are on the *source clock* the
reader passes in: the host's monotonic clock live, the recorded time when a
capture is played.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from firmware_host.linktools.drift import slope_uncertainty
from firmware_host.linktools.names import VALUE_NAMES
from firmware_host.linktools.recording import joined_bytes
from firmware_host.timing import clock_model as cm
from firmware_host.timing.rows import to_rows
from firmware_host.timing.timeline import CLOCK_TYPES, Timeline
from protocol import kernels as k
from protocol.catalogue import FLAG_RETRANSMISSION
from protocol.decoder import STATUS_NAMES, StreamDecoder, record_fields

RATE_WINDOW_US = 5_000_000  # rates over the last 5 s of the sender's clock
STEADY_FRAMES = 3  # ... when it holds this many frames; else over the row's last
SPARSE_FRAMES = 8  # ... this many
RING = 4096  # frame stamps kept per (node, type): the window at 240 Hz, twice over
RESET_US = 1_000_000  # a stamp this far behind the last one: the node's clock restarted
BYTES_WINDOW_NS = 2_000_000_000  # the link's bytes per second over the last 2 s
RAW_TAIL = 2048  # wire bytes kept for the hex pane
NOTES = 3  # the timing core's newest notices (clock steps, inferred boots) on the screen
#: the mapping the ICD asks for is "well under 100 µs" (ICD §7): above it, flag it
MAX_UNCERTAINTY_US = 100.0
_HALF = 1 << 31
_TIMING_TYPES = frozenset(("HELLO", *CLOCK_TYPES))
_LAMPS = VALUE_NAMES["HEARTBEAT", "indicator"]
_DELIVERED = (k.OK, k.DUPLICATE)
_NO_BYTES = ((0, 0), (0, 0))


def stamp_steps(steps: Any) -> Any:
    """Differences of u32 stamps as the nearest signed step (a wrap is a small step forward;
    the rule of :mod:`firmware_host.timing.unwrap`, here on numpy arrays or plain ints)."""
    return (steps + _HALF) % (2 * _HALF) - _HALF


class _Series:
    """One (node, type) row: its stamps (unwrapped, a ring), count and last values."""

    __slots__ = ("changed", "changed_ns", "count", "fields", "last_ns", "last_t", "n", "stamps")

    def __init__(self) -> None:
        self.stamps = np.zeros(RING, np.int64)
        self.n = 0  # stamps since the ring was last cleared
        self.last_t = 0
        self.count = 0
        self.fields: dict[str, Any] = {}
        self.changed: frozenset[str] = frozenset()
        self.changed_ns = 0
        self.last_ns = 0

    def add(self, records: np.ndarray, now_ns: int) -> None:
        """New frames (stream order): unwrap their u32 stamps against the last one."""
        t_raw = records["t_us"].astype(np.int64)
        start = self.last_t if self.n else int(t_raw[0])
        steps = stamp_steps(np.diff(t_raw, prepend=start))
        t = start + np.cumsum(steps)
        back = np.flatnonzero(steps < -RESET_US)
        if len(back):  # a reboot: the old stamps say nothing about the new clock
            t, self.n = t[back[-1] :], 0
        t = t[-RING:]
        self.stamps[(self.n + np.arange(len(t))) % RING] = t
        self.n += len(t)
        self.last_t = int(t[-1])
        self.count += len(t_raw)
        self.last_ns = now_ns
        fields = record_fields(records[-1])
        changed = frozenset(n for n, v in fields.items() if self.fields.get(n) != v)
        if changed and self.fields:
            self.changed, self.changed_ns = changed, now_ns
        self.fields = fields

    def rate_hz(self, now_ns: int) -> float | None:
        """Frames per second of the sender's clock; None before its second frame.

        Over the last :data:`RATE_WINDOW_US` when that holds :data:`STEADY_FRAMES` or more;
        a sparse row (a key press a minute) over its last :data:`SPARSE_FRAMES` instead, so
        it reads 0.02, not 0.  0 once it fell silent: nothing for the window and for three
        of its own intervals.
        """
        if self.n < 2:
            return None
        stamps = self.stamps[: min(self.n, RING)]
        recent = stamps[(stamps > self.last_t - RATE_WINDOW_US) & (stamps <= self.last_t)]
        if len(recent) >= STEADY_FRAMES:
            silent_ns = RATE_WINDOW_US * 1000
            span, frames = self.last_t - int(recent.min()), len(recent)
        else:
            k = min(self.n, SPARSE_FRAMES, RING)
            newest = self.stamps[(self.n - k + np.arange(k)) % RING]
            span, frames = int(newest[-1] - newest[0]), k
            silent_ns = max(RATE_WINDOW_US * 1000, 3 * span * 1000 // max(k - 1, 1))
        if now_ns - self.last_ns > silent_ns or span <= 0:
            return 0.0
        return (frames - 1) * 1e6 / span


@dataclass(frozen=True)
class Row:
    """One (node, message type) line of the view."""

    node: int
    name: str
    count: int
    rate_hz: float | None  # None before the row's second frame
    age_s: float
    fields: dict[str, Any]
    changed: frozenset[str]  # the fields the newest change touched
    changed_age_s: float | None  # None: never changed since first seen


@dataclass(frozen=True)
class NodeHealth:
    """One node's link and clock: counters from the decoder, the clock from the timing core."""

    node: int
    lost: int
    retransmissions: int
    offset_us: float | None = None  # hub minus node clock at the newest beacon
    drift_ppm: float | None = None
    uncertainty_us: float | None = None
    drift_uncertainty_ppm: float | None = None  # how far drift_ppm may be off

    @property
    def drift_flagged(self) -> bool:
        """Outside what the two crystals may differ by (ICD §7: node and hub datasheets)."""
        return self.drift_ppm is not None and abs(self.drift_ppm) > cm.REL_PPM[self.node]

    @property
    def uncertainty_flagged(self) -> bool:
        return self.uncertainty_us is not None and self.uncertainty_us > MAX_UNCERTAINTY_US


@dataclass(frozen=True)
class Snapshot:
    """Everything the screen shows, copied out under the lock."""

    now_ns: int
    rows: list[Row]
    nodes: list[NodeHealth]
    bad: dict[str, int]
    frames: int
    unknown: int
    duplicates: int
    reboots: int
    bytes_total: int
    bytes_per_s: float
    lamp: str | None
    raw_tail: bytes
    link: str
    notes: list[str] = field(default_factory=list)
    joined_bytes: int = 0  # the end of a frame the reader joined in the middle of (not bad)


class LinkTally:
    """Decoder, per-row series and clock models behind one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decoder = StreamDecoder()
        self._timeline = Timeline()
        self._series: dict[tuple[int, str], _Series] = {}
        self._retx = np.zeros(256, np.int64)
        self._bytes = 0
        self._byte_log: deque[tuple[int, int]] = deque()  # (source ns, bytes so far)
        self._raw = b""
        self._lamp: int | None = None
        self._link = ""
        self._now_ns = 0
        self._joined: tuple[int, str] | None = None  # (bytes, reason) of a frame joined mid-way
        self._first_byte = b""

    def set_link(self, state: str) -> None:
        """The transport's state in words (open, lost: the error ...), shown in the header."""
        with self._lock:
            self._link = state

    def feed(self, data: bytes, now_ns: int) -> int:
        """Count one chunk read at ``now_ns`` (source clock); the newest hub stamp in it, or -1.

        The capture player paces itself on the returned hub stamp.
        """
        with self._lock:
            decoded = self._decoder.feed(data)
            self._first_byte = self._first_byte or data[:1]
            if self._joined is None and len(decoded.frames):
                first = decoded.frames[0]
                n = joined_bytes(first, self._first_byte[0])
                self._joined = (n, STATUS_NAMES[int(first["status"])] if n else "")
            self._now_ns = now_ns
            self._bytes += len(data)
            self._byte_log.append((now_ns, self._bytes))
            while len(self._byte_log) > 2 and self._byte_log[1][0] < now_ns - BYTES_WINDOW_NS:
                self._byte_log.popleft()
            self._raw = (self._raw + data)[-RAW_TAIL:]
            for name, table in decoded.tables.items():
                nodes = table["node"]
                heard = np.unique(nodes)
                for node in heard:
                    part = table if len(heard) == 1 else table[nodes == node]
                    series = self._series.setdefault((int(node), name), _Series())
                    series.add(part, now_ns)
            frames = decoded.frames
            delivered = np.isin(frames["status"], _DELIVERED)
            retx = delivered & (frames["flags"] & FLAG_RETRANSMISSION != 0)
            if retx.any():
                self._retx += np.bincount(frames["node"][retx], minlength=256)
            beat = decoded.tables.get("HEARTBEAT")
            if beat is not None:
                self._lamp = int(beat["indicator"][-1])
            rows, tracks = to_rows(decoded.tables, _TIMING_TYPES)
            if len(rows):
                self._timeline.feed_rows(rows, tracks)
                del self._timeline.notices[:-NOTES]
            hub = frames["t_us"][(frames["node"] == 0) & delivered]
            return int(hub[-1]) if len(hub) else -1

    def snapshot(self, now_ns: int | None = None) -> Snapshot:
        """The view's numbers at ``now_ns`` (default: the newest chunk's time)."""
        with self._lock:
            now = self._now_ns if now_ns is None else now_ns
            stats = self._decoder.stats()
            joined, reason = self._joined or (0, "")
            if joined:  # the end of a frame begun before the reader came: not a bad frame
                stats.bad[reason] -= 1
                stats.bad = {r: n for r, n in stats.bad.items() if n}
            rows = [self._row(key, s, now) for key, s in self._series.items()]
            synced = np.flatnonzero(self._timeline.clocks.fit_i[:, cm.FI_N]).tolist()
            heard = sorted({node for node, _ in self._series} | set(stats.lost) | set(synced))
            nodes = [self._health(node, stats.lost.get(node, 0)) for node in heard]
            (t0, b0), (t1, b1) = (
                (self._byte_log[0], self._byte_log[-1]) if self._byte_log else _NO_BYTES
            )
            return Snapshot(
                now_ns=now,
                rows=rows,
                nodes=nodes,
                bad=stats.bad,
                frames=stats.frames,
                unknown=stats.unknown,
                duplicates=stats.duplicates,
                reboots=stats.reboots,
                bytes_total=self._bytes,
                bytes_per_s=(b1 - b0) * 1e9 / (t1 - t0) if t1 > t0 else 0.0,
                lamp=None if self._lamp is None else _LAMPS.get(self._lamp, str(self._lamp)),
                raw_tail=self._raw,
                link=self._link,
                notes=list(self._timeline.notices),
                joined_bytes=joined,
            )

    @staticmethod
    def _row(key: tuple[int, str], s: _Series, now: int) -> Row:
        return Row(
            node=key[0],
            name=key[1],
            count=s.count,
            rate_hz=s.rate_hz(now),
            age_s=(now - s.last_ns) / 1e9,
            fields=s.fields,
            changed=s.changed,
            changed_age_s=(now - s.changed_ns) / 1e9 if s.changed else None,
        )

    def _health(self, node: int, lost: int) -> NodeHealth:
        clocks = self._timeline.clocks
        counters = (node, lost, int(self._retx[node]))
        if node == 0 or node >= cm.N_NODES or clocks.fit_i[node, cm.FI_N] == 0:
            return NodeHealth(*counters)
        n = clocks.fit_i[node, cm.FI_NREF]
        hub, unc = cm.to_hub(clocks, node, n)
        slope = float(clocks.fit_f[node, cm.FF_B])
        return NodeHealth(
            *counters,
            offset_us=float(hub - n),
            # the fit's slope is d(hub - node)/d(node): a node running fast has it negative
            drift_ppm=-slope * 1e6,
            uncertainty_us=float(unc),
            drift_uncertainty_ppm=self._drift_uncertainty(node, slope),
        )

    def _drift_uncertainty(self, node: int, slope: float) -> float | None:
        """How far the fit's slope may be off (ppm): its samples' halves against it
        (:func:`~firmware_host.linktools.drift.slope_uncertainty`), at least the
        datasheet's delay spread over them; None before two samples."""
        clocks = self._timeline.clocks
        length, start = int(clocks.ring_len[node]), int(clocks.ring_start[node])
        if length < 2:
            return None
        ring = (start + np.arange(length)) % clocks.ring_n.shape[1]
        n, h = clocks.ring_n[node, ring], clocks.ring_h[node, ring]
        span = float(n[-1] - n[0])
        floor = cm.slope_error(node, float(length), span) if span > 0 else 0.0
        return (
            slope_uncertainty(n.astype(np.float64), (h - n).astype(np.float64), slope, floor) * 1e6
        )
