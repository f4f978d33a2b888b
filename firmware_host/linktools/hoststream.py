"""``stats`` of a recording with host receive times (its ``.rxt``), in bounded memory.

:func:`.linkstats.link_stats` times every frame by its arrival (:class:`.linkstats.Timing`)
from per-frame arrays of the whole capture.  Its figures from host times are fits and
percentiles over all of a boot's or a node's frames; here each is built as the frames
come, the capture and the ``.rxt`` read together a chunk at a time (:class:`_Pass`),
in passes that each learn what the next one needs:

1. **scan**: per boot, the upper envelope of the hub's stamps over their arrival
   (:class:`.envelope.Envelope`: the played speed is the longest boot's slope); the
   frames' counts, and each boot's hub frames (:class:`BootCounts`); that the arrival
   times never go back;
2. **backlog** (only as far as it must read): a join's backlog ends at the first hub
   frame whose lag is within ``BACKLOG_US`` of the least lag in the next minute of hub
   time (:func:`.hosttime.backlog_end`; the minute kept, nothing more); from it the
   time every frame is given, and the report's zero;
3. **tally**: what ``stats`` reports on any clock (:class:`.statstream.Tally`), each frame
   at its time; the hub's rate against the host over each boot (three envelopes: all
   its frames and each half, :func:`.drift.slope_uncertainty`) and over each drift
   window (the last minutes of hub frames kept: :class:`HostRates`); each node's
   latency envelope per boot (its frames' stamps may come a little out of order: a
   minute of them, or 4096, wait to be put in order, :class:`.envelope.Reorder`);
4. **latency**, twice or more: each frame's latency counted in µs buckets, then the
   values at the wanted ranks picked out (:mod:`.ranks`: a bucket too crowded to keep is
   narrowed in a pass of its own, at most four).

What is kept grows with what the report lists, never with the frames or the boots: of a
boot that has ended only its rate against the host (listed for the first
:data:`.capped.LISTED` boots, all counted), and what a later pass needs of it as its
frames come again (its hub frames' count, each node's latency envelope) written in boot
order to a :class:`.spill.Spill` (a block in memory, the rest in a temporary file).

Every figure is the one ``link_stats`` makes, by the same float operations in the same
order (``tests/linktools/test_host_stream.py``, ``test_host_boots.py``: JSON text, byte
for byte).  Where this cannot be so, :class:`NotStreamable` says why and ``stats`` takes
the whole-capture way (``commands/stats.py``): ``.rxt`` offsets that go back, the first
boot's hub stamps out of order across a minute's end of the join's search, samples
further out of order than ``envelope.REORDER_US`` among more than ``REORDER_KEEP``, a
drift window reaching back past the hub frames kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from protocol.decoder import Decoded, StreamDecoder
from protocol.kernels import DUPLICATE, OK

from ..link.recorder import RX_TIMES_DTYPE
from ..timing.unwrap import unwrap
from .capped import Listing
from .drift import MIN_HALF, envelope_slope, halves_bound
from .envelope import Envelope, Fits, NotStreamable, Reorder
from .hosttime import AHEAD_US, BACKLOG_US, MIN_FRAMES, played_speed
from .linkstats import (
    JOIN_SETTLE_S,
    MIN_SYNCS,
    UNKNOWN_RATE,
    WINDOW_S,
    Timing,
    WindowFit,
    groups,
    hub_rate_over,
    report,
    window_rows,
)
from .ranks import Ranks
from .spill import Cursor, Spill
from .statstream import Edges, HostFigures, HubClock, Tally

RX_BLOCK = 1 << 16  # .rxt records a read (1 MiB)
WINDOW_US = int(WINDOW_S * 1e6)


class RxTimes:
    """:func:`.recording.arrival_ns` of ascending capture positions, the ``.rxt`` read a block
    at a time and kept from the last record used on."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("rb")
        self.offset = np.zeros(0, np.int64)
        self.ns = np.zeros(0, np.int64)
        self.done = False

    def at(self, positions: np.ndarray) -> np.ndarray:
        if not len(positions):
            return np.zeros(0, np.int64)
        while not self.done and (not len(self.offset) or self.offset[-1] <= positions[-1]):
            block = np.fromfile(self.file, RX_TIMES_DTYPE, count=RX_BLOCK)
            self.done = len(block) < RX_BLOCK
            offset = np.concatenate((self.offset, block["offset"].astype(np.int64)))
            if np.any(offset[1:] < offset[:-1]):
                raise NotStreamable("the .rxt's offsets go back")
            self.offset, self.ns = offset, np.concatenate((self.ns, block["host_rx_ns"]))
        if not len(self.offset):
            raise NotStreamable("the .rxt is empty")
        chunk = np.maximum(np.searchsorted(self.offset, positions, side="right") - 1, 0)
        out = self.ns[chunk]
        keep = int(chunk[-1])
        self.offset, self.ns = self.offset[keep:], self.ns[keep:]
        return out

    def close(self) -> None:
        self.file.close()


@dataclass
class Feed:
    """One read's frames: decoded, each one's boot, hub clock (µs, as ``hub_clock_at``) and
    arrival (µs, as ``frame_arrival_us``), and the index of its first frame."""

    decoded: Decoded
    boot: np.ndarray
    hub_t: np.ndarray
    host_us: np.ndarray
    index: int
    chunk: bytes
    number: int  # of the read


class _Pass:
    """One pass over a recording: its feeds (:class:`Feed`), each frame's arrival the time of
    the ``.rxt`` record that holds its delimiter."""

    def __init__(self, read: Callable[[], Iterable[bytes]], rxt: Path) -> None:
        self.read, self.rxt = read, rxt
        self.decoder, self.clock = StreamDecoder(), HubClock()

    def __iter__(self) -> Iterator[Feed]:
        rx = RxTimes(self.rxt)
        at = index = 0
        try:
            for number, chunk in enumerate(self.read()):
                decoded = self.decoder.feed(chunk)
                boot, hub_t = self.clock.feed(decoded)
                zeros = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 0) + at
                ends = np.searchsorted(zeros, decoded.frames["offset"])
                if np.any(ends >= len(zeros)):
                    raise NotStreamable("a frame without its delimiter in its read")
                host_us = rx.at(zeros[ends]) / 1e3
                yield Feed(decoded, boot, hub_t, host_us, index, chunk, number)
                at += len(chunk)
                index += len(decoded.frames)
        finally:
            rx.close()


def _hub(frames: np.ndarray) -> np.ndarray:
    """The hub's own frames (its clock): as :func:`.hosttime.recording_speed` takes them."""
    return np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0)


class _Unwrap:
    """A 32-bit stamp column unwrapped as it comes, per boot and node: ``unwrap_u32`` of the
    whole column, carried on from its last value; an ended boot's let go (:meth:`end_before`)."""

    def __init__(self) -> None:
        self.prev: dict[tuple[int, int], int] = {}

    def __call__(self, boot: int, node: int, raw: np.ndarray) -> np.ndarray:
        raw = raw.astype(np.int64)
        key = boot, node
        if key in self.prev:
            out = unwrap(np.concatenate(([self.prev[key]], raw)), 32)[1:]
        else:
            out = unwrap(raw, 32)
        if len(out):
            self.prev[key] = int(out[-1])
        return out

    def end_before(self, boot: int) -> None:
        """The boots before ``boot`` have ended: their last values let go."""
        if any(b < boot for b, _ in self.prev):
            self.prev = {key: v for key, v in self.prev.items() if key[0] >= boot}


COUNT_DTYPE = np.dtype([("boot", np.int64), ("n", np.int64)])


class BootCounts:
    """Each boot's OK hub frames, counted in the scan as they come and read back in the tally
    as its boots come again (:class:`_BootRate` splits a boot's frames in halves by their
    count, known only at its end): those of :data:`.linkstats.MIN_SYNCS` or more, in a
    :class:`.spill.Spill` (a dict of them per boot was most of 6 MB of forged reboots' peak)."""

    def __init__(self) -> None:
        self.spill = Spill(COUNT_DTYPE)
        self.boot, self.n = -1, 0  # the boot being counted, its frames so far

    def add(self, boot: np.ndarray) -> None:
        """The boots of a read's OK hub frames (ascending: a frame's boot is set by its place)."""
        if not len(boot):
            return
        boots, n = np.unique(boot, return_counts=True)
        if boots[0] == self.boot:
            n[0] += self.n
        else:
            self._write(np.array([self.boot]), np.array([self.n]))
        self._write(boots[:-1], n[:-1])
        self.boot, self.n = int(boots[-1]), int(n[-1])

    def close(self) -> None:
        self._write(np.array([self.boot]), np.array([self.n]))
        self.boot, self.n = -1, 0

    def _write(self, boots: np.ndarray, n: np.ndarray) -> None:
        keep = n >= MIN_SYNCS
        records = np.zeros(int(np.count_nonzero(keep)), COUNT_DTYPE)
        records["boot"], records["n"] = boots[keep], n[keep]
        self.spill.append(records)


@dataclass
class _Scan:
    """Pass 1: what the later passes need first."""

    speed: float = 1.0
    h0: float = np.inf  # the least arrival (µs)
    read_min: list[float] = field(default_factory=list)  # per read, its least arrival (µs)
    counts: BootCounts = field(default_factory=BootCounts)  # per boot, its OK hub frames
    frames: int = 0


def _scan(read: Callable[[], Iterable[bytes]], rxt: Path) -> _Scan:
    """The played speed (:func:`.hosttime.recording_speed`: the envelope of the longest boot's
    hub stamps over their arrival, kept for every boot until the longest is known)."""
    scan, stamps = _Scan(), _Unwrap()
    fits: dict[int, tuple[Envelope, Reorder]] = {}  # per boot going on: its hub stamps' fit
    longest: tuple[Envelope, Reorder] | None = None  # the fit of the longest boot ended
    base: dict[int, int] = {}  # per boot going on: its first stamp
    most = 0  # hub frames of the longest boot ended so far
    for feed in _Pass(read, rxt):
        frames = feed.decoded.frames
        scan.read_min.append(float(feed.host_us.min()) if len(frames) else np.inf)
        scan.h0 = min(scan.h0, scan.read_min[-1])
        scan.frames += len(frames)
        scan.counts.add(feed.boot[(frames["status"] == OK) & (frames["node"] == 0)])
        hub = np.flatnonzero(_hub(frames))
        last = int(feed.boot[-1]) if len(frames) else -1
        for b, at in groups(feed.boot[hub]):
            if b < last and b not in fits and len(at) <= most:
                continue  # begun and ended in this read, no longer than one before: not the
                # longest (the first of the longest is), so no fit (forged reboots: 12 000 a read)
            mine = hub[at]
            t = stamps(b, 0, frames["t_us"][mine])
            base.setdefault(b, int(t[0]))
            if b not in fits:
                fits[b] = (envelope := Envelope(merge=False), Reorder(envelope.feed))
            fits[b][1].add(feed.host_us[mine], (t - base[b]).astype(np.float64))  # a shift
            # leaves the slope as it is
            most = max(most, fits[b][1].n) if b < last else most  # it has ended
        if len(frames):
            longest = _longest(fits, longest, last)
            stamps.end_before(last)
            base = {b: t for b, t in base.items() if b >= last}
    scan.counts.close()
    longest = _longest(fits, longest, np.inf)
    if longest is not None:
        envelope, order = longest
        order.flush()
        ratio = 1.0
        if order.n >= MIN_FRAMES and order.hi - order.lo > 0:
            slope = envelope.line()[1]
            ratio = float(slope) if slope > 0 else 1.0
        scan.speed = played_speed(ratio)
    return scan


def _longest(
    fits: dict[int, tuple[Envelope, Reorder]],
    longest: tuple[Envelope, Reorder] | None,
    before: float,
) -> tuple[Envelope, Reorder] | None:
    """The boots before ``before`` have ended: the fit of the one with the most frames so far
    (the first of those with as many), the others' fits let go."""
    for b in sorted(b for b in fits if b < before):
        fit = fits.pop(b)
        if longest is None or fit[1].n > longest[1].n:
            longest = fit
    return longest


@dataclass
class HostTime:
    """Pass 2: each frame's time as ``link_stats`` gives it (:meth:`t_s`)."""

    scan: _Scan
    prompt: int = 0  # frames before it had queued before the join (0: none)
    prompt_h: float = 0.0  # its scaled arrival
    prompt_hub_t: float = 0.0  # its hub clock
    t_min: float = 0.0  # the least of every frame's (scaled) arrival, in s
    timing: Timing = field(default_factory=lambda: Timing(np.zeros(0), True))
    backlog_ok: int = 0  # OK hub frames in the backlog

    def t_s(self, feed: Feed) -> np.ndarray:
        host_us = (feed.host_us - self.scan.h0) * self.scan.speed
        if self.prompt > feed.index:
            queued = slice(0, self.prompt - feed.index)
            host_us[queued] = self.prompt_h - (self.prompt_hub_t - feed.hub_t[queued])
        return host_us / 1e6 - self.t_min

    def backlog(self, feed: Feed) -> np.ndarray:
        """Which of a read's frames are the join's backlog."""
        return np.arange(feed.index, feed.index + len(feed.host_us)) < self.prompt


class _Lookahead:
    """:func:`.hosttime.backlog_end` as the first boot's hub frames come: each judged once a
    minute of hub time after it has come (or the boot has ended).

    ``backlog_end`` finds a frame's minute ahead by a binary search of the boot's stamps,
    which are in order but for a few ms here and there (the hub stamps a frame before
    it sends an earlier-stamped one).  The search gives the stamps up to the minute's
    end wherever those are a prefix of them (none later at or below it, none earlier
    above it): that is checked, here and as the rest come.
    """

    COLUMNS = ("hub", "lag", "index", "h", "hub_t", "least_hub_t", "ok_before", "read",
               "least_after")  # fmt: skip

    def __init__(self) -> None:
        self.pending = {c: np.zeros(0) for c in self.COLUMNS}
        self.found: dict[str, float] | None = None
        self.judged = 0
        self.reach = -np.inf  # the latest minute's end a judgement took
        self.passed = -np.inf  # the highest stamp of the frames judged

    def add(self, **columns: np.ndarray) -> None:
        if len(columns["hub"]) and columns["hub"].min() <= self.reach:
            raise NotStreamable("a hub stamp back inside a minute judged already")
        for c in self.COLUMNS:
            self.pending[c] = np.concatenate((self.pending[c], columns[c]))

    def judge(self, ended: bool) -> bool:
        """Judge what can be; True once the backlog's end is known (or there is none)."""
        p = self.pending
        hub, lag = p["hub"], p["lag"]
        top = hub.max() if len(hub) else -np.inf
        i = 0
        while i < len(hub) and (ended or hub[i] + AHEAD_US < top):
            within = hub <= hub[i] + AHEAD_US
            ahead = int(np.count_nonzero(within))
            if not within[:ahead].all() or self.passed > hub[i] + AHEAD_US:
                raise NotStreamable("the hub's stamps out of order at a minute's end")
            self.reach = max(self.reach, hub[i] + AHEAD_US)
            self.passed = max(self.passed, hub[i])
            if lag[i] - lag[i : max(ahead, i + 1)].min() <= BACKLOG_US:
                self.found = {c: p[c][i] for c in self.COLUMNS}
                self.found["end"] = self.judged + i
                return True
            i += 1
        self.judged += i
        self.pending = {c: v[i:] for c, v in p.items()}
        return ended


def _backlog(read: Callable[[], Iterable[bytes]], rxt: Path, scan: _Scan) -> HostTime:
    """A join's backlog (:func:`.linkstats._timing`), reading only until its end is known."""
    out, look, stamps = HostTime(scan), _Lookahead(), _Unwrap()
    least, ok_before, hub_t0 = np.inf, 0, 0.0
    for feed in _Pass(read, rxt):
        frames = feed.decoded.frames
        if not len(frames):
            continue
        hub_t = feed.hub_t.astype(np.float64)
        if feed.index == 0:
            hub_t0 = float(hub_t[0])
        h = (feed.host_us - scan.h0) * scan.speed
        first = _hub(frames) & (feed.boot == 0)
        ok = (frames["status"] == OK) & (frames["node"] == 0)
        # per frame: the least hub clock and the OK hub frames before it
        least_before = np.minimum.accumulate(np.concatenate(([least], hub_t)))[:-1]
        ok_prior = ok_before + np.concatenate(([0], np.cumsum(ok)))[:-1]
        t = stamps(0, 0, frames["t_us"][first])
        least_after = np.minimum.accumulate(feed.host_us[::-1])[::-1]  # within the read
        look.add(
            hub=t.astype(np.float64),
            lag=(h[first].astype(np.int64) - t).astype(np.float64),  # as backlog_end: whole µs
            index=np.flatnonzero(first) + feed.index,
            h=h[first],
            hub_t=hub_t[first],
            least_hub_t=least_before[first],
            ok_before=ok_prior[first],
            read=np.full(np.count_nonzero(first), feed.number),
            least_after=least_after[first],
        )
        least, ok_before = min(least, float(hub_t.min())), ok_before + int(ok.sum())
        if look.judge(ended=bool(np.any(feed.boot > 0))):
            break
    else:
        look.judge(ended=True)
    found = look.found
    t_min_us = 0.0  # no backlog: the first frame's (h0 - h0) * speed
    if found is not None and found["end"] > 0:
        out.prompt, out.prompt_h, out.prompt_hub_t = int(found["index"]), found["h"], found["hub_t"]
        out.backlog_ok = int(found["ok_before"])
        # the frames after it: arrivals scaled (the least, the arrivals may step back)
        after = min(found["least_after"], *scan.read_min[int(found["read"]) + 1 :], np.inf)
        t_min_us = min(out.prompt_h - (out.prompt_hub_t - found["least_hub_t"]),
                       (after - scan.h0) * scan.speed)  # fmt: skip
    out.t_min = np.float64(t_min_us) / 1e6
    joined = out.prompt > 0
    out.timing = Timing(
        np.zeros(0),
        True,
        scan.speed,
        np.ones(out.prompt, bool),  # the first frames: link_stats' mask, as its count
        float(out.prompt_hub_t - hub_t0) / 1e6 if joined else 0.0,
        float(np.float64(out.prompt_h) / 1e6 - out.t_min) + JOIN_SETTLE_S if joined else -np.inf,
    )
    return out


class _BootRate:
    """The hub against the host over one boot (:class:`.linkstats.HubRate`), built as its
    frames come: the envelope of all of them and of each half (the halves split where
    ``np.array_split`` splits the boot's frames), and the last minutes of them for the
    drift windows (:func:`.linkstats.hub_rate_over` of a window's stretch)."""

    fits = True  # its rate fitted as its frames come (else from them at once: _OneRead)

    def __init__(self, n: int) -> None:
        self.n, self.taken = n, 0
        self.all, self.halves = Envelope(merge=True), (Envelope(merge=True), Envelope(merge=True))
        self.order = Reorder(self._take)
        self._frames()

    def _frames(self) -> None:
        self.hub = np.zeros(0, np.int64)  # the recent frames: stamps and arrivals
        self.host = np.zeros(0)
        self.dropped = -np.inf  # frames below this stamp are no longer kept
        self.closed = -np.inf  # the highest stamp a window has been figured up to

    def add(self, hub_us: np.ndarray, host_us: np.ndarray) -> None:
        if not len(hub_us):
            return
        if hub_us.min() <= self.closed:
            raise NotStreamable("a hub frame within a drift window already figured")
        if self.fits:
            self.order.add(host_us, hub_us - host_us)
        self.hub, self.host = (
            np.concatenate((self.hub, hub_us)),
            np.concatenate((self.host, host_us)),
        )

    def _take(self, x: np.ndarray, y: np.ndarray) -> bool:
        """Samples in arrival order: into the fit of all and of the half each falls in."""
        split = min(max(self.n - self.n // 2 - self.taken, 0), len(x))  # those of the first
        self.taken += len(x)
        first = self.halves[0].feed(x[:split], y[:split])
        return self.all.feed(x, y) & first & self.halves[1].feed(x[split:], y[split:])

    def drop_below(self, stamp: float) -> None:
        keep = self.hub >= stamp
        if not keep.all():
            self.dropped = max(self.dropped, float(self.hub[~keep].max()))
            self.hub, self.host = self.hub[keep], self.host[keep]

    def part(self, lo: float, hi: float) -> tuple[float, float]:
        if lo <= self.dropped:
            raise NotStreamable("a drift window reaches back past the hub frames kept")
        self.closed = max(self.closed, float(hi))
        return hub_rate_over(self.hub, self.host, lo, hi)

    def whole(self) -> tuple[float, float]:
        self.order.flush()
        if self.all.points < MIN_SYNCS:
            return UNKNOWN_RATE
        slope = self.all.line()[1]
        halves = None
        if min(self.n - self.n // 2, self.n // 2) >= MIN_HALF:
            halves = [h.line()[1] for h in self.halves]
        span = self.order.hi - self.order.lo
        return slope * 1e6, halves_bound(halves, slope, span, 0.0) * 1e6


class _OneRead(_BootRate):
    """A boot begun and ended in one read: its frames come at once, so its rate is figured
    from them as ``link_stats`` figures it (:func:`.linkstats.hub_rate_over`, the same floats
    as the fits), and no fit is made (forged reboots of nine hub frames: 5000 boots a read,
    17 kB of fits each)."""

    fits = False

    def __init__(self, n: int) -> None:
        self.n = n
        self._frames()

    def whole(self) -> tuple[float, float]:
        return hub_rate_over(self.hub, self.host, -np.inf, np.inf)


class HostRates:
    """The hub's rate against the host per boot (:class:`_BootRate`) and each drift
    window's entry: node against hub, plus the hub against the host over the window's
    stretch or over its boot, whichever is known better (:meth:`.linkstats.HubRate.ppm`),
    made final once the boot's rate is known.

    A boot's fit is made when its first frame comes (its frame count read from the scan's,
    :class:`BootCounts`) and let go when it has ended and no drift window of it is open: of
    an ended boot only its rate is kept, listed for the first :data:`.capped.LISTED` boots
    and counted for all, and kept apart while a listed drift window of it may ask for it.
    """

    width = 7  # numbers in a row: the fit's figures, its boot, the hub's rate over its stretch

    def __init__(self, counts: BootCounts, backlog_ok: int = 0) -> None:
        self.counts, self.backlog_ok = Cursor(counts.spill), backlog_ok
        self.boots: dict[int, _BootRate] = {}  # boots going on, and the open windows' one
        self.ended: dict[int, tuple[float, float]] = {}  # rates of those, ended
        self.seen = -1  # the latest boot whose frames have come
        self.stamps = _Unwrap()
        self.listing = Listing()  # boot, rate, uncertainty of each boot ended, in order
        self.wholes: dict[int, tuple[float, float]] = {}  # those a listed window may ask for

    def add(self, feed: Feed, t_s: np.ndarray, backlog: np.ndarray) -> None:
        frames = feed.decoded.frames
        mine = np.flatnonzero((frames["status"] == OK) & (frames["node"] == 0) & ~backlog)
        last = int(feed.boot[-1]) if len(feed.boot) else -1
        for b, at in groups(feed.boot[mine]):
            if b > self.seen:
                self._start(b, _OneRead if b < last else _BootRate)  # all its frames here?
            if b in self.boots:
                sel = mine[at]
                self.boots[b].add(self.stamps(b, 0, frames["t_us"][sel]), t_s[sel] * 1e6)

    def _start(self, b: int, kind: type[_BootRate]) -> None:
        """A boot's first frame: its rate's making, if it has the frames for one."""
        self.seen = b
        counted = self.counts.upto(b)
        n = int(counted["n"][-1]) if len(counted) and counted["boot"][-1] == b else 0
        n -= self.backlog_ok if b == 0 else 0
        if n >= MIN_SYNCS:
            self.boots[b] = kind(n)

    def trim(self, tally: Tally, last: int) -> None:
        """After a read whose last frame is of boot ``last``: the boots before it have ended,
        their rates known (listed) and their fits let go unless their windows are open; of
        the others keep the frames an open window (or one to come) may ask for: from a
        window before the lowest open one's samples, or before the latest hub frame."""
        for b in sorted(self.boots):
            rate = self.boots[b]
            if b < last and b not in self.ended:
                self._end(b, rate)
            if b in self.ended and b != tally.sync_boot:  # no window of it open or to come
                whole = self.ended.pop(b)
                del self.boots[b]
                if _listed(tally, b):
                    self.wholes[b] = whole
            elif len(rate.hub):
                low = [float(rate.hub[-1])]
                if b == tally.sync_boot:
                    low += [min(float(h.min()) for h in kept[0])
                            for w in tally.windows.values() for kept in w.open.values()]  # fmt: skip
                rate.drop_below(min(low) - WINDOW_US)
        self.stamps.end_before(last)

    def _end(self, b: int, rate: _BootRate) -> None:
        self.ended[b] = rate.whole()
        self.listing.extend(np.array([b]), *np.array([self.ended[b]]).T)

    def end(self) -> None:
        """The capture has ended, and every boot with it (their fits kept for the windows
        still open)."""
        for b, rate in sorted(self.boots.items()):
            if b not in self.ended:
                self._end(b, rate)
            self.wholes[b] = self.ended[b]

    def row(self, fit: WindowFit, boot: int) -> list[float]:
        part = self.boots[boot].part(fit.lo, fit.hi) if boot in self.boots else UNKNOWN_RATE
        return [*fit.figures(), boot, *part]

    def final(self, rows: np.ndarray) -> np.ndarray:
        """The windows' rows, each with the hub's rate over its stretch or over its boot,
        whichever has the smaller uncertainty."""
        boot = rows[:, 4].astype(np.int64)
        whole = np.array([self.wholes.get(b, UNKNOWN_RATE) for b in boot.tolist()])
        whole, part = whole.reshape(-1, 2), rows[:, 5:]
        return window_rows(rows[:, :4], np.where(part[:, 1:] < whole[:, 1:], part, whole))


def _listed(tally: Tally, boot: int) -> bool:
    """Whether a drift window of ``boot`` is among those listed (a node's rows come in the
    order of their boots)."""
    for clock in tally.clocks.values():
        rows = clock.rows.values
        if len(rows) and rows[0, 4] <= boot <= rows[-1, 4]:  # else at once: none of it
            i = int(np.searchsorted(rows[:, 4], boot))
            if rows[i, 4] == boot:
                return True
    return False


class _Latency:
    """Each node's arrival latency above its fastest frames (:func:`.linkstats._latency`):
    the samples, per node and boot, of the frames it counts."""

    def __init__(self) -> None:
        self.stamps = _Unwrap()

    def samples(self, feed: Feed, t_s: np.ndarray, backlog: np.ndarray) -> Iterator[Any]:
        """((node, boot), stamps, stamp minus arrival) of a read's frames, per node and boot."""
        frames = feed.decoded.frames
        if len(feed.boot):
            self.stamps.end_before(int(feed.boot[0]))
        good = np.flatnonzero((frames["status"] == OK) & ~backlog)
        key = frames["node"][good].astype(np.int64) * (1 << 32) + feed.boot[good]
        for k, at in groups(key):
            sel = good[at]
            node, boot = divmod(k, 1 << 32)
            stamp = self.stamps(boot, node, frames["t_us"][sel]).astype(np.float64)
            yield (node, boot), stamp, stamp - t_s[sel] * 1e6


LINE_DTYPE = np.dtype([("boot", np.int64), ("node", np.int64), ("a", np.float64),
                       ("slope", np.float64), ("x0", np.float64)])  # fmt: skip


Line = tuple[int, int, float, float, float]  # boot, node, and the line: a, slope, x0


class Lines:
    """Each node's latency envelope per boot (:func:`_latencies`: the line its frames' latency
    is measured above), written as its boot ends and read back in the latency passes as the
    boots come again, in a :class:`.spill.Spill`; and the nodes that have one."""

    def __init__(self) -> None:
        self.spill = Spill(LINE_DTYPE)
        self.nodes: set[int] = set()

    def write(self, rows: list[Line]) -> None:
        """A read's lines, of boots that have ended (any order: written in boot order)."""
        if rows:
            self.spill.append(np.array(sorted(rows), LINE_DTYPE))
            self.nodes.update(row[1] for row in rows)

    @staticmethod
    def of_fits(ended: list[tuple[Any, Envelope, Reorder]]) -> list[Line]:
        """Fits whose boots have ended (:meth:`.envelope.Fits.end_before`): those of two frames
        or more."""
        return [(boot, node, *envelope.line(), envelope.x0)
                for (node, boot), envelope, order in ended if order.n >= 2]  # fmt: skip

    @staticmethod
    def of_samples(node: int, boot: int, x: np.ndarray, y: np.ndarray) -> list[Line]:
        """A boot's samples all at once (it began and ended in one read: forged reboots, 12 000
        a read, made a fit each): the line its fit would give (:func:`.drift.envelope_slope`,
        ``tests/linktools/test_host_stream.py``), no fit made."""
        return [(boot, node, *envelope_slope(x, y), float(x.min()))] if len(x) >= 2 else []

    def close(self) -> None:
        self.spill.close()


def host_stats(
    read: Callable[[], Iterable[bytes]], rxt: Path, *, continues: bool = False
) -> dict[str, Any]:
    """``link_stats(capture, read_rx_times(rxt))`` of the capture ``read()`` yields in chunks
    (called five times, more for a percentile in a crowded bucket: :mod:`.ranks`), in memory
    that does not grow with it; :class:`NotStreamable` when that cannot be the same report."""
    scan, lines = _scan(read, rxt), Lines()
    try:
        if not scan.frames:
            raise NotStreamable("no frame")
        return _host_stats(read, rxt, scan, lines, continues)
    finally:
        scan.counts.spill.close()
        lines.close()


def _host_stats(
    read: Callable[[], Iterable[bytes]], rxt: Path, scan: _Scan, lines: Lines, continues: bool
) -> dict[str, Any]:
    host = _backlog(read, rxt, scan)
    rates, latency = HostRates(scan.counts, host.backlog_ok), _Latency()
    tally, edges = Tally(rates, host.timing.joined_until_s), Edges()
    fits = Fits(merge=True)
    at_join: int | None = None
    joined_until = host.timing.joined_until_s
    passes = _Pass(read, rxt)
    for feed in passes:
        edges.feed(feed.chunk)
        t_s, backlog = host.t_s(feed), host.backlog(feed)
        rates.add(feed, t_s, backlog)
        tally.feed(feed.decoded, feed.boot, t_s, edges.first)
        beats = feed.decoded.tables.get("HEARTBEAT")
        if at_join is None and np.isfinite(joined_until) and beats is not None and len(beats):
            when = t_s[np.searchsorted(feed.decoded.frames["offset"], beats["offset"])]
            settled = np.flatnonzero(when > joined_until)
            if len(settled):
                at_join = int(beats["tx_dropped"][settled[0]])
        last = int(feed.boot[-1]) if len(feed.boot) else -1
        rows = []
        for (node, boot), x, y in latency.samples(feed, t_s, backlog):
            if boot < last and (node, boot) not in fits.fits:  # all its frames in this read
                rows += Lines.of_samples(node, boot, x, y)
            else:
                fits.add((node, boot), boot, x, y)
        if len(feed.boot):
            rates.trim(tally, last)
            rows += Lines.of_fits(fits.end_before(last))
        lines.write(rows)
    if np.isfinite(joined_until) and at_join is None and tally.beats:
        raise NotStreamable("no HEARTBEAT after the join")  # link_stats fails on it too
    lines.write(Lines.of_fits(fits.end_before(np.inf)))
    rates.end()
    figures = HostFigures(host.timing, rates.listing, _latencies(read, rxt, host, lines),
                          at_join or 0)  # fmt: skip
    findings = tally.findings(passes.decoder.stats(), passes.clock, edges.size, edges.tail,
                              continues, figures)  # fmt: skip
    return report(findings)


def _latencies(
    read: Callable[[], Iterable[bytes]], rxt: Path, host: HostTime, lines: Lines
) -> dict[int, dict[str, float]]:
    """Per node, p50, p95 and max of its frames' latency (ms) above its envelope, over its
    boots of two frames or more: counted in one pass, the wanted ranks kept in another (or
    their buckets narrowed in more, :mod:`.ranks`), each boot's lines read as it comes."""
    ranks = {node: Ranks() for node in sorted(lines.nodes)}
    counting = True
    while True:
        latency, cursor = _Latency(), Cursor(lines.spill)
        known: dict[tuple[int, int], tuple[float, float, float]] = {}  # the read's boots' lines
        for feed in _Pass(read, rxt):
            if len(feed.boot):
                known = {key: line for key, line in known.items() if key[1] >= feed.boot[0]}
                for boot, node, *line in cursor.upto(int(feed.boot[-1])).tolist():
                    known[node, boot] = tuple(line)
            t_s, backlog = host.t_s(feed), host.backlog(feed)
            lats: dict[int, list[np.ndarray]] = {}  # a read's, per node: one call a node
            for key, x, y in latency.samples(feed, t_s, backlog):
                if key in known:
                    a, slope, x0 = known[key]
                    lats.setdefault(key[0], []).append(((a + slope * (x - x0)) - y) / 1e3)
            for node, mine in lats.items():
                (ranks[node].count if counting else ranks[node].take)(np.concatenate(mine))
        counting = False
        settled = [r.settle() for r in ranks.values()]  # every node's, before the next pass
        if all(settled):
            break
    out = {}
    for node, r in ranks.items():
        p50, p95, top = r.percentiles()
        out[node] = {"p50_ms": float(p50), "p95_ms": float(p95), "max_ms": float(top)}
    return out
