"""The timeline's Python edge: rows in stream order, rows out in hub-time order.

Rows arrive in stream order (:func:`.rows.to_rows`).  The kernels map every
node's clock onto the hub's (:mod:`.mapping`, :mod:`.clock_model`), follow
the hub's boots (:mod:`.epochs`) and release the rows the fusion needs in
hub-time order once no node can still precede them (:mod:`.release`); the
driver is :func:`.advance.advance`.  :class:`Timeline` keeps their state
between calls, carries what is still pending, and says in words what the
stream did (clock steps, inferred boots); :class:`Ordered` is one call's
release, held without copying rows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from protocol.catalogue import NODE_NAMES
from protocol.geometry import DEFAULT_TABLE, Table

from . import clock_model as cm
from .advance import advance
from .epochs import HELLO
from .rows import (
    C_EPOCH,
    C_HUB,
    C_STATE,
    C_TRACK,
    C_TYPE,
    CLOCK_STEP,
    CLOCK_TYPES,
    MAPPED,
    N_COLS,
    P0,
    RELEASED_TYPES,
    TRACK_ITEM,
    col,
    cols,
    type_of,
)
from .state import (
    BALL_UM,
    CLOCK_STEPS,
    EPOCH,
    INFERRED_BOOTS,
    LATE,
    NEWEST_T,
    OUTLIERS,
    OVERFLOW,
    REFUSED_SYNCS,
    RELEASED_N,
    RELEASED_UPTO,
    STRAY_HELLOS,
    SYN_A,
    SYN_EPOCH,
    SYN_HUB_T,
    SYN_TYPE,
    SYNTHETIC_N,
    TABLE_LENGTH_MM,
    TABLE_WIDTH_MM,
    UNSYNCED_DROPPED,
    Params,
    new_buffers,
    new_state,
)

_BOOT_ID = col("HELLO", "boot_id")
_NODES_PRESENT = col("HELLO", "nodes_present")
_LEN, _WID, _BALL = cols("HELLO", "table_length_mm", "table_width_mm", "ball_diameter_um")
#: boot_id of a boot the timeline inferred (a join, a reboot whose HELLO was lost)
INFERRED_BOOT = -1


@dataclass(frozen=True)
class TimelineParams:
    """Bounds of the ordered release and of plausibility (µs of hub time); from ICD §7."""

    lag_us: int = 31_000  # 30 ms arrival bound + margin for stamp jitter and mapping error
    slack_us: int = 2_000  # how far a node's own stamps may step back (sensor jitter)
    silence_us: int = 1_000_000  # four missed 4 Hz syncs
    unsynced_max_us: int = 1_000_000  # a row may wait this long for its node's first sync
    window_us: int = cm.WINDOW_US
    # A node's frame maps within [hub now - behind, hub now + ahead], hub now
    # being the newest hub frame: an event reaches the host <= 30 ms after it
    # happened and hub frames come >= 18 Hz (syncs), queued <= 30 ms.
    ahead_us: int = 200_000
    behind_us: int = 1_000_000
    hold_us: int = 2_000_000  # an implausible frame waits this long for its node's resync
    # A CLOCK_SYNC sample this far off its node's model (delays <= 5.4 ms,
    # drift 150 ppm) says the node's clock stepped, once a second one agrees.
    step_us: int = 20_000
    hub_back_us: int = 100_000  # hub frames are stamped at send; NODE_STATUS/ACK a little earlier
    hub_gap_us: int = 1_000_000  # a longer step of the hub clock waits for the next hub frame
    join_us: int = 500_000  # attached without a HELLO: nodes heard in this long make the boot

    def kernel(self) -> Params:
        """The bounds as the kernels take them (int64)."""
        return Params(**{name: np.int64(getattr(self, name)) for name in Params._fields})


class Ordered:
    """Rows released in hub-time order, with their tracker ball lists.

    Held without copying: ``index`` lists, in release order, rows of
    ``store`` (the rows the timeline was fed, timing columns filled) and,
    past its end, of ``synthetic`` (rows the timeline made).  ``rows`` and
    ``tracks`` materialise them for a reader that wants a plain table.
    """

    def __init__(
        self, store: np.ndarray, store_tracks: np.ndarray, synthetic: np.ndarray, index: np.ndarray
    ) -> None:
        self.store, self.store_tracks, self.synthetic, self.index = (
            store,
            store_tracks,
            synthetic,
            index,
        )

    @classmethod
    def of(cls, rows: np.ndarray, tracks: np.ndarray) -> Ordered:
        return cls(rows, tracks, _NO_ROWS, np.arange(len(rows)))

    def __len__(self) -> int:
        return len(self.index)

    @cached_property
    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.store)
        real = self.index < n
        out = np.empty((len(self.index), N_COLS), np.int64)
        out[real] = self.store[self.index[real]]
        out[~real] = self.synthetic[self.index[~real] - n]
        has = out[:, C_TRACK] >= 0
        tracks = self.store_tracks[out[has, C_TRACK]] if has.any() else _EMPTY_TRACKS
        out[has, C_TRACK] = np.arange(int(has.sum()))
        return out, tracks

    @property
    def rows(self) -> np.ndarray:
        """(n, N_COLS) int64, release order."""
        return self._table[0]

    @property
    def tracks(self) -> np.ndarray:
        """(m, 16, 6) uint8 wire bytes; ``rows[:, C_TRACK]`` indexes it."""
        return self._table[1]


_MIN, _MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
_EMPTY_TRACKS = np.zeros((0, 16, TRACK_ITEM), np.uint8)
_NO_ROWS = np.zeros((0, N_COLS), np.int64)


def concat(a: Ordered, b: Ordered) -> Ordered:
    """Two consecutive releases as one."""
    if not len(b):
        return a
    if not len(a):
        return b
    b_rows = b.rows.copy()
    b_rows[b_rows[:, C_TRACK] >= 0, C_TRACK] += len(a.tracks)
    return Ordered.of(np.concatenate((a.rows, b_rows)), np.concatenate((a.tracks, b.tracks)))


class HostClock:
    """Hub time now, from the host's receive clock: a sliding minimum of the link latency.

    ``host_us - newest hub stamp`` is the clock offset plus that frame's
    latency; its minimum over a few seconds is the offset plus the fastest
    path, so ``host_us - minimum`` never runs ahead of the hub (safe for
    release) and lags it by the fastest frame's latency (~1 ms).  The
    window is short so the two crystals' drift (100 ppm: 0.5 ms in 5 s)
    does not matter.
    """

    def __init__(self, window_us: int = 5_000_000) -> None:
        self.window_us = window_us
        self._samples: deque[tuple[int, int]] = deque()  # (host_us, offset), offsets increasing

    def observe(self, host_us: int, hub_us: int) -> None:
        offset = host_us - hub_us
        while self._samples and self._samples[-1][1] >= offset:
            self._samples.pop()
        self._samples.append((host_us, offset))
        while self._samples[0][0] < host_us - self.window_us:
            self._samples.popleft()

    def hub_now(self, host_us: int) -> int | None:
        return host_us - self._samples[0][1] if self._samples else None


class Timeline:
    """Stateful front of :func:`advance`: feed rows in stream order, get them in hub order.

    >>> tl = Timeline()
    >>> out = tl.feed_rows(rows, tracks)   # doctest: +SKIP
    >>> rest = tl.flush()                  # end of a capture: everything  # doctest: +SKIP
    """

    def __init__(self, params: TimelineParams | None = None, table: Table = DEFAULT_TABLE) -> None:
        self.params = params or TimelineParams()
        keep = np.zeros(256, np.bool_)
        for name in RELEASED_TYPES:
            keep[type_of(name)] = True
        table_mm = (round(table.length_mm), round(table.width_mm), round(table.ball_mm * 1000))
        self.state = new_state(self.params.kernel(), keep, table_mm)
        self.clocks = self.state.clocks  # each node's clock model (linkwatch shows them)
        self._rows = np.zeros((0, N_COLS), np.int64)
        self._tracks = _EMPTY_TRACKS
        self._syn = np.zeros((0, 5), np.int64)
        self._host = HostClock()
        #: what the stream did that a person should hear of once (clock steps, inferred boots)
        self.notices: list[str] = []

    @property
    def hub_now(self) -> int:
        """The newest hub time the stream has shown (µs)."""
        return int(self.state.release[NEWEST_T])

    def hub_time_at(self, host_ns: int | None) -> int:
        """The hub time of a host instant (the newest hub stamp without host times)."""
        hub = None if host_ns is None else self._host.hub_now(host_ns // 1000)
        return self.hub_now if hub is None else hub

    @property
    def released_upto(self) -> int:
        """Hub time up to which every row has been released (nothing earlier can follow)."""
        release = self.state.release
        return int(min(release[RELEASED_UPTO], release[NEWEST_T]))

    @property
    def counters(self) -> dict[str, int]:
        """Running totals; every one but ``epochs`` counts something strange in the stream."""
        counted = self.state.counters
        return {
            "epochs": int(self.state.epoch[EPOCH]) + 1,
            "late": int(counted[LATE]),
            "unsynced_dropped": int(counted[UNSYNCED_DROPPED]),
            "refused_syncs": int(counted[REFUSED_SYNCS]),
            "outliers": int(counted[OUTLIERS]),
            "stray_hellos": int(counted[STRAY_HELLOS]),
            "clock_steps": int(counted[CLOCK_STEPS]),
            "inferred_boots": int(counted[INFERRED_BOOTS]),
            "overflow": int(counted[OVERFLOW]),
        }

    def feed_rows(
        self, rows: np.ndarray, tracks: np.ndarray, host_rx_ns: int | None = None
    ) -> Ordered:
        """Rows of new frames (stream order, :func:`rows.to_rows`): what they release.

        The timing columns of ``rows`` are filled in place.

        ``host_rx_ns`` (live path: the host's monotonic clock when the chunk
        was read) lets the release follow the host's clock instead of
        waiting for the next frame's stamp; it changes when rows come out,
        never which rows or in what order.
        """
        out = self._advance(rows, tracks, _MIN)
        if host_rx_ns is None:
            return out
        if len(rows):
            self._host.observe(host_rx_ns // 1000, self.hub_now)
        return concat(out, self.tick(host_rx_ns))

    def tick(self, host_now_ns: int) -> Ordered:
        """Live: release what the host's clock says no frame can precede any more."""
        hub_now = self._host.hub_now(host_now_ns // 1000)
        if hub_now is None:
            return Ordered.of(_NO_ROWS, _EMPTY_TRACKS)
        return self._advance(_NO_ROWS, _EMPTY_TRACKS, hub_now - int(self.params.lag_us))

    def flush(self) -> Ordered:
        """End of a capture: release everything still pending."""
        return self._advance(_NO_ROWS, _EMPTY_TRACKS, _MAX)

    def _advance(self, new_rows: np.ndarray, new_tracks: np.ndarray, flush_upto: int) -> Ordered:
        carried = len(self._rows)
        # the kernel fills the timing columns in place: the caller's rows are ours now
        rows = np.concatenate((self._rows, new_rows)) if carried else new_rows
        if len(new_rows) and len(self._tracks):
            rows[carried:, C_TRACK] = np.where(
                new_rows[:, C_TRACK] >= 0, new_rows[:, C_TRACK] + len(self._tracks), -1
            )
        tracks = np.concatenate((self._tracks, new_tracks)) if len(self._tracks) else new_tracks
        n_syn = len(self._syn)
        buffers = new_buffers(len(rows), n_syn + _SYN_PER_ROW * len(new_rows) + _SYN_PER_CALL)
        buffers.synthetic[:n_syn] = self._syn
        pending = np.empty(len(buffers.released), np.int64)
        npend = advance(rows, carried, self.state, buffers, n_syn, np.int64(flush_upto), pending)
        n = len(rows)
        syn = buffers.synthetic[: int(buffers.counts[SYNTHETIC_N])]
        self._note(syn[n_syn:])
        released = buffers.released[: buffers.counts[RELEASED_N]].copy()
        out = Ordered(rows, tracks, self._made(syn), released)
        keep = np.sort(pending[:npend])
        real, synthetic = keep[keep < n], keep[keep >= n] - n
        self._rows = rows[real]
        self._syn = syn[synthetic]
        track_idx = self._rows[:, C_TRACK]
        held = track_idx >= 0
        self._tracks = tracks[track_idx[held]] if held.any() else _EMPTY_TRACKS
        self._rows[held, C_TRACK] = np.arange(int(held.sum()))
        return out

    def _note(self, made: np.ndarray) -> None:
        """Clock steps and inferred boots, in words, for the daemon's log."""
        for hub, kind, a, _epoch, b in made.tolist():
            if kind == CLOCK_STEP:
                self.notices.append(
                    f"{NODE_NAMES[a]} clock stepped {b / 1e6:+.3f} s at hub {hub} µs; resynced"
                )
            elif kind == HELLO:
                what = (
                    "a reboot whose HELLO was lost"
                    if self.state.epoch[EPOCH]
                    else "joined mid-stream"
                )
                self.notices.append(f"no HELLO: {what}; a boot was inferred at hub {hub} µs")

    def _made(self, syn: np.ndarray) -> np.ndarray:
        """Synthetic rows (NODE_SILENT, NODE_BACK, CLOCK_STEP, an inferred boot) as rows."""
        made = np.zeros((len(syn), N_COLS), np.int64)
        made[:, C_HUB] = syn[:, SYN_HUB_T]
        made[:, C_TYPE] = syn[:, SYN_TYPE]
        made[:, P0] = syn[:, SYN_A]
        made[:, C_EPOCH] = syn[:, SYN_EPOCH]
        made[:, C_TRACK] = -1
        made[:, C_STATE] = MAPPED
        boot = syn[:, SYN_TYPE] == HELLO
        if boot.any():
            made[boot, P0] = 0
            made[boot, _BOOT_ID] = INFERRED_BOOT
            made[boot, _NODES_PRESENT] = syn[boot, SYN_A]
            made[boot, _LEN] = self.state.epoch[TABLE_LENGTH_MM]
            made[boot, _WID] = self.state.epoch[TABLE_WIDTH_MM]
            made[boot, _BALL] = self.state.epoch[BALL_UM]
        return made


#: Synthetic rows one new row can cause at most (a NODE_BACK or a boot, a
#: CLOCK_STEP, a NODE_SILENT after a NODE_BACK), and one call besides.
_SYN_PER_ROW = 3
_SYN_PER_CALL = 2 * cm.N_NODES + 4


__all__ = [  # the timing core's interface, with the row types it releases (rows.py)
    "CLOCK_TYPES",
    "INFERRED_BOOT",
    "RELEASED_TYPES",
    "HostClock",
    "Ordered",
    "Timeline",
    "TimelineParams",
    "concat",
]
