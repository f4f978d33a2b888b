"""Epochs, clock mapping and the ordered release: one kernel for batch and live.

Rows arrive in stream order.  For each one the kernel

1. starts a new epoch on a HELLO with a new ``boot_id`` (ICD §3: every clock
   and counter resets): what is pending is released, the clock models are
   cleared, and hub time is shifted so it keeps increasing;
2. unwraps the node clock and ``seq``; a CLOCK_SYNC feeds its peer's clock
   model (:mod:`clock_model`);
3. maps the row's node time onto hub time with the model *as of this row*
   (so the result never depends on how the stream was cut into chunks); a
   row of a node with no sync yet waits for the node's first one;
4. pushes the rows the fusion needs into a heap keyed by (hub time, stream
   position), and releases every row no node can still precede: hub time
   ``<= min over live nodes of max(latest own frame - slack, newest hub time
   - lag)``.  ``lag`` covers the datasheet's 30 ms arrival bound, so a node
   that says nothing never holds the others up; a node with no frame *about*
   it (own frames or its CLOCK_SYNC) for ``silence`` is declared silent (a
   synthetic ``NODE_SILENT`` row) and dropped from the watermark until it
   is heard again (``NODE_BACK``).

The batch path is the same kernel fed once with everything, then flushed;
the live path feeds it chunk by chunk.  Releases are decided after every
row, so both give the same rows in the same order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from . import clock_model as cm
from .rows import (
    C_ARRIVE,
    C_EPOCH,
    C_HUB,
    C_NODE,
    C_NODE_T,
    C_SEQ,
    C_SEQ_U,
    C_STATE,
    C_TRACK,
    C_TRAW,
    C_TYPE,
    C_UNC,
    MAPPED,
    N_COLS,
    NODE_BACK,
    NODE_SILENT,
    P0,
    TRACK_ITEM,
    UNSYNCED,
    col,
    type_of,
)
from .unwrap import unwrap_step

# Scalar state
(
    S_EPOCH,
    S_BOOT,
    S_BASE,
    S_GLOBAL,
    S_LAST_REL,
    S_LATE,
    S_UNSYNCED_DROPPED,
    S_REFUSED_SYNC,
    S_HELLO,
    S_UPTO,
) = range(10)
N_STATE = 10
# Per-node state columns
NS_T, NS_HAS_T, NS_SEQ, NS_HAS_SEQ, NS_OWN, NS_SEEN, NS_PRESENT, NS_OFFLINE, NS_SILENT = range(9)
N_NODE_STATE = 9
# Parameters
(PR_LAG, PR_SLACK, PR_SILENCE, PR_UNSYNCED_MAX, PR_WINDOW) = range(5)

HELLO, CLOCK_SYNC, NODE_STATUS = type_of("HELLO"), type_of("CLOCK_SYNC"), type_of("NODE_STATUS")
_BOOT_ID = col("HELLO", "boot_id")
_NODES_PRESENT = col("HELLO", "nodes_present")
_PEER = col("CLOCK_SYNC", "peer")
_PEER_T = col("CLOCK_SYNC", "peer_t_us")
_STATUS_PEER = col("NODE_STATUS", "peer")
_STATUS_CODE = col("NODE_STATUS", "code")
OFFLINE_CODE = 1

#: The fusion's inputs; the rest only feed the clock models and the watermark.
RELEASED_TYPES = (
    "HELLO",
    "NODE_STATUS",
    "CUE_CONTACT",
    "CUSHION_HIT",
    "POCKET_DROP",
    "BALL_TRACK",
    "LINE_CROSS",
    "BALL_CLICK",
    "KEYPAD",
)


@dataclass(frozen=True)
class TimelineParams:
    """Bounds of the ordered release (µs of hub time); defaults from ICD §7."""

    lag_us: int = 31_000  # 30 ms arrival bound + margin for stamp jitter and mapping error
    slack_us: int = 2_000  # how far a node's own stamps may step back (sensor jitter)
    silence_us: int = 1_000_000  # four missed 4 Hz syncs
    unsynced_max_us: int = 1_000_000  # a row may wait this long for its node's first sync
    window_us: int = cm.WINDOW_US

    def array(self) -> np.ndarray:
        return np.array(
            [self.lag_us, self.slack_us, self.silence_us, self.unsynced_max_us, self.window_us],
            np.int64,
        )


@njit(cache=True)
def _less(t1: np.int64, i1: np.int64, t2: np.int64, i2: np.int64) -> bool:
    return t1 < t2 or (t1 == t2 and i1 < i2)


@njit(cache=True)
def _push(ht: np.ndarray, hi: np.ndarray, n: int, t: np.int64, i: np.int64) -> int:
    j = n
    ht[j] = t
    hi[j] = i
    while j > 0:
        p = (j - 1) // 2
        if _less(ht[j], hi[j], ht[p], hi[p]):
            ht[j], ht[p] = ht[p], ht[j]
            hi[j], hi[p] = hi[p], hi[j]
            j = p
        else:
            break
    return n + 1


@njit(cache=True)
def _pop(ht: np.ndarray, hi: np.ndarray, n: int) -> int:
    n -= 1
    ht[0] = ht[n]
    hi[0] = hi[n]
    j = 0
    while True:
        a = 2 * j + 1
        b = a + 1
        m = j
        if a < n and _less(ht[a], hi[a], ht[m], hi[m]):
            m = a
        if b < n and _less(ht[b], hi[b], ht[m], hi[m]):
            m = b
        if m == j:
            break
        ht[j], ht[m] = ht[m], ht[j]
        hi[j], hi[m] = hi[m], hi[j]
        j = m
    return n


@njit(cache=True)
def _release(rows, ht, hi, nh, rel, nrel, st, upto):
    """Pop every heap entry at or before ``upto`` into ``rel``."""
    if upto > st[S_UPTO]:
        st[S_UPTO] = min(upto, st[S_GLOBAL])  # "everything" means: all that has arrived
    while nh > 0 and ht[0] <= upto:
        if ht[0] < st[S_LAST_REL]:
            st[S_LATE] += 1
        else:
            st[S_LAST_REL] = ht[0]
        rel[nrel] = hi[0]
        nrel += 1
        nh = _pop(ht, hi, nh)
    return nh, nrel


@njit(cache=True)
def _watermark(st, ns, params):
    floor = st[S_GLOBAL] - params[PR_LAG]
    wm = np.iinfo(np.int64).max
    for k in range(ns.shape[0]):
        if ns[k, NS_PRESENT] == 0 or ns[k, NS_OFFLINE] != 0 or ns[k, NS_SILENT] != 0:
            continue
        bound = max(ns[k, NS_OWN] - params[PR_SLACK], floor)
        wm = min(wm, bound)
    return min(wm, st[S_GLOBAL]) if wm != np.iinfo(np.int64).max else floor


@njit(cache=True)
def _seen(rows, st, ns, syn, nsyn, ht, hi, nh, k, hub):
    """A frame about node k at hub time ``hub``: it is alive; say so if it was declared silent."""
    ns[k, NS_SEEN] = max(ns[k, NS_SEEN], hub)
    if ns[k, NS_SILENT] != 0:
        ns[k, NS_SILENT] = 0
        s = len(rows) + nsyn
        syn[nsyn, 0] = hub
        syn[nsyn, 1] = NODE_BACK
        syn[nsyn, 2] = k
        syn[nsyn, 3] = st[S_EPOCH]
        nsyn += 1
        nh = _push(ht, hi, nh, hub, s)
    return nsyn, nh


@njit(cache=True)
def _unwrap(ns, node, value, has, raw, bits):
    """One more reading of a node's wrapping counter, unwrapped onto its running value."""
    if ns[node, has] == 0:
        ns[node, value] = raw
        ns[node, has] = 1
    else:
        ns[node, value] = unwrap_step(ns[node, value], raw, bits)
    return ns[node, value]


@njit(cache=True)
def advance(
    rows: np.ndarray,
    n_carried: int,
    keep: np.ndarray,
    st: np.ndarray,
    ns: np.ndarray,
    clk: cm.ClockArrays,
    params: np.ndarray,
    syn: np.ndarray,
    n_syn_carried: int,
    flush_upto: np.int64,
    rel: np.ndarray,
    pending: np.ndarray,
) -> tuple[int, int, int]:
    """Process new rows (after ``n_carried`` carried ones); fill ``rel`` in release order.

    Indices ``>= len(rows)`` in ``rel``/``pending`` name synthetic rows
    ``syn[i - len(rows)]`` = (hub time, type, node, epoch).  Returns (released,
    pending, synthetic rows in ``syn``).
    """
    n = len(rows)
    cap = n + syn.shape[0]
    ht = np.empty(cap, np.int64)
    hi = np.empty(cap, np.int64)
    nh = 0
    nrel = 0
    nsyn = n_syn_carried
    waiting = np.empty(n, np.int64)  # rows waiting for their node's first sync
    nw = 0
    for i in range(n_carried):
        if rows[i, C_STATE] == MAPPED:
            nh = _push(ht, hi, nh, rows[i, C_HUB], i)
        else:
            waiting[nw] = i
            nw += 1
    for s in range(n_syn_carried):
        nh = _push(ht, hi, nh, syn[s, 0], n + s)

    for i in range(n_carried, n):
        node = rows[i, C_NODE]
        mtype = rows[i, C_TYPE]
        if node >= ns.shape[0]:
            continue  # host frames echoed back: no table clock
        if mtype == HELLO and (st[S_HELLO] == 0 or rows[i, _BOOT_ID] != st[S_BOOT]):
            # a new boot: release everything of the old epoch, reset every clock
            nh, nrel = _release(rows, ht, hi, nh, rel, nrel, st, np.iinfo(np.int64).max)
            st[S_UNSYNCED_DROPPED] += nw
            nw = 0
            if st[S_HELLO] != 0 or st[S_GLOBAL] != 0:
                st[S_EPOCH] += 1
            st[S_HELLO] = 1
            st[S_BOOT] = rows[i, _BOOT_ID]
            ns[:, :] = 0
            clk.ring_len[:] = 0
            clk.ring_start[:] = 0
            clk.fit_i[:, :] = 0
            present = rows[i, _NODES_PRESENT] | 1
            for k in range(ns.shape[0]):
                ns[k, NS_PRESENT] = (present >> k) & 1
            raw = rows[i, C_TRAW]
            st[S_BASE] = max(0, st[S_GLOBAL] + 1 - raw) if st[S_EPOCH] > 0 else 0
        rows[i, C_NODE_T] = _unwrap(ns, node, NS_T, NS_HAS_T, rows[i, C_TRAW], 32)
        rows[i, C_SEQ_U] = _unwrap(ns, node, NS_SEQ, NS_HAS_SEQ, rows[i, C_SEQ], 16)
        rows[i, C_EPOCH] = st[S_EPOCH]
        rows[i, C_ARRIVE] = st[S_GLOBAL]
        if st[S_HELLO] == 0:
            ns[node, NS_PRESENT] = 1  # attached mid-stream: present once heard

        if node == 0:
            hub = ns[0, NS_T] + st[S_BASE]
            rows[i, C_HUB] = hub
            rows[i, C_UNC] = 0
            rows[i, C_STATE] = MAPPED
            if mtype == CLOCK_SYNC:
                peer = rows[i, _PEER]
                if 0 < peer < ns.shape[0]:
                    _unwrap(ns, peer, NS_T, NS_HAS_T, rows[i, _PEER_T], 32)
                    if st[S_HELLO] == 0:
                        ns[peer, NS_PRESENT] = 1
                    first = clk.fit_i[peer, cm.FI_N] == 0
                    if not cm.add_sync(
                        clk,
                        peer,
                        ns[peer, NS_T],
                        ns[0, NS_T],
                        params[PR_WINDOW],
                    ):
                        st[S_REFUSED_SYNC] += 1
                    nsyn, nh = _seen(rows, st, ns, syn, nsyn, ht, hi, nh, peer, hub)
                    if first:
                        # rows that waited for this node's first sync
                        kept = 0
                        for w in range(nw):
                            r = waiting[w]
                            if rows[r, C_NODE] == peer:
                                h, u = cm.to_hub(clk, peer, rows[r, C_NODE_T])
                                rows[r, C_HUB] = h + st[S_BASE]
                                rows[r, C_UNC] = np.int64(np.ceil(u))
                                rows[r, C_STATE] = MAPPED
                                nh = _push(ht, hi, nh, rows[r, C_HUB], r)
                            else:
                                waiting[kept] = r
                                kept += 1
                        nw = kept
            elif mtype == NODE_STATUS:
                peer = rows[i, _STATUS_PEER]
                if 0 < peer < ns.shape[0]:
                    ns[peer, NS_OFFLINE] = 1 if rows[i, _STATUS_CODE] == OFFLINE_CODE else 0
                    if ns[peer, NS_OFFLINE] == 0:
                        ns[peer, NS_SEEN] = max(ns[peer, NS_SEEN], hub)
        elif clk.fit_i[node, cm.FI_N] > 0:
            h, u = cm.to_hub(clk, node, ns[node, NS_T])
            rows[i, C_HUB] = h + st[S_BASE]
            rows[i, C_UNC] = np.int64(np.ceil(u))
            rows[i, C_STATE] = MAPPED
        else:
            rows[i, C_STATE] = UNSYNCED

        if rows[i, C_STATE] == MAPPED:
            hub = rows[i, C_HUB]
            st[S_GLOBAL] = max(st[S_GLOBAL], hub)
            ns[node, NS_OWN] = max(ns[node, NS_OWN], hub)
            if node != 0:
                nsyn, nh = _seen(rows, st, ns, syn, nsyn, ht, hi, nh, node, hub)
            if keep[mtype]:
                nh = _push(ht, hi, nh, hub, i)
        elif keep[mtype]:
            waiting[nw] = i
            nw += 1

        # silence: no frame about a present node for the silence bound
        for k in range(1, ns.shape[0]):
            # counted from the first frame about it in this epoch: after a
            # reboot the hub re-enumerates its nodes for a while
            if (
                ns[k, NS_PRESENT] != 0
                and ns[k, NS_OFFLINE] == 0
                and ns[k, NS_SILENT] == 0
                and ns[k, NS_SEEN] != 0
                and st[S_GLOBAL] - ns[k, NS_SEEN] > params[PR_SILENCE]
            ):
                ns[k, NS_SILENT] = 1
                syn[nsyn, 0] = ns[k, NS_SEEN] + params[PR_SILENCE]
                syn[nsyn, 1] = NODE_SILENT
                syn[nsyn, 2] = k
                syn[nsyn, 3] = st[S_EPOCH]
                nh = _push(ht, hi, nh, syn[nsyn, 0], n + nsyn)
                nsyn += 1
        # rows whose node never synced are dropped after a bound
        if nw > 0:
            kept = 0
            for w in range(nw):
                r = waiting[w]
                if st[S_GLOBAL] - rows[r, C_ARRIVE] > params[PR_UNSYNCED_MAX]:
                    st[S_UNSYNCED_DROPPED] += 1
                else:
                    waiting[kept] = r
                    kept += 1
            nw = kept
        if nw == 0:
            nh, nrel = _release(rows, ht, hi, nh, rel, nrel, st, _watermark(st, ns, params))

    if flush_upto > np.iinfo(np.int64).min:
        if flush_upto == np.iinfo(np.int64).max:
            st[S_UNSYNCED_DROPPED] += nw
            nw = 0
        if nw == 0:
            nh, nrel = _release(rows, ht, hi, nh, rel, nrel, st, flush_upto)
    npend = 0
    for w in range(nw):
        pending[npend] = waiting[w]
        npend += 1
    # what stays in the heap, in heap order (re-pushed by key next time)
    for j in range(nh):
        pending[npend] = hi[j]
        npend += 1
    return nrel, npend, nsyn


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

    def __init__(self, params: TimelineParams | None = None) -> None:
        self.params = params or TimelineParams()
        self._params = self.params.array()
        self.clocks = cm.clock_arrays()
        self.state = np.zeros(N_STATE, np.int64)
        self.nodes = np.zeros((cm.N_NODES, N_NODE_STATE), np.int64)
        self._keep = np.zeros(256, np.bool_)
        for name in RELEASED_TYPES:
            self._keep[type_of(name)] = True
        self._rows = np.zeros((0, N_COLS), np.int64)
        self._tracks = _EMPTY_TRACKS
        self._syn = np.zeros((0, 4), np.int64)
        self._host = HostClock()

    @property
    def hub_now(self) -> int:
        """The newest hub time the stream has shown (µs)."""
        return int(self.state[S_GLOBAL])

    @property
    def released_upto(self) -> int:
        """Hub time up to which every row has been released (nothing earlier can follow)."""
        return int(min(self.state[S_UPTO], self.state[S_GLOBAL]))

    @property
    def counters(self) -> dict[str, int]:
        st = self.state
        return {
            "epochs": int(st[S_EPOCH]) + 1,
            "late": int(st[S_LATE]),
            "unsynced_dropped": int(st[S_UNSYNCED_DROPPED]),
            "refused_syncs": int(st[S_REFUSED_SYNC]),
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
        syn = np.zeros((n_syn + len(new_rows) + 2 * cm.N_NODES, 4), np.int64)
        syn[:n_syn] = self._syn
        rel = np.empty(len(rows) + len(syn), np.int64)
        pending = np.empty(len(rows) + len(syn), np.int64)
        nrel, npend, nsyn = advance(
            rows,
            carried,
            self._keep,
            self.state,
            self.nodes,
            self.clocks,
            self._params,
            syn,
            n_syn,
            np.int64(flush_upto),
            rel,
            pending,
        )
        n = len(rows)
        out = Ordered(rows, tracks, self._made(syn[:nsyn]), rel[:nrel].copy())
        keep = np.sort(pending[:npend])
        real, synthetic = keep[keep < n], keep[keep >= n] - n
        self._rows = rows[real]
        self._syn = syn[synthetic]
        track_idx = self._rows[:, C_TRACK]
        held = track_idx >= 0
        self._tracks = tracks[track_idx[held]] if held.any() else _EMPTY_TRACKS
        self._rows[held, C_TRACK] = np.arange(int(held.sum()))
        return out

    @staticmethod
    def _made(syn: np.ndarray) -> np.ndarray:
        """Synthetic rows (NODE_SILENT, NODE_BACK) as rows."""
        made = np.zeros((len(syn), N_COLS), np.int64)
        made[:, C_HUB] = syn[:, 0]
        made[:, C_TYPE] = syn[:, 1]
        made[:, P0] = syn[:, 2]
        made[:, C_EPOCH] = syn[:, 3]
        made[:, C_TRACK] = -1
        made[:, C_STATE] = MAPPED
        return made
