"""``stats`` in bounded memory: the capture read twice in chunks, figures kept per node.

:func:`.linkstats.link_stats` computes on per-frame arrays of the whole capture (about
7 bytes of RSS per byte of capture).  Here the capture is read in
``CAPTURE_CHUNK`` reads through the stream decoder, twice:

1. the hub's clock at every frame (:class:`HubClock`, :func:`.recording.hub_clock_at`
   streamed) for its lowest value: every time in the report is seconds after it;
2. the same clock again, each chunk's frames timed with it and folded into
   :class:`Tally`: per node and type a count and the longest gap so far, per node
   the seq gaps (a late resend fills the nearest one before it that covers its seq)
   and retransmissions, per boot the hub's own counts, per node and boot the open
   drift windows (a window's CLOCK_SYNC samples are kept until the hub's clock
   leaves the window after it: a minute or two of samples).

What it keeps grows with what the report lists (the first ``LISTED`` offsets of the bad
frames of a reason, of a node's gaps and its retransmissions, with the latest gaps a
resend may fill; every drift window's figures), never with the frames; the windows in
arrays (:class:`Column`), 8 bytes a number.  The report is the one ``link_stats``
gives, byte for byte: the same float operations on the same values, chunk by chunk
(``tests/linktools/test_stats_stream.py``).  A recording with host receive times
(``.rxt``) is read by :mod:`.hoststream`, with the same :class:`Tally` on its times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.catalogue import BY_NAME, BY_TYPE, FLAG_RETRANSMISSION
from protocol.decoder import Decoded, StreamDecoder
from protocol.kernels import BAD_COBS, DUPLICATE, OK, UNKNOWN

from ..timing.clock_model import MAX_PPM
from ..timing.unwrap import unwrap, unwrap_chained
from .capped import WINDOWS_LISTED, Listing, SeqGaps, losses, take_seq_marks
from .linkstats import (
    HUB_COUNTS,
    WINDOW_S,
    Findings,
    Timing,
    WindowFit,
    bad_frames,
    capture_edges,
    hub_count_problems,
    reboot_problems,
    report,
    stall_problem,
    timing_notes,
    trust_notes,
    window_fit,
    window_rows,
)
from .recording import joined_bytes

WINDOW_US = int(WINDOW_S * 1e6)


class HubClock:
    """:func:`.recording.hub_clock_at` and the boot of every frame, chunk by chunk: each
    boot's hub stamps unwrapped on from the last, carried on from where the boot before
    ended, and a frame's hub clock the latest hub frame's at or before it."""

    def __init__(self) -> None:
        self.boots = 0  # boots started after the first, so far
        self.last_id: int | None = None  # boot_id of the latest HELLO
        self.reboots = Listing()  # where each boot after the first starts, its boot_id
        # the latest hub frame's boot (-1: none yet), unwrapped stamp and clock (µs)
        self.hub = np.array([-1, 0, 0], np.int64)
        self.now = 0  # the latest hub frame's clock (0 before the first)

    def feed(self, decoded: Decoded) -> tuple[np.ndarray, np.ndarray]:
        """(boot, hub clock in µs) of each frame of a feed, in order."""
        frames = decoded.frames
        offsets = frames["offset"]
        starts = self._starts(decoded)
        boot = self.boots + np.searchsorted(starts, offsets, side="right")
        self.boots += len(starts)
        hub = np.flatnonzero(np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0))
        # a new boot's clock goes on from where the last one ended
        t = unwrap_chained(frames["t_us"][hub].astype(np.int64), boot[hub], self.hub, 32)
        at = np.searchsorted(offsets[hub], offsets, side="right") - 1
        clock = np.full(len(frames), self.now, np.int64)  # before this feed's first hub frame
        clock[at >= 0] = t[at[at >= 0]]
        self.now = int(self.hub[2])
        return boot, clock

    def _starts(self, decoded: Decoded) -> np.ndarray:
        """This feed's boot starts: HELLOs whose boot_id is not the one before."""
        hello = decoded.tables.get("HELLO")
        if hello is None or not len(hello):
            return np.zeros(0, np.int64)
        ids = hello["boot_id"].astype(np.int64)
        before = np.concatenate(([ids[0] if self.last_id is None else self.last_id], ids[:-1]))
        new = ids != before
        self.last_id = int(ids[-1])
        starts = hello["offset"][new].astype(np.int64)
        self.reboots.extend(starts, ids[new])
        return starts


class Column:
    """Numbers a report lists, appended as they are found, in one array that doubles as it
    fills: as Python lists every number is an object and a pointer (32 bytes; a drift
    window's row of four, 184), and a gigabyte's report lists some hundred thousand."""

    def __init__(self, dtype: type, width: int = 0) -> None:
        self._data = np.empty((16, width) if width else 16, dtype)
        self._n = 0

    def extend(self, rows: Any) -> None:
        """Rows (numbers, or rows of ``width`` numbers) after those there are."""
        rows = np.asarray(rows, self._data.dtype)
        end = self._n + len(rows)
        if end > len(self._data):
            grown = np.empty((max(end, 2 * len(self._data)), *self._data.shape[1:]),
                             self._data.dtype)  # fmt: skip
            grown[: self._n] = self.values
            self._data = grown
        self._data[self._n : end] = rows
        self._n = end

    def __len__(self) -> int:
        return self._n

    @property
    def values(self) -> np.ndarray:
        """The rows so far (a view: written through)."""
        return self._data[: self._n]


class HubOnly:
    """The hub's rate against the host where there is no host clock: none (the drift
    windows are against the hub; :class:`.hoststream.HostRates` is the other kind)."""

    width = 4  # numbers in a row

    def row(self, fit: WindowFit, boot: int) -> list[float]:
        """A closed window's numbers in the report's list (made its row by :meth:`final`)."""
        return fit.figures()

    def final(self, rows: np.ndarray) -> np.ndarray:
        return window_rows(rows, np.zeros((len(rows), 2)))


class WindowRows:
    """A node's drift-window rows: the first :data:`.capped.WINDOWS_LISTED` kept, all counted."""

    def __init__(self, width: int) -> None:
        self.rows = Column(np.float64, width)
        self.count = 0

    def add(self, row: list[float]) -> None:
        self.count += 1
        if len(self.rows) < WINDOWS_LISTED:
            self.rows.extend([row])


class _Windows:
    """The drift windows of one node in one boot: samples kept until the window after
    theirs is passed, then their figure (:func:`.linkstats.window_figure`)."""

    def __init__(self, node: int, boot: int, h0: int, n0: int, rates: HubOnly) -> None:
        self.node, self.boot, self.h0, self.n_prev = node, boot, h0, n0
        self.rates = rates
        self.open: dict[int, list[list[float]]] = {}  # window -> [h, n, when] lists

    def add(self, h: np.ndarray, n_raw: np.ndarray, when: np.ndarray, out: WindowRows) -> None:
        n = unwrap(np.concatenate(([self.n_prev], n_raw)), 32)[1:]
        self.n_prev = int(n[-1])
        which = np.where(h < self.h0, 0, (h - self.h0) // WINDOW_US + 1)
        for w in np.unique(which).tolist():
            sel = which == w
            kept = self.open.setdefault(w, [[], [], []])
            for column, values in zip(kept, (h[sel], n[sel], when[sel])):
                column.append(values)
        self.close(int(which[-1]) - 1, out)

    def close(self, below: float, out: WindowRows) -> None:
        """The windows before ``below`` have all their samples: their figures to ``out``."""
        for w in sorted(w for w in self.open if w < below):
            h, n, when = (np.concatenate(c) for c in self.open.pop(w))
            fit = window_fit(self.node, h, n, when)
            if fit is not None:
                out.add(self.rates.row(fit, self.boot))


@dataclass
class HostFigures:
    """What host receive times add to a report (:mod:`.hoststream`); none without them."""

    timing: Timing
    host_ppm: Listing = field(default_factory=Listing)  # boot, rate, ± (the first LISTED)
    latency: dict[int, dict[str, float]] = field(default_factory=dict)
    dropped_at_join: int = 0


class BootMaxima:
    """The hub's counts over the capture: each boot's maximum (the hub counts from 0 at a
    boot), summed.  The boots come in order, so the ended ones are kept as their sum and
    only the current one's maxima apart: a dict per boot grew with every forged HELLO."""

    def __init__(self) -> None:
        self.boot = -1  # the current boot (-1: no HEARTBEAT yet)
        self.ended = {name: 0 for name, _ in HUB_COUNTS}  # the sum over the boots before it
        self.current = dict(self.ended)  # its maxima so far

    def add(self, boot: int, tops: dict[str, int]) -> None:
        """A boot's maxima in one feed; a later boot than the current ends it."""
        if boot != self.boot:
            self.ended = self.totals()
            self.current = {name: 0 for name in self.ended}
            self.boot = boot
        self.current = {name: max(top, tops[name]) for name, top in self.current.items()}

    def totals(self) -> dict[str, int]:
        return {name: self.ended[name] + top for name, top in self.current.items()}

    def __bool__(self) -> bool:
        """Whether a HEARTBEAT has come."""
        return self.boot >= 0


class Tally:
    """Everything ``stats`` reports, folded in a feed at a time, each frame's time given."""

    def __init__(self, rates: HubOnly, joined_until_s: float = -np.inf) -> None:
        self.rates = rates
        self.joined_until_s = joined_until_s  # gaps up to then were lost at a join
        self.frames = 0
        self.lo, self.hi = np.inf, -np.inf  # the good frames' times
        self.bad: dict[int, Listing] = {}  # status -> offsets, times
        self.types: dict[int, list[Any]] = {}  # node * 256 + type -> see _types
        self.gaps: dict[int, SeqGaps] = {}
        self.retx: dict[int, Listing] = {}  # node -> offsets
        self.beats = BootMaxima()
        self.first_count: dict[str, int] = {}
        self.sync_boot, self.sync_prev = -1, 0  # the boot of the latest CLOCK_SYNC, its stamp
        self.windows: dict[int, _Windows] = {}  # peer -> its windows in that boot
        self.clocks: dict[int, WindowRows] = {}  # per node, rates.row of each window
        self.first: tuple[np.void, bool] | None = None  # the first frame, joined mid-frame?

    def feed(self, decoded: Decoded, boot: np.ndarray, t_s: np.ndarray, first: int) -> None:
        """A feed's frames, each with its boot and its time (s, the report's)."""
        frames = decoded.frames
        if not len(frames):
            return
        status = frames["status"]
        is_bad = status >= BAD_COBS
        if self.first is None:
            self.first = (frames[0].copy(), bool(joined_bytes(frames[0], first)))
            is_bad[0] &= not self.first[1]
        self.frames += int(np.count_nonzero(status == OK))
        good = np.isin(status, (OK, DUPLICATE, UNKNOWN))
        if good.any():
            self.lo, self.hi = min(self.lo, t_s[good].min()), max(self.hi, t_s[good].max())
        for s in np.unique(status[is_bad]).tolist():
            mine = is_bad & (status == s)
            self.bad.setdefault(s, Listing()).extend(frames["offset"][mine], t_s[mine])
        self._types(frames, t_s, boot)
        self._seq(frames[good], t_s[good])
        if (beats := decoded.tables.get("HEARTBEAT")) is not None:
            self._beats(beats, boot[np.searchsorted(frames["offset"], beats["offset"])])
        if (sync := decoded.tables.get("CLOCK_SYNC")) is not None:
            i = np.searchsorted(frames["offset"], sync["offset"])
            self._syncs(sync, boot[i], t_s[i])

    def _types(self, frames: np.ndarray, t_s: np.ndarray, boot: np.ndarray) -> None:
        """Per node and type: [frames, last time, last boot, longest gap, offset and time
        of the frame after it]; a gap across a reboot counts 0 (the hub clock restarts)."""
        good = np.isin(frames["status"], (OK, UNKNOWN))
        key = frames["node"].astype(np.int64) * 256 + frames["msg_type"]
        for k in np.unique(key[good]).tolist():
            sel = good & (key == k)
            t, b, offsets = t_s[sel], boot[sel], frames["offset"][sel]
            entry = self.types.setdefault(k, [0, None, None, None, None, None])
            if entry[1] is not None:
                t, b = np.concatenate(([entry[1]], t)), np.concatenate(([entry[2]], b))
                offsets = np.concatenate(([0], offsets))
            gaps = np.diff(t)
            gaps[b[1:] != b[:-1]] = 0
            if len(gaps):
                i = int(np.argmax(gaps))
                if entry[3] is None or gaps[i] > entry[3]:
                    entry[3:] = [float(gaps[i]), int(offsets[i + 1]), float(t[i + 1])]
            entry[0] += int(sel.sum())
            entry[1], entry[2] = t[-1], b[-1]

    def _seq(self, good: np.ndarray, t_s: np.ndarray) -> None:
        """Seq gaps per node (:func:`.capped.take_seq_marks`) and retransmissions."""
        take_seq_marks(self.gaps, good, t_s, self.joined_until_s)
        retx = good[(good["flags"] & FLAG_RETRANSMISSION) != 0]
        for node in np.unique(retx["node"]).tolist():
            offsets = retx["offset"][retx["node"] == node]
            self.retx.setdefault(node, Listing()).extend(offsets)

    def _beats(self, beats: np.ndarray, boot: np.ndarray) -> None:
        boots, first = np.unique(boot, return_index=True)  # boot ascends with the offset
        tops = {name: np.maximum.reduceat(beats[name], first).tolist() for name, _ in HUB_COUNTS}
        for i, b in enumerate(boots.tolist()):
            self.beats.add(b, {name: top[i] for name, top in tops.items()})
        for name, _ in HUB_COUNTS:
            nonzero = np.flatnonzero(beats[name])
            if len(nonzero) and name not in self.first_count:
                self.first_count[name] = int(beats["offset"][nonzero[0]])

    def _syncs(self, sync: np.ndarray, boot: np.ndarray, when: np.ndarray) -> None:
        """CLOCK_SYNC samples into their node's windows of their boot; a boot's windows are
        all closed when the next boot's samples begin."""
        boots, starts = np.unique(boot, return_index=True)  # boot ascends with the offset
        ends = [*starts[1:].tolist(), len(boot)]
        for b, lo, hi in zip(boots.tolist(), starts.tolist(), ends, strict=True):
            mine = slice(lo, hi)  # a mask per boot made the loop quadratic in forged boots
            raw = sync["t_us"][mine].astype(np.int64)
            if b != self.sync_boot:
                self._close_all()
                h = unwrap(raw, 32)
                self.sync_boot = b
            else:
                h = unwrap(np.concatenate(([self.sync_prev], raw)), 32)[1:]
            self.sync_prev = int(h[-1])
            peers, peer_t, at = sync["peer"][mine], sync["peer_t_us"][mine], when[mine]
            for node in np.unique(peers).tolist():
                if not 0 < node < len(MAX_PPM):
                    continue  # no such clock (ICD §3): a stray peer number says nothing
                sel = peers == node
                if node not in self.windows:
                    first_h = int(h[sel][0])
                    self.windows[node] = _Windows(node, b, first_h, int(peer_t[sel][0]), self.rates)
                self.windows[node].add(
                    h[sel], peer_t[sel].astype(np.int64), at[sel], self._clock(node)
                )

    def _clock(self, node: int) -> WindowRows:
        return self.clocks.setdefault(node, WindowRows(self.rates.width))

    def _close_all(self) -> None:
        for node, windows in self.windows.items():
            windows.close(np.inf, self._clock(node))
        self.windows = {}

    def findings(self, stats: Any, clock: HubClock, size: int, tail: int, continues: bool,
                 host: HostFigures | None = None) -> Findings:  # fmt: skip
        """The report's makings, once every feed is in (``host``: what host times add)."""
        self._close_all()
        host = host or HostFigures(Timing(np.zeros(0), False))
        timing = host.timing
        joined = int(self.first[0]["length"]) if self.first and self.first[1] else 0
        problems, notes = capture_edges(size, tail, joined, continues)
        notes += timing_notes(timing)
        trust = trust_notes(stats, notes)
        bad = bad_frames(self.bad, problems)
        problems += reboot_problems(clock.reboots)
        per_type = self._per_type()
        beats = per_type.get(0, {}).get("HEARTBEAT")
        totals = self.beats.totals()
        totals["tx_dropped"] -= host.dropped_at_join
        return Findings(
            timing=timing,
            span=float(self.hi - self.lo) if self.hi >= self.lo else 0.0,
            frames=self.frames,
            host_ppm=host.host_ppm,
            bad=bad,
            reboots=clock.reboots,
            per_type=per_type,
            clocks={
                node: self.rates.final(c.rows.values) for node, c in self.clocks.items() if c.count
            },
            windows={node: c.count for node, c in self.clocks.items() if c.count},
            lost=losses(self.gaps),
            retx=self.retx,
            latency=host.latency,
            problems=problems,
            notes=notes,
            counted=hub_count_problems(totals, self.first_count) if self.beats else [],
            dropped_at_join=host.dropped_at_join,
            stall=stall_problem(beats, self._gap_end(0, "HEARTBEAT"), timing) if beats else None,
            trust=trust,
        )

    def _per_type(self) -> dict[int, dict[str, Any]]:
        span = float(self.hi - self.lo) if self.hi >= self.lo else 0.0
        out: dict[int, dict[str, Any]] = {}
        for k in sorted(self.types):
            node, msg_type = divmod(k, 256)
            n, _, _, gap, at, _ = self.types[k]
            spec = BY_TYPE.get(msg_type)
            out.setdefault(node, {})[spec.name if spec else f"0x{msg_type:02X}"] = {
                "frames": n,
                "rate_hz": float(n / span) if span > 0 else 0.0,
                "max_gap_s": gap if gap is not None else 0.0,
                "max_gap_at": at,
            }
        return out

    def _gap_end(self, node: int, name: str) -> float:
        key = node * 256 + BY_NAME[name].msg_type
        end = self.types[key][5]
        return end if end is not None else 0.0


def stream_stats(read: Callable[[], Iterable[bytes]], *, continues: bool = False) -> dict[str, Any]:
    """``link_stats`` of the capture ``read()`` yields in chunks (called twice), on the hub's
    clock, in memory that does not grow with the capture."""
    low = 0
    clock, decoder = HubClock(), StreamDecoder()
    seen = False
    for chunk in read():
        _, hub_us = clock.feed(decoder.feed(chunk))
        if len(hub_us):
            low = int(hub_us.min()) if not seen else min(low, int(hub_us.min()))
            seen = True
    clock, decoder = HubClock(), StreamDecoder()
    tally = Tally(HubOnly())
    t_min = np.float64(low) / 1e6
    edges = Edges()
    for chunk in read():
        edges.feed(chunk)
        decoded = decoder.feed(chunk)
        boot, hub_us = clock.feed(decoded)
        tally.feed(decoded, boot, hub_us.astype(np.float64) / 1e6 - t_min, edges.first)
    return report(tally.findings(decoder.stats(), clock, edges.size, edges.tail, continues))


class Edges:
    """A capture's first byte, its size and the bytes after its last delimiter, read by read
    (:func:`.linkstats.capture_edges`)."""

    def __init__(self) -> None:
        self.first, self.size, self.tail = -1, 0, 0

    def feed(self, chunk: bytes) -> None:
        if self.first < 0 and chunk:
            self.first = chunk[0]
        end = chunk.rfind(b"\x00")
        self.tail = len(chunk) - end - 1 if end >= 0 else self.tail + len(chunk)
        self.size += len(chunk)
