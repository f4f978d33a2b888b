"""Link health after the fact: what ``firmware-host stats`` finds in a capture.

Everything is computed on the decoder's columnar output (one kernel pass),
per node and message type, and named in words when it is a problem:

* frames, rates and the longest gap per node and type;
* frames lost (``seq`` gaps, with the offset of the frame after each gap)
  and retransmissions (flags bit 0) per node;
* bad frames by reason with their offsets, hub reboots (a HELLO with a new
  ``boot_id``) with theirs;
* of each finding's offsets only the first :data:`LISTED` (its count is of all:
  a hostile file of millions of bad frames costs a bounded report, issue 29);
* each node's clock rate over time against ICD §7 (``MAX_PPM``), and with
  host receive times the arrival latency per node.

How drift is measured (docs/link-debugging.md): in windows of
``WINDOW_S`` of hub time, the line through each node's CLOCK_SYNC samples
is the *upper envelope* of hub-minus-node time (a beacon is always received
after it left, so the samples with the shortest delay touch the true line;
:func:`firmware_host.timing.clock_model.envelope_line`).  Its slope is the
node's rate against the hub.  The hub's own crystal is off by up to 50 ppm,
so with a ``.rxt`` the hub is measured the same way against the host's
clock (hub stamps against their arrival times, over each boot) and the two
add up to the node's rate against the host: that is the figure checked
against the datasheet.  Without host times the rate against the hub is
checked against the datasheet limits of both crystals together.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.catalogue import BY_TYPE, FLAG_RETRANSMISSION, NODE_NAMES
from protocol.decoder import STATUS_NAMES, Decoded, decode_capture
from protocol.kernels import BAD_COBS, DUPLICATE, OK, UNKNOWN

from ..cli.args import plural
from ..timing.clock_model import MAX_PPM, slope_error
from .capped import (
    LISTED,
    WINDOWS_LISTED,
    Listing,
    Lost,
    SeqGaps,
    count_keys,
    listed_key,
    losses,
    take_seq_marks,
)
from .drift import envelope_slope, slope_uncertainty
from .hosttime import backlog_end, recording_speed
from .recording import (
    boot_starts,
    frame_arrival_us,
    hub_clock_at,
    joined_bytes,
    unwrap_u32,
)

WINDOW_S = 60.0  # drift windows, hub time
MIN_SYNCS = 8  # a window with fewer CLOCK_SYNC samples of a node gives no figure
PPM_MARGIN = 5.0  # measurement margin before a rate is called out of spec
HEARTBEAT_GAP_S = 2.5  # HEARTBEAT is 1 Hz: a longer silence is a stalled link
JOIN_SETTLE_S = 1.0  # after a join's backlog, what the hub queued meanwhile comes this soon
MAX_LISTED = 10  # offsets the text shows per finding ("and K more": K against its count)


@dataclass
class Found:
    """One problem: its words, and the offsets where it is (the first :data:`LISTED` of
    ``places``, when there are more)."""

    what: str
    count: int
    offsets: list[int] = field(default_factory=list)
    places: int | None = None  # offsets there are in all; None: those listed

    @property
    def total(self) -> int:
        """Offsets there are, listed or not: what "and K more" counts against."""
        return len(self.offsets) if self.places is None else self.places

    def text(self) -> str:
        if not self.offsets:
            return self.what
        shown = ", ".join(str(o) for o in self.offsets[:MAX_LISTED])
        more = f" and {self.total - MAX_LISTED} more" if self.total > MAX_LISTED else ""
        return f"{self.what} (at offset{'s' if self.total > 1 else ''} {shown}{more})"

    def entry(self) -> dict[str, Any]:
        """The report's ``problems`` entry: ``listed`` only when fewer than there are."""
        return {"text": self.text(), "count": self.count, "offsets": self.offsets,
                **listed_key(len(self.offsets), self.total)}  # fmt: skip


def node_label(node: int) -> str:
    return f"node {node} ({NODE_NAMES.get(node, '?')})"


def groups(keys: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Each distinct key, ascending, and where it is in ``keys`` (in their order): one stable
    sort, where a mask per key made a loop over a boot's or a node's frames quadratic in
    forged boots (a key each)."""
    if not len(keys):
        return
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    yield from zip(ordered[starts].tolist(), np.split(order, cuts), strict=True)


def _reboots(decoded: Decoded, starts: np.ndarray) -> Listing:
    """Each boot after the first: where its HELLO is and its ``boot_id`` (the first
    :data:`LISTED`; a forged HELLO with a new ``boot_id`` each is a reboot each)."""
    hello = decoded.tables.get("HELLO")
    if hello is None or not len(starts):
        return Listing()
    at = np.searchsorted(hello["offset"], starts)
    return Listing.of(starts.astype(np.int64), hello["boot_id"][at].astype(np.int64))


@dataclass
class Timing:
    """Each frame's time, and what was done to the host's times to make them mean it."""

    t_s: np.ndarray  # per frame, seconds since the first: host receive time, else hub clock
    host: bool  # t_s are host receive times (a .rxt)
    speed: float = 1.0  # the table was played this many times faster (host times scaled by it)
    backlog: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # queued before
    backlog_hub_s: float = 0.0  # the hub time the backlog covers
    #: what happened up to here (t_s) happened while nobody read: the join's backlog, and
    #: what the hub dropped then for want of a reader (its seq gaps, its HEARTBEAT silence)
    joined_until_s: float = -np.inf


def _timing(decoded: Decoded, capture: np.ndarray, rx: np.ndarray | None) -> Timing:
    """Per frame its host receive time (the chunk its delimiter came in), scaled by the speed
    a virtual table was played at, the backlog of a join timed by the hub's clock instead;
    else the hub clock (see :mod:`.recording`, :mod:`.hosttime`)."""
    frames = decoded.frames
    hub_t = hub_clock_at(decoded, frames["offset"]).astype(np.float64)
    if rx is None or not len(rx):
        t = hub_t / 1e6
        return Timing(t - t.min() if len(t) else t, False, backlog=np.zeros(len(t), bool))
    host_us = frame_arrival_us(decoded, capture, rx)
    boot = np.searchsorted(boot_starts(decoded), frames["offset"], side="right")
    hub = np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0)
    speed = recording_speed(frames, boot, host_us)
    host_us = (host_us - host_us.min()) * speed
    first = np.flatnonzero(hub & (boot == boot[0]))
    end = backlog_end(host_us[first], unwrap_u32(frames["t_us"][first])) if len(first) else 0
    backlog = np.zeros(len(frames), bool)
    backlog_hub_s = 0.0
    if 0 < end < len(first):
        prompt = first[end]
        backlog[:prompt] = True
        host_us[:prompt] = host_us[prompt] - (hub_t[prompt] - hub_t[:prompt])
        backlog_hub_s = float(hub_t[prompt] - hub_t[0]) / 1e6
    t = host_us / 1e6
    t -= t.min()
    joined_until = float(t[~backlog][0]) + JOIN_SETTLE_S if backlog.any() else -np.inf
    return Timing(t, True, speed, backlog, backlog_hub_s, joined_until)


def _lost(good: np.ndarray, t_s: np.ndarray, joined_until_s: float) -> dict[int, Lost]:
    """Per node: frames missing in ``seq`` (:class:`SeqGaps`), the good frames' gaps and late
    resends taken in order as the streamed report takes them a read at a time."""
    gaps: dict[int, SeqGaps] = {}
    take_seq_marks(gaps, good, t_s, joined_until_s)
    return losses(gaps)


class HubRate:
    """The hub's rate against the host's clock, from its own frames against their arrival
    (not a join's backlog: its arrival says when it was read), over a boot or a part of it.

    A node's rate against the host is its rate against the hub plus this, taken over the
    same stretch of hub time: the hub's crystal drifts with temperature too (ICD §7).
    """

    def __init__(self, decoded: Decoded, timing: Timing, boot: np.ndarray) -> None:
        frames = decoded.frames
        hub = (frames["status"] == OK) & (frames["node"] == 0) & ~timing.backlog
        t_us, t_s = frames["t_us"][hub], timing.t_s[hub]
        self.boots: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for b, sel in groups(boot[hub]):
            if len(sel) >= MIN_SYNCS:
                self.boots[b] = (unwrap_u32(t_us[sel]), t_s[sel] * 1e6)

    def ppm(self, b: int, lo: float = -np.inf, hi: float = np.inf) -> tuple[float, float]:
        """(rate, uncertainty) in ppm over hub times ``lo`` … ``hi`` of boot ``b``, or over
        the whole boot when that is known better (host times too coarse for a window: a
        table played at 10x, a busy host; the whole boot's uncertainty holds its halves'
        difference, so it covers the crystal's drift within the boot).  Where the boot's
        arrival times are too few to tell, 0 give or take the hub's datasheet bound."""
        whole = self._rate(b, -np.inf, np.inf)
        if lo == -np.inf and hi == np.inf:
            return whole
        part = self._rate(b, lo, hi)
        return part if part[1] < whole[1] else whole

    def _rate(self, b: int, lo: float, hi: float) -> tuple[float, float]:
        if b not in self.boots:
            return UNKNOWN_RATE
        return hub_rate_over(*self.boots[b], lo, hi)


UNKNOWN_RATE = 0.0, float(MAX_PPM[0])  # the hub's rate where its arrivals cannot tell it


def hub_rate_over(
    hub_us: np.ndarray, host_us: np.ndarray, lo: float, hi: float
) -> tuple[float, float]:
    """(rate, uncertainty) in ppm of the hub against the host over hub times ``lo`` … ``hi``
    of its frames (unwrapped stamps, arrival times in µs; :class:`HubRate`)."""
    sel = (hub_us >= lo) & (hub_us <= hi)
    if len(np.unique(host_us[sel])) < MIN_SYNCS:  # frames read in a few chunks
        return UNKNOWN_RATE
    x, y = host_us[sel], hub_us[sel] - host_us[sel]
    _, slope = envelope_slope(x, y)
    return slope * 1e6, slope_uncertainty(x, y, slope, 0.0) * 1e6


def _clock_windows(
    decoded: Decoded, starts: np.ndarray, hub_rate: HubRate | None, t_s: np.ndarray
) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    """Per node: ``[t_s, offset_us, ppm, ±ppm]`` per window (the capture's time, the node's
    offset from the hub at it, its rate and how far that may be off: against the host where
    known, the hub's rate and uncertainty over the same window added), the first
    :data:`.capped.WINDOWS_LISTED`; and how many windows each node has."""
    sync = decoded.tables.get("CLOCK_SYNC")
    out: dict[int, list[list[float]]] = {}
    counts: dict[int, int] = {}
    if sync is None or not len(sync):
        return {}, {}
    sync_t = t_s[np.searchsorted(decoded.frames["offset"], sync["offset"])]
    boot = np.searchsorted(starts, sync["offset"], side="right")
    boots, lo = np.unique(boot, return_index=True)  # boot ascends with the offset
    for b, mine in zip(boots.tolist(), np.split(np.arange(len(sync)), lo[1:]), strict=True):
        mine, mine_t = sync[mine], sync_t[mine]  # a mask per boot: quadratic in forged boots
        hub = unwrap_u32(mine["t_us"])
        for node in np.unique(mine["peer"]).tolist():
            if not 0 < node < len(MAX_PPM):
                continue  # no such clock (ICD §3): a stray peer number says nothing
            sel = mine["peer"] == node
            h, n, when = hub[sel], unwrap_u32(mine["peer_t_us"][sel]), mine_t[sel]
            edges = np.arange(h[0], h[-1] + 1, WINDOW_S * 1e6)
            which = np.searchsorted(edges, h, side="right")
            for w in np.unique(which).tolist():
                in_w = which == w
                figure = window_figure(node, h[in_w], n[in_w], when[in_w], hub_rate, b)
                if figure is not None:
                    counts[node] = counts.get(node, 0) + 1
                    if counts[node] <= WINDOWS_LISTED:
                        out.setdefault(node, []).append(figure)
    return {node: np.array(rows) for node, rows in out.items()}, counts


def window_figure(
    node: int, h: np.ndarray, n: np.ndarray, when: np.ndarray, hub_rate: HubRate | None, b: int
) -> list[float] | None:
    """One drift window of a node's CLOCK_SYNC samples (hub and node times unwrapped, the
    capture's time of each): ``[t_s, offset_us, ppm, ±ppm]``, or None when it has too few
    samples or too short a span to say."""
    fit = window_fit(node, h, n, when)
    if fit is None:
        return None
    return window_row(fit, hub_rate.ppm(b, fit.lo, fit.hi) if hub_rate else (0.0, 0.0))


@dataclass
class WindowFit:
    """A drift window's figures against the hub (:func:`window_fit`), before the hub's own
    rate over its stretch is added (a streamed report knows that only at its boot's end)."""

    t_s: float  # the samples' median capture time
    offset: float
    slope: float  # node against hub
    unc: float  # ppm
    lo: Any  # the hub times the window's samples span
    hi: Any

    def figures(self) -> list[float]:
        """``[t_s, offset, slope, unc]``: what :func:`window_rows` makes a row of."""
        return [self.t_s, self.offset, self.slope, self.unc]


def window_fit(node: int, h: np.ndarray, n: np.ndarray, when: np.ndarray) -> WindowFit | None:
    """:func:`window_figure` against the hub; None: too few samples or too short a span."""
    if len(h) < MIN_SYNCS or np.ptp(h) < WINDOW_S * 1e6 / 4:
        return None
    x, y = h, h - n
    a, slope = envelope_slope(x, y)
    floor = slope_error(node, float(len(h)), float(np.ptp(x)))
    unc = slope_uncertainty(x, y, slope, floor) * 1e6
    offset = a + slope * (float(np.mean(x)) - x.min())
    return WindowFit(float(np.median(when)), float(offset), slope, unc, x.min(), x.max())


def window_row(fit: WindowFit, hub: tuple[float, float]) -> list[float]:
    """``[t_s, offset_us, ppm, ±ppm]`` of a window, the hub's (rate, ±) over it added."""
    return window_rows(np.array([fit.figures()]), np.array([hub]))[0].tolist()


def window_rows(figures: np.ndarray, hub: np.ndarray) -> np.ndarray:
    """:func:`window_row` of windows at once (a streamed report keeps their figures in
    arrays, :meth:`WindowFit.figures` a row, the hub's rate and ± one of ``hub``)."""
    t_s, offset, slope, unc = figures.T
    hub_ppm, hub_unc = hub.T
    ppm = -slope * 1e6 + hub_ppm  # node vs hub, + hub vs host
    return np.column_stack((t_s, offset, ppm, unc + hub_unc))


def _latency(frames: np.ndarray, timing: Timing, boot: np.ndarray) -> dict[int, dict[str, float]]:
    """Per node: arrival latency (ms) above its fastest frame: p50, p95, max (a join's
    backlog left out: it waited for the host, not on the link)."""
    good = (frames["status"] == OK) & ~timing.backlog
    t_us, t_s = frames["t_us"][good], timing.t_s[good]
    parts: dict[int, list[np.ndarray]] = {}
    for key, sel in groups(frames["node"][good].astype(np.int64) * (1 << 32) + boot[good]):
        if len(sel) < 2:
            continue
        stamp = unwrap_u32(t_us[sel]).astype(np.float64)
        host = t_s[sel] * 1e6
        a, slope = envelope_slope(stamp, stamp - host)  # the fastest arrivals touch it
        parts.setdefault(key >> 32, []).append((a + slope * (stamp - stamp.min())) - (stamp - host))
    out = {}
    for node, mine in parts.items():
        lat = np.concatenate(mine) / 1e3
        p50, p95, top = np.percentile(lat, [50, 95, 100])
        out[node] = {"p50_ms": float(p50), "p95_ms": float(p95), "max_ms": float(top)}
    return out


def _per_type(
    frames: np.ndarray, t_s: np.ndarray, boot: np.ndarray, span_s: float
) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    good = np.isin(frames["status"], (OK, UNKNOWN))
    for node, msg_type in sorted(
        set(zip(frames["node"][good].tolist(), frames["msg_type"][good].tolist()))
    ):
        sel = good & (frames["node"] == node) & (frames["msg_type"] == msg_type)
        t, b = t_s[sel], boot[sel]
        gaps = np.diff(t)
        gaps[b[1:] != b[:-1]] = 0  # no gap across a reboot (the hub clock restarts)
        k = int(np.argmax(gaps)) if len(gaps) else -1
        spec = BY_TYPE.get(msg_type)
        out.setdefault(node, {})[spec.name if spec else f"0x{msg_type:02X}"] = {
            "frames": int(sel.sum()),
            "rate_hz": float(sel.sum() / span_s) if span_s > 0 else 0.0,
            "max_gap_s": float(gaps[k]) if k >= 0 else 0.0,
            "max_gap_at": int(frames["offset"][sel][k + 1]) if k >= 0 else None,
        }
    return out


def _hub_counts(decoded: Decoded, boot: np.ndarray, timing: Timing) -> tuple[list[Found], int]:
    """What the hub counted itself (HEARTBEAT, saturating, per boot): bad frames it got
    from the host (the cable's other direction) and frames it dropped for lack of buffer;
    and how many of those it had dropped by the end of a join (nobody read: not the link)."""
    beats = decoded.tables.get("HEARTBEAT")
    if beats is None or not len(beats):
        return [], 0
    starts = np.searchsorted(decoded.frames["offset"], beats["offset"])
    their_boot, when = boot[starts], timing.t_s[starts]
    settled = np.flatnonzero(when > timing.joined_until_s)
    at_join = int(beats["tx_dropped"][settled[0]]) if np.isfinite(timing.joined_until_s) else 0
    totals, firsts = {}, {}
    _, first = np.unique(their_boot, return_index=True)  # boot ascends with the offset
    for name, _ in HUB_COUNTS:
        totals[name] = int(np.maximum.reduceat(beats[name], first).astype(np.int64).sum())
        nonzero = np.flatnonzero(beats[name])
        firsts[name] = int(beats["offset"][nonzero[0]]) if len(nonzero) else 0
    totals["tx_dropped"] -= at_join
    return hub_count_problems(totals, firsts), at_join


HUB_COUNTS = (
    ("rx_bad", "bad frames from the host (the host-to-hub direction)"),
    ("tx_dropped", "frames dropped for lack of buffer (a stalled link)"),
)


def hub_count_problems(totals: dict[str, int], firsts: dict[str, int]) -> list[Found]:
    """The hub's own counts (HEARTBEAT, :data:`HUB_COUNTS`) that are not zero: their totals
    over the boots, each at its first beat that counted one."""
    return [
        Found(f"the hub counted {totals[name]} {what}", totals[name], [firsts[name]])
        for name, what in HUB_COUNTS
        if totals[name]
    ]


def _stall(per_type: dict[int, dict[str, Any]], frames: np.ndarray, timing: Timing) -> Found | None:
    """The longest HEARTBEAT silence (1 Hz), unless it ended at a join (nobody read)."""
    beats = per_type.get(0, {}).get("HEARTBEAT")
    if not beats:
        return None
    at = np.searchsorted(frames["offset"], beats["max_gap_at"] or 0)
    return stall_problem(beats, float(timing.t_s[at]) if len(frames) else 0.0, timing)


def stall_problem(beats: dict[str, Any], end_s: float, timing: Timing) -> Found | None:
    """The HEARTBEAT type's entry as a stall (``end_s``: the time of the beat after its
    longest silence), unless the silence is short or ended at a join (nobody read)."""
    if beats["max_gap_s"] <= HEARTBEAT_GAP_S or end_s <= timing.joined_until_s:
        return None
    return Found(f"no HEARTBEAT for {beats['max_gap_s']:.1f} s: the link stalled", 1,
                 [beats["max_gap_at"]])  # fmt: skip


def capture_edges(
    size: int, tail: int, joined: int, continues: bool
) -> tuple[list[Found], list[str]]:
    """A capture's ends: a frame the recording cut (a problem, unless the next part holds the
    rest) and a frame the host joined in the middle of (ICD §1: expected, a note).

    ``size``: the capture's bytes; ``tail``: those after its last delimiter; ``joined``: the
    length of a first frame the host joined in the middle of (:func:`joined_bytes`), or 0.
    """
    problems, notes = [], []
    if tail and continues:
        notes.append(f"the capture ends inside a frame ({plural(tail, 'byte')}): the next part "
                     "holds the rest")  # fmt: skip
    elif tail:
        what = f"the capture ends inside a frame: its last {plural(tail, 'byte')} have no delimiter"
        problems.append(Found(what + " (cut)", 1, [size - tail]))
    if joined:
        notes.append(f"the capture starts inside a frame ({plural(joined, 'byte')} before the "
                     "first delimiter): the host joined mid-frame (ICD §1), not a bad frame")  # fmt: skip
    return problems, notes


def timing_notes(timing: Timing) -> list[str]:
    """What a reader of a report on host times should know: the speed it was scaled by, a
    join's backlog."""
    notes = []
    if timing.speed != 1.0:
        notes.append(f"the hub's clock ran {timing.speed:g} times the host's: a table played at "
                     f"{timing.speed:g}x (the virtual table); host times scaled by {timing.speed:g}")  # fmt: skip
    if timing.backlog.any():
        n = int(timing.backlog.sum())
        notes.append(f"joined a running hub: the first {plural(n, 'frame')} "
                     f"({timing.backlog_hub_s:.1f} s of hub time) had queued before the "
                     "recording began: timed by the hub's clock, left out of latency and drift")  # fmt: skip
    return notes


def trust_notes(stats: Any, notes: list[str]) -> dict[str, Any]:
    """ICD §9's counts of the decoder's totals, and a note when a seq was reused."""
    if stats.conflicts:
        notes.append(f"seq conflicts (a seq reused with other content: a forged frame?) by node "
                     f"{stats.conflicts}: firmware-host decode marks them SEQ CONFLICT")  # fmt: skip
    if stats.over_rate:
        notes.append(f"frames beyond their node's rate limit (a node flooding the link), dropped, "
                     f"by node {stats.over_rate}: firmware-host decode marks them OVER RATE")  # fmt: skip
    return {"signed": stats.signed, "conflicts": stats.conflicts, "over_rate": stats.over_rate}


def bad_frames(found: dict[int, Listing], problems: list[Found]) -> dict[str, dict[str, Any]]:
    """The report's bad frames by reason, from their (offset, time) listing per status; each
    reason a problem, in status order."""
    bad: dict[str, dict[str, Any]] = {}
    for status in sorted(found):
        listing = found[status]
        reason = STATUS_NAMES[status]
        bad[reason] = listing.entry("offsets", "times_s")
        problems.append(found_at(f"{plural(listing.count, 'bad frame')} ({reason})", listing))
    return bad


def found_at(what: str, listing: Listing) -> Found:
    """A problem at a listing's offsets (its first column), as many as it counts."""
    return Found(what, listing.count, listing.column(0), listing.count)


def reboot_problems(reboots: Listing) -> list[Found]:
    if not reboots.count:
        return []
    return [found_at(f"hub rebooted {plural(reboots.count, 'time')}", reboots)]


def reboot_keys(reboots: Listing) -> dict[str, Any]:
    """The report's ``reboots``, its first :data:`LISTED`, and when there are more, their
    count and how many are listed (a list has no room for keys of its own; a report under
    the cap stays as it was)."""
    listed = [{"offset": o, "boot_id": i} for o, i in reboots.rows]
    return {"reboots": listed, **count_keys("reboots", len(listed), reboots.count)}


def link_stats(
    capture: np.ndarray, rx: np.ndarray | None = None, *, continues: bool = False
) -> dict[str, Any]:
    """Everything ``stats`` reports, JSON-ready; ``problems`` names what is wrong in words,
    ``notes`` what a reader should know (a speed, a join, a frame cut at a part's end).

    ``continues``: the capture is a recording part with a next part (a frame cut at its end
    goes on there).
    """
    decoded = decode_capture(capture)
    frames = decoded.frames
    starts = boot_starts(decoded)
    reboots = _reboots(decoded, starts)
    boot = np.searchsorted(starts, frames["offset"], side="right")
    timing = _timing(decoded, capture, rx)
    t_s, has_host = timing.t_s, timing.host
    good = np.isin(frames["status"], (OK, DUPLICATE, UNKNOWN))
    span = float(np.ptp(t_s[good])) if good.any() else 0.0
    ends = np.flatnonzero(capture == 0)
    tail = len(capture) - (int(ends[-1]) + 1 if len(ends) else 0)
    joined = joined_bytes(frames[0], int(capture[0])) if len(frames) else 0
    problems, notes = capture_edges(len(capture), tail, joined, continues)
    notes += timing_notes(timing)
    trust = trust_notes(decoded.stats, notes)
    is_bad = frames["status"] >= BAD_COBS
    if joined:
        is_bad[0] = False
    found_bad = {}
    for status in np.unique(frames["status"][is_bad]).tolist():
        mine = is_bad & (frames["status"] == status)
        found_bad[status] = Listing.of(frames["offset"][mine].astype(np.int64), t_s[mine])
    bad = bad_frames(found_bad, problems)
    problems += reboot_problems(reboots)
    hub_rate = HubRate(decoded, timing, boot) if has_host else None
    host_ppm = _host_ppm(hub_rate) if hub_rate else Listing()
    clocks, windows = _clock_windows(decoded, starts, hub_rate, t_s)
    retx = frames[good & ((frames["flags"] & FLAG_RETRANSMISSION) != 0)]
    per_type = _per_type(frames, t_s, boot, span)
    counted, dropped_at_join = _hub_counts(decoded, boot, timing)
    return report(
        Findings(
            timing=timing,
            span=span,
            frames=int((frames["status"] == OK).sum()),
            host_ppm=host_ppm,
            bad=bad,
            reboots=reboots,
            per_type=per_type,
            clocks=clocks,
            windows=windows,
            lost=_lost(frames[good], t_s[good], timing.joined_until_s),
            retx=_retransmissions(retx),
            latency=_latency(frames, timing, boot) if has_host else {},
            problems=problems,
            notes=notes,
            counted=counted,
            dropped_at_join=dropped_at_join,
            stall=_stall(per_type, frames, timing),
            trust=trust,
        )
    )


def _host_ppm(hub_rate: HubRate) -> Listing:
    """The hub's rate against the host over each boot: the first :data:`LISTED` boots', and
    how many boots have one (forged reboots of nine hub frames each have one a boot)."""
    boots = list(hub_rate.boots)[:LISTED]
    rates = np.array([hub_rate.ppm(b) for b in boots]).reshape(-1, 2)
    listing = Listing.of(np.array(boots, np.int64), *rates.T)
    listing.count = len(hub_rate.boots)
    return listing


def _retransmissions(retx: np.ndarray) -> dict[int, Listing]:
    """Per node, its retransmissions' offsets (frame-table rows)."""
    return {n: Listing.of(retx["offset"][retx["node"] == n].astype(np.int64))
            for n in np.unique(retx["node"]).tolist()}  # fmt: skip


@dataclass
class Findings:
    """What the report is made of, however the capture was read (whole or streamed,
    :mod:`.statstream`): the figures per node and type, and the problems and notes found
    before the per-node ones (the capture's edges, its timing, bad frames, reboots)."""

    timing: Timing
    span: float
    frames: int
    host_ppm: Listing  # boot, the hub's rate against the host and its ± over it, of each boot
    bad: dict[str, dict[str, Any]]
    reboots: Listing  # offset, boot_id of each boot after the first
    per_type: dict[int, dict[str, Any]]
    clocks: dict[int, np.ndarray]  # per node, a row per drift window listed (window_rows)
    windows: dict[int, int]  # per node, its drift windows, listed or not
    lost: dict[int, Lost]
    retx: dict[int, Listing]  # per node, the offsets of its retransmissions
    latency: dict[int, dict[str, float]]
    problems: list[Found]
    notes: list[str]
    counted: list[Found]  # the hub's own counts (_hub_counts)
    dropped_at_join: int
    stall: Found | None
    trust: dict[str, Any]


def report(found: Findings) -> dict[str, Any]:
    """The JSON-ready report of ``stats`` from its findings, the per-node problems named."""
    timing, has_host = found.timing, found.timing.host
    problems, notes = list(found.problems), list(found.notes)
    clocks, lost, latency = found.clocks, found.lost, found.latency
    nodes: dict[str, Any] = {}
    lost_at_join: dict[int, int] = {}
    for node in sorted(set(found.per_type) | set(clocks) | set(lost)):
        label = node_label(node)
        entry: dict[str, Any] = {
            "name": NODE_NAMES.get(node, "?"),
            "types": found.per_type.get(node, {}),
        }
        entry["lost"], entry["lost_at_join"] = lost.get(node, NO_LOSS)
        if entry["lost_at_join"]:
            lost_at_join[node] = entry["lost_at_join"]
        gaps = entry["lost"]
        if gaps["count"]:
            what = f"{label}: {plural(gaps['count'], 'frame')} lost (seq gaps)"
            places = gaps.get("gaps", len(gaps["offsets"]))
            problems.append(Found(what, gaps["count"], gaps["offsets"], places))
        mine = found.retx.get(node, Listing())
        entry["retransmissions"] = mine.entry("offsets")
        if mine.count:
            problems.append(found_at(f"{label}: {plural(mine.count, 'retransmission')}", mine))
        if node in clocks:
            entry["clock"] = _clock_entry(clocks[node], node, has_host, found.windows[node])
            problem = _drift_problem(label, entry["clock"], has_host)
            if problem:
                problems.append(problem)
        if node in latency:
            entry["latency"] = latency[node]
        nodes[str(node)] = entry
    problems += found.counted
    if found.stall:
        problems.append(found.stall)
    parts = []
    if lost_at_join:
        parts.append("seq gaps at the join ("
                     + ", ".join(f"{node_label(n)} {c}" for n, c in lost_at_join.items()) + ")")  # fmt: skip
    if found.dropped_at_join:
        parts.append(f"the hub's count of {plural(found.dropped_at_join, 'frame')} dropped for "
                     "want of buffer")  # fmt: skip
    if parts:
        notes.append(f"before the join nobody read the port: {' and '.join(parts)} are not the "
                     "link's")  # fmt: skip
    if any(found.windows[n] > len(c) for n, c in clocks.items()):
        notes.append(f"a node with more than {WINDOWS_LISTED} drift windows lists and figures "
                     f"its clock from its first {WINDOWS_LISTED} (\"windows_count\" in --json: all)")  # fmt: skip
    if found.host_ppm.count > len(found.host_ppm.rows):
        notes.append(f"the hub's rate against the host's clock is listed for its first {LISTED} "
                     f"boots (\"hub_vs_host_count\" in --json: all)")  # fmt: skip
    if any(len(p.offsets) < p.total for p in problems):
        notes.append(f"a finding with more than {LISTED} offsets lists only its first {LISTED} "
                     "(with their times; \"listed\" in --json says how many): its count is of all")  # fmt: skip
    return {
        "clock": "host" if has_host else "hub",
        "speed": timing.speed,
        "span_s": found.span,
        "frames": found.frames,
        **hub_vs_host_keys(found.host_ppm),
        "backlog_frames": int(timing.backlog.sum()),
        "bad": found.bad,
        **reboot_keys(found.reboots),
        "nodes": nodes,
        "notes": notes,
        "problems": [p.entry() for p in problems],
        **{k: v for k, v in found.trust.items() if v},  # issue 29: only when there are any
    }


def hub_vs_host_keys(host_ppm: Listing) -> dict[str, Any]:
    """The report's hub-against-host rates by boot, the first :data:`LISTED` boots', and when
    there are more, how many boots have one and how many are listed (as ``reboots``)."""
    rows = host_ppm.rows
    return {"hub_vs_host_ppm": {str(b): v for b, v, _ in rows},
            "hub_vs_host_uncertainty_ppm": {str(b): u for b, _, u in rows},
            **count_keys("hub_vs_host", len(rows), host_ppm.count)}  # fmt: skip


NO_LOSS: Lost = {"count": 0, "offsets": [], "times_s": [], "missing": []}, 0


def _clock_entry(series: np.ndarray, node: int, has_host: bool, windows: int) -> dict[str, Any]:
    """A node's clock: the median window's rate, its uncertainty (the widest window's: the
    median of figures each within its own bound of the truth is within the widest), the
    worst window, the datasheet limit, every window listed (``windows`` in all)."""
    worst = int(np.argmax(np.abs(series[:, 2])))
    capped = count_keys("windows", len(series), windows)
    return {
        "reference": "host" if has_host else "hub",
        "ppm": float(np.median(series[:, 2])),
        "uncertainty_ppm": float(series[:, 3].max()),
        "worst_ppm": float(series[worst, 2]),
        "worst_uncertainty_ppm": float(series[worst, 3]),
        "limit_ppm": float(MAX_PPM[node] if has_host else MAX_PPM[node] + MAX_PPM[0]),
        "windows": series.tolist(),  # [t_s, offset_us, ppm, ±ppm]
        **capped,
    }


def _drift_problem(label: str, clock: dict[str, Any], has_host: bool) -> Found | None:
    """A rate beyond the datasheet by more than the margin and its own uncertainty."""
    worst, limit = clock["worst_ppm"], clock["limit_ppm"]
    if abs(worst) - clock["worst_uncertainty_ppm"] <= limit + PPM_MARGIN:
        return None
    against = "" if has_host else " against the hub"
    why = "datasheet" if has_host else "datasheet, both crystals"
    what = f"{label}: drift {worst:+.0f} ±{clock['worst_uncertainty_ppm']:.1f} ppm{against}"
    return Found(f"{what}, {why} ±{limit:.0f}", 1)
