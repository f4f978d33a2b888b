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
from typing import NamedTuple

import numpy as np
from numba import njit

from protocol.catalogue import NODE_NAMES
from protocol.geometry import DEFAULT_TABLE, Table

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
    CLOCK_STEP,
    HELD,
    MAPPED,
    N_COLS,
    NEW,
    NODE_BACK,
    NODE_SILENT,
    P0,
    TRACK_ITEM,
    UNSYNCED,
    col,
    cols,
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
    S_HUB_NOW,  # hub time of the newest accepted hub frame: the reference "now"
    S_FIRST_HUB,  # hub time of the first hub frame heard (-1: none yet)
    S_BOOTED,  # a boot (a HELLO, or one inferred) has been released
    S_OUTLIERS,  # frames held as implausible, then dropped
    S_STRAY_HELLO,  # HELLOs with a new boot_id whose hub clock and seq ran on
    S_CLOCK_STEPS,  # node clocks found stepped, and resynced
    S_INFERRED_BOOTS,  # hub reboots recognised without their HELLO
    S_OVERFLOW,  # rows that found no room in a buffer (sized so it never happens)
    S_LEN,  # the table's size from the last HELLO (ICD defaults until one)
    S_WID,
    S_BALL_UM,
) = range(21)
N_STATE = 21
# Per-node state columns
(
    NS_T,
    NS_HAS_T,
    NS_SEQ,
    NS_HAS_SEQ,
    NS_OWN,
    NS_SEEN,
    NS_PRESENT,
    NS_OFFLINE,
    NS_SILENT,
    NS_CAND_N,  # a CLOCK_SYNC sample that disagreed with the node's clock model
    NS_CAND_H,
    NS_HAS_CAND,
    NS_UPTIME,  # hub only: HEARTBEAT uptime_s, +1 (0: none yet)
) = range(13)
N_NODE_STATE = 13
# Parameters
(
    PR_LAG,
    PR_SLACK,
    PR_SILENCE,
    PR_UNSYNCED_MAX,
    PR_WINDOW,
    PR_AHEAD,
    PR_BEHIND,
    PR_HOLD,
    PR_STEP,
    PR_HUB_BACK,
    PR_HUB_GAP,
    PR_JOIN,
) = range(12)
# Work counters (one array, so the steps can update them in place)
W_NH, W_NREL, W_NSYN, W_NW, W_NHELD, W_SUSPECT = range(6)

HELLO, CLOCK_SYNC, NODE_STATUS = type_of("HELLO"), type_of("CLOCK_SYNC"), type_of("NODE_STATUS")
HEARTBEAT = type_of("HEARTBEAT")
_BOOT_ID = col("HELLO", "boot_id")
_NODES_PRESENT = col("HELLO", "nodes_present")
_LEN, _WID, _BALL = cols("HELLO", "table_length_mm", "table_width_mm", "ball_diameter_um")
_PEER = col("CLOCK_SYNC", "peer")
_PEER_T = col("CLOCK_SYNC", "peer_t_us")
_STATUS_PEER = col("NODE_STATUS", "peer")
_STATUS_CODE = col("NODE_STATUS", "code")
_UPTIME = col("HEARTBEAT", "uptime_s")
OFFLINE_CODE = 1
INFERRED_BOOT = (
    -1
)  # boot_id of a boot the timeline inferred (a join, a reboot whose HELLO was lost)
_SEQ_BACK, _SEQ_AHEAD = 64, 4096  # a hub seq step outside this is a restarted counter

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
#: Read for the clocks and the hub's evidence of a reboot; never released.
CLOCK_TYPES = ("CLOCK_SYNC", "HEARTBEAT")


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

    def array(self) -> np.ndarray:
        return np.array(
            [
                self.lag_us,
                self.slack_us,
                self.silence_us,
                self.unsynced_max_us,
                self.window_us,
                self.ahead_us,
                self.behind_us,
                self.hold_us,
                self.step_us,
                self.hub_back_us,
                self.hub_gap_us,
                self.join_us,
            ],
            np.int64,
        )


class Work(NamedTuple):
    """One call's buffers, sized by the caller from what the call can produce.

    Row indices ``>= len(rows)`` name synthetic rows ``syn[i - len(rows)]`` =
    (hub time, type, a, epoch, b): NODE_SILENT / NODE_BACK (a = node),
    CLOCK_STEP (a = node, b = step µs, never released) and an inferred boot
    (type HELLO, a = nodes heard).
    """

    heap_t: np.ndarray  # (rows + syn,) release heap: hub time
    heap_i: np.ndarray  # and row index
    waiting: np.ndarray  # (rows,) rows waiting for their node's first sync
    held: np.ndarray  # (rows,) rows held as implausible
    syn: np.ndarray  # (m, 5) synthetic rows
    rel: np.ndarray  # (rows + syn,) released, in order
    cnt: np.ndarray  # W_* counters; W_SUSPECT: a held hub frame, or -1


@njit(cache=True)
def _less(t1: np.int64, i1: np.int64, t2: np.int64, i2: np.int64) -> bool:
    """Release order: hub time, then arrival; rows at one hub time keep the wire's order."""
    return t1 < t2 or (t1 == t2 and i1 < i2)


@njit(cache=True)
def _push(w: Work, st: np.ndarray, t: np.int64, i: np.int64) -> None:
    """Add a row to the release heap (a full heap is counted, never overrun)."""
    ht, hi = w.heap_t, w.heap_i
    j = w.cnt[W_NH]
    if j >= len(ht):
        st[S_OVERFLOW] += 1
        return
    ht[j] = t
    hi[j] = i
    w.cnt[W_NH] = j + 1
    while j > 0:
        p = (j - 1) // 2
        if _less(ht[j], hi[j], ht[p], hi[p]):
            ht[j], ht[p] = ht[p], ht[j]
            hi[j], hi[p] = hi[p], hi[j]
            j = p
        else:
            break


@njit(cache=True)
def _pop(w: Work) -> None:
    """Drop the release heap's earliest row (the caller has read it), keeping the heap."""
    ht, hi = w.heap_t, w.heap_i
    n = w.cnt[W_NH] - 1
    w.cnt[W_NH] = n
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


@njit(cache=True)
def _release(w: Work, st: np.ndarray, upto: np.int64) -> None:
    """Pop every heap entry at or before ``upto`` into ``rel``.

    An entry earlier than one already released cannot be placed in order any
    more: it is counted as late and dropped, so the output stays sorted.
    """
    if upto > st[S_UPTO]:
        st[S_UPTO] = min(upto, st[S_GLOBAL])  # "everything" means: all that has arrived
    while w.cnt[W_NH] > 0 and w.heap_t[0] <= upto:
        if w.heap_t[0] < st[S_LAST_REL]:
            st[S_LATE] += 1
        else:
            st[S_LAST_REL] = w.heap_t[0]
            w.rel[w.cnt[W_NREL]] = w.heap_i[0]
            w.cnt[W_NREL] += 1
        _pop(w)


@njit(cache=True)
def _watermark(st, ns, params):
    """Hub time no live node can still precede (its own stamps, or the arrival bound)."""
    floor = st[S_GLOBAL] - params[PR_LAG]
    wm = np.iinfo(np.int64).max
    for k in range(ns.shape[0]):
        if ns[k, NS_PRESENT] == 0 or ns[k, NS_OFFLINE] != 0 or ns[k, NS_SILENT] != 0:
            continue
        bound = max(ns[k, NS_OWN] - params[PR_SLACK], floor)
        wm = min(wm, bound)
    return min(wm, st[S_GLOBAL]) if wm != np.iinfo(np.int64).max else floor


@njit(cache=True)
def _synthetic(w: Work, st, n_rows, hub, kind, a, b, release) -> None:
    """Make a row of the timeline's own (see :class:`Work`); room is counted, never assumed."""
    k = w.cnt[W_NSYN]
    if k >= w.syn.shape[0]:
        st[S_OVERFLOW] += 1
        return
    w.syn[k, 0] = hub
    w.syn[k, 1] = kind
    w.syn[k, 2] = a
    w.syn[k, 3] = st[S_EPOCH]
    w.syn[k, 4] = b
    w.cnt[W_NSYN] = k + 1
    if release:
        _push(w, st, hub, n_rows + k)


@njit(cache=True)
def _seen(w: Work, st, ns, n_rows, k, hub):
    """A frame about node k at hub time ``hub``: it is alive; say so if it was declared silent."""
    ns[k, NS_SEEN] = max(ns[k, NS_SEEN], hub)
    if ns[k, NS_SILENT] != 0:
        ns[k, NS_SILENT] = 0
        _synthetic(w, st, n_rows, hub, NODE_BACK, k, 0, True)


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
def _accept(rows, i, w: Work, st, ns, keep):
    """A row mapped to a plausible hub time: it moves the clocks on and joins the release."""
    hub = rows[i, C_HUB]
    node = rows[i, C_NODE]
    rows[i, C_STATE] = MAPPED
    rows[i, C_EPOCH] = st[S_EPOCH]
    st[S_GLOBAL] = max(st[S_GLOBAL], hub)
    ns[node, NS_OWN] = max(ns[node, NS_OWN], hub)
    if node != 0:
        _seen(w, st, ns, len(rows), node, hub)
    if keep[rows[i, C_TYPE]]:
        _push(w, st, hub, i)


@njit(cache=True)
def _plausible(st, params, hub) -> bool:
    """A node's frame can only map near the hub's own newest frame (see TimelineParams)."""
    if st[S_FIRST_HUB] < 0:
        return True  # nothing to judge by yet
    now = st[S_HUB_NOW]
    return now - params[PR_BEHIND] <= hub <= now + params[PR_AHEAD]


@njit(cache=True)
def _map(rows, r, st, clk) -> None:
    """Row ``r``'s hub time and its uncertainty (µs, rounded up, so never understated)
    from its node's clock model, in the current epoch's base."""
    node = rows[r, C_NODE]
    h, u = cm.to_hub(clk, node, rows[r, C_NODE_T])
    rows[r, C_HUB] = h + st[S_BASE]
    rows[r, C_UNC] = np.int64(np.ceil(u))


@njit(cache=True)
def _drop(rows, r, st) -> None:
    """An implausible row given up on: counted as an outlier, released never."""
    rows[r, C_STATE] = NEW
    st[S_OUTLIERS] += 1


@njit(cache=True)
def _hold(rows, r, w: Work, st) -> None:
    """Keep an implausible row aside: its node may have stepped, or time may catch up."""
    if w.cnt[W_NHELD] >= len(w.held):
        st[S_OVERFLOW] += 1
        return
    rows[r, C_STATE] = HELD
    w.held[w.cnt[W_NHELD]] = r
    w.cnt[W_NHELD] += 1


@njit(cache=True)
def _place(rows, r, w: Work, st, ns, clk, params, keep) -> None:
    """A mapped row of a node: accepted if plausible, else held; a plausible one ends its
    node's held rows (they were glitches: the node's clock runs on)."""
    _map(rows, r, st, clk)
    if not _plausible(st, params, rows[r, C_HUB]):
        _hold(rows, r, w, st)
        return
    _accept(rows, r, w, st, ns, keep)
    node = rows[r, C_NODE]
    if w.cnt[W_NHELD] > 0:
        kept = 0
        for j in range(w.cnt[W_NHELD]):
            q = w.held[j]
            if rows[q, C_NODE] == node and q < r:
                _drop(rows, q, st)
            else:
                w.held[kept] = q
                kept += 1
        w.cnt[W_NHELD] = kept


@njit(cache=True)
def _review_held(rows, w: Work, st, ns, clk, params, keep, final) -> None:
    """Held rows after the hub clock moved on or a node resynced: accept, keep or drop."""
    kept = 0
    for j in range(w.cnt[W_NHELD]):
        q = w.held[j]
        node = rows[q, C_NODE]
        if clk.fit_i[node, cm.FI_N] > 0:
            _map(rows, q, st, clk)
            if _plausible(st, params, rows[q, C_HUB]):
                _accept(rows, q, w, st, ns, keep)
                continue
        if final or st[S_GLOBAL] - rows[q, C_ARRIVE] > params[PR_HOLD]:
            _drop(rows, q, st)
        else:
            w.held[kept] = q
            kept += 1
    w.cnt[W_NHELD] = kept


@njit(cache=True)
def _steps(prev_t, prev_seq, t_raw, seq_raw) -> tuple[np.int64, np.int64]:
    """How far a hub frame's clock and seq moved on from an earlier one's (unwrapped)."""
    return unwrap_step(prev_t, t_raw, 32) - prev_t, unwrap_step(prev_seq, seq_raw, 16) - prev_seq


@njit(cache=True)
def _continues(d, sd, params) -> bool:
    """Steps a running hub makes between two of its frames."""
    return -params[PR_HUB_BACK] <= d <= params[PR_HUB_GAP] and -_SEQ_BACK <= sd <= _SEQ_AHEAD


@njit(cache=True)
def _uptime_restarted(ns, uptime) -> bool:
    """A HEARTBEAT (uptime >= 0) whose uptime went back: the hub rebooted."""
    return uptime >= 0 and ns[0, NS_UPTIME] > 0 and uptime + 2 < ns[0, NS_UPTIME] - 1


@njit(cache=True)
def _hub_follows(ns, t_raw, seq_raw, uptime, params) -> bool:
    """Does a hub frame continue the hub's accepted clock and counters?"""
    if ns[0, NS_HAS_T] == 0:
        return True
    d, sd = _steps(ns[0, NS_T], ns[0, NS_SEQ], t_raw, seq_raw)
    return not _uptime_restarted(ns, uptime) and _continues(d, sd, params)


@njit(cache=True)
def _follows_row(rows, s, i, params) -> bool:
    """Does hub row i continue hub row s (a held suspect)?"""
    d, sd = _steps(rows[s, C_TRAW], rows[s, C_SEQ], rows[i, C_TRAW], rows[i, C_SEQ])
    return _continues(d, sd, params)


@njit(cache=True)
def _uptime_of(rows, i) -> np.int64:
    """A HEARTBEAT's uptime, which tells a reboot from a stalled link; -1 for other rows."""
    return rows[i, _UPTIME] if rows[i, C_TYPE] == HEARTBEAT else np.int64(-1)


@njit(cache=True)
def _time_passed(rows, s, ns) -> bool:
    """A confirmed hub step that is only time passing (a stalled link), not a reboot."""
    d, sd = _steps(ns[0, NS_T], ns[0, NS_SEQ], rows[s, C_TRAW], rows[s, C_SEQ])
    return d > 0 and 0 < sd <= _SEQ_AHEAD and not _uptime_restarted(ns, _uptime_of(rows, s))


@njit(cache=True)
def _new_epoch(rows, t_raw, w: Work, st, ns, clk) -> None:
    """Every clock and counter of the table restarted: release the old epoch, clear the models.

    Hub time runs on across the restart (the new epoch's first hub frame
    lands 2 µs after the newest hub time so far), so it never goes back.
    """
    _release(w, st, np.iinfo(np.int64).max)
    st[S_UNSYNCED_DROPPED] += w.cnt[W_NW]
    w.cnt[W_NW] = 0
    for j in range(w.cnt[W_NHELD]):
        _drop(rows, w.held[j], st)
    w.cnt[W_NHELD] = 0
    if st[S_HELLO] != 0 or st[S_FIRST_HUB] >= 0:
        st[S_EPOCH] += 1
    ns[:, :] = 0
    clk.ring_len[:] = 0
    clk.ring_start[:] = 0
    clk.fit_i[:, :] = 0
    st[S_BASE] = max(0, st[S_GLOBAL] + 2 - t_raw) if st[S_EPOCH] > 0 else 0


@njit(cache=True)
def _boot_synthetic(rows, w: Work, st, ns, hub, present) -> None:
    """A boot the stream did not announce: a join, or a reboot whose HELLO was lost."""
    _synthetic(w, st, len(rows), hub, HELLO, present, 0, True)
    st[S_BOOTED] = 1


@njit(cache=True)
def _sync(rows, i, hub, w: Work, st, ns, clk, params, keep) -> None:
    """A CLOCK_SYNC: one sample of its peer's clock, checked against the peer's model.

    A sample far off the model is held as a candidate; a second one that
    agrees with it says the peer's clock stepped: the model restarts from
    the two (reported once, as CLOCK_STEP).  A lone outlier is refused.
    """
    peer = rows[i, _PEER]
    if not 0 < peer < ns.shape[0]:
        return
    n_t = _unwrap(ns, peer, NS_T, NS_HAS_T, rows[i, _PEER_T], 32)
    h = ns[0, NS_T]
    if st[S_HELLO] == 0:
        ns[peer, NS_PRESENT] = 1
    first = clk.fit_i[peer, cm.FI_N] == 0
    if first:
        cm.add_sync(clk, peer, n_t, h, params[PR_WINDOW])
    else:
        predicted, _ = cm.to_hub(clk, peer, n_t)
        off = h - predicted
        if -params[PR_STEP] <= off <= params[PR_STEP]:
            ns[peer, NS_HAS_CAND] = 0
            if not cm.add_sync(clk, peer, n_t, h, params[PR_WINDOW]):
                st[S_REFUSED_SYNC] += 1
        elif (
            ns[peer, NS_HAS_CAND] != 0
            and abs((h - n_t) - (ns[peer, NS_CAND_H] - ns[peer, NS_CAND_N])) <= params[PR_STEP]
        ):
            clk.ring_len[peer] = 0
            clk.ring_start[peer] = 0
            clk.fit_i[peer, :] = 0
            cm.add_sync(clk, peer, ns[peer, NS_CAND_N], ns[peer, NS_CAND_H], params[PR_WINDOW])
            cm.add_sync(clk, peer, n_t, h, params[PR_WINDOW])
            ns[peer, NS_HAS_CAND] = 0
            st[S_CLOCK_STEPS] += 1
            _synthetic(w, st, len(rows), hub, CLOCK_STEP, peer, -off, False)
        else:
            ns[peer, NS_CAND_N] = n_t
            ns[peer, NS_CAND_H] = h
            ns[peer, NS_HAS_CAND] = 1
            st[S_REFUSED_SYNC] += 1
    _seen(w, st, ns, len(rows), peer, hub)
    if first:
        # rows that waited for this node's first sync
        kept = 0
        for j in range(w.cnt[W_NW]):
            r = w.waiting[j]
            if rows[r, C_NODE] == peer:
                _place(rows, r, w, st, ns, clk, params, keep)
            else:
                w.waiting[kept] = r
                kept += 1
        w.cnt[W_NW] = kept


@njit(cache=True)
def _accept_hub(rows, i, w: Work, st, ns, clk, params, keep) -> None:
    """A hub frame that continues the hub's clock: it is the reference time."""
    rows[i, C_NODE_T] = _unwrap(ns, 0, NS_T, NS_HAS_T, rows[i, C_TRAW], 32)
    rows[i, C_SEQ_U] = _unwrap(ns, 0, NS_SEQ, NS_HAS_SEQ, rows[i, C_SEQ], 16)
    up = _uptime_of(rows, i)
    if up >= 0:
        ns[0, NS_UPTIME] = up + 1
    hub = ns[0, NS_T] + st[S_BASE]
    rows[i, C_HUB] = hub
    rows[i, C_UNC] = 0
    st[S_HUB_NOW] = max(st[S_HUB_NOW], hub)
    if st[S_FIRST_HUB] < 0:
        st[S_FIRST_HUB] = hub
    mtype = rows[i, C_TYPE]
    if mtype == CLOCK_SYNC:
        _sync(rows, i, hub, w, st, ns, clk, params, keep)
    elif mtype == NODE_STATUS:
        peer = rows[i, _STATUS_PEER]
        if 0 < peer < ns.shape[0]:
            ns[peer, NS_OFFLINE] = 1 if rows[i, _STATUS_CODE] == OFFLINE_CODE else 0
            if ns[peer, NS_OFFLINE] == 0:
                ns[peer, NS_SEEN] = max(ns[peer, NS_SEEN], hub)
    _accept(rows, i, w, st, ns, keep)
    if w.cnt[W_NHELD] > 0:
        _review_held(rows, w, st, ns, clk, params, keep, False)


@njit(cache=True)
def _hello(rows, i, w: Work, st, ns, clk, params, keep) -> None:
    """A HELLO: a reboot (ICD §3) only if the hub's clock and counters did not run on.

    A repeat of the running boot's HELLO (firmware 1.1 answers REQUEST_HELLO
    with one) changes nothing.  A HELLO whose clock and seq continue the
    hub's is no reboot either: the first one after a join names the boot, a
    later one with a new boot_id is stray (counted).
    """
    boot = rows[i, _BOOT_ID]
    present = rows[i, _NODES_PRESENT] | 1
    if st[S_HELLO] != 0 and boot == st[S_BOOT]:
        return
    if rows[i, _LEN] > 0 and rows[i, _WID] > 0 and rows[i, _BALL] > 0:
        st[S_LEN] = rows[i, _LEN]
        st[S_WID] = rows[i, _WID]
        st[S_BALL_UM] = rows[i, _BALL]
    continues = ns[0, NS_HAS_T] != 0 and _hub_follows(
        ns, rows[i, C_TRAW], rows[i, C_SEQ], -1, params
    )
    if continues and st[S_HELLO] != 0:
        st[S_STRAY_HELLO] += 1
        return
    if continues:
        st[S_HELLO] = 1
        st[S_BOOT] = boot
        for k in range(ns.shape[0]):
            ns[k, NS_PRESENT] |= (present >> k) & 1
        if st[S_BOOTED] != 0:
            return  # the join's inferred boot stands; this only names it
        _accept_hub(rows, i, w, st, ns, clk, params, keep)
        st[S_BOOTED] = 1
        return
    if w.cnt[W_SUSPECT] >= 0:
        _drop(rows, w.cnt[W_SUSPECT], st)
        w.cnt[W_SUSPECT] = -1
    _new_epoch(rows, rows[i, C_TRAW] + 1, w, st, ns, clk)
    st[S_HELLO] = 1
    st[S_BOOT] = boot
    for k in range(ns.shape[0]):
        ns[k, NS_PRESENT] = (present >> k) & 1
    _accept_hub(rows, i, w, st, ns, clk, params, keep)
    st[S_BOOTED] = 1


@njit(cache=True)
def _hub_frame(rows, i, w: Work, st, ns, clk, params, keep) -> None:
    """A hub frame other than HELLO: accepted if it continues the hub's clock, else held.

    The next hub frame decides a held one: if it continues the held frame,
    the step was real -- time passing (clock and seq forward) or, with the
    clock or seq gone back or the uptime restarted, a reboot whose HELLO was
    lost (a new epoch); if it continues the old clock, the held frame was an
    outlier.
    """
    s = w.cnt[W_SUSPECT]
    if _hub_follows(ns, rows[i, C_TRAW], rows[i, C_SEQ], _uptime_of(rows, i), params):
        if s >= 0:
            _drop(rows, s, st)
            w.cnt[W_SUSPECT] = -1
        _accept_hub(rows, i, w, st, ns, clk, params, keep)
        return
    if s >= 0 and _follows_row(rows, s, i, params):
        w.cnt[W_SUSPECT] = -1
        if not _time_passed(rows, s, ns):
            present = np.int64(0)
            for k in range(ns.shape[0]):
                present |= ns[k, NS_PRESENT] << k
            _new_epoch(rows, rows[s, C_TRAW], w, st, ns, clk)
            st[S_INFERRED_BOOTS] += 1
            st[S_HELLO] = 0  # the new boot's id is unknown: its HELLO may still come
            for k in range(ns.shape[0]):
                ns[k, NS_PRESENT] = (present >> k) & 1
            _boot_synthetic(rows, w, st, ns, st[S_GLOBAL] + 1, present | 1)
        _accept_hub(rows, s, w, st, ns, clk, params, keep)
        _accept_hub(rows, i, w, st, ns, clk, params, keep)
        return
    if s >= 0:
        _drop(rows, s, st)
    rows[i, C_STATE] = HELD
    w.cnt[W_SUSPECT] = i


@njit(cache=True)
def _node_frame(rows, i, w: Work, st, ns, clk, params, keep) -> None:
    """A frame of a node with its own clock: mapped onto hub time if its clock is known."""
    node = rows[i, C_NODE]
    rows[i, C_NODE_T] = _unwrap(ns, node, NS_T, NS_HAS_T, rows[i, C_TRAW], 32)
    rows[i, C_SEQ_U] = _unwrap(ns, node, NS_SEQ, NS_HAS_SEQ, rows[i, C_SEQ], 16)
    if st[S_HELLO] == 0:
        ns[node, NS_PRESENT] = 1  # attached mid-stream: present once heard
    elif ns[node, NS_PRESENT] == 0:
        st[S_OUTLIERS] += 1  # the HELLO says there is no such node
        return
    if clk.fit_i[node, cm.FI_N] > 0:
        _place(rows, i, w, st, ns, clk, params, keep)
    elif keep[rows[i, C_TYPE]]:
        rows[i, C_STATE] = UNSYNCED
        w.waiting[w.cnt[W_NW]] = i
        w.cnt[W_NW] += 1


@njit(cache=True)
def _declare_silent(rows, w: Work, st, ns, params) -> None:
    """No frame about a present node for the silence bound: it is silent (NODE_SILENT)."""
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
            _synthetic(
                w, st, len(rows), ns[k, NS_SEEN] + params[PR_SILENCE], NODE_SILENT, k, 0, True
            )


@njit(cache=True)
def _expire_waiting(rows, w: Work, st, params) -> None:
    """Rows whose node never synced are dropped after a bound."""
    kept = 0
    for j in range(w.cnt[W_NW]):
        r = w.waiting[j]
        if st[S_GLOBAL] - rows[r, C_ARRIVE] > params[PR_UNSYNCED_MAX]:
            rows[r, C_STATE] = NEW
            st[S_UNSYNCED_DROPPED] += 1
        else:
            w.waiting[kept] = r
            kept += 1
    w.cnt[W_NW] = kept


@njit(cache=True)
def _carry(rows, n_carried, n_syn_carried, w: Work, st) -> None:
    """Rows kept from earlier calls back in their places: heap, waiting, held, suspect."""
    for i in range(n_carried):
        state = rows[i, C_STATE]
        if state == MAPPED:
            _push(w, st, rows[i, C_HUB], i)
        elif state == UNSYNCED:
            w.waiting[w.cnt[W_NW]] = i
            w.cnt[W_NW] += 1
        elif rows[i, C_NODE] == 0:
            w.cnt[W_SUSPECT] = i
        else:
            w.held[w.cnt[W_NHELD]] = i
            w.cnt[W_NHELD] += 1
    for s in range(n_syn_carried):
        _push(w, st, w.syn[s, 0], len(rows) + s)


@njit(cache=True)
def advance(
    rows: np.ndarray,
    n_carried: int,
    keep: np.ndarray,
    st: np.ndarray,
    ns: np.ndarray,
    clk: cm.ClockArrays,
    params: np.ndarray,
    w: Work,
    n_syn_carried: int,
    flush_upto: np.int64,
    pending: np.ndarray,
) -> int:
    """Process new rows (after ``n_carried`` carried ones); fill ``w.rel`` in release order.

    Each row: a hub frame is checked against the hub's clock (a HELLO may
    start an epoch); a node's frame is mapped, checked for plausibility and
    accepted, held or left waiting for its node's first sync; then silent
    nodes are declared, stale waiting rows dropped, a join's boot made, and
    everything the watermark allows released.  Returns how many entries of
    ``pending`` (rows and synthetic rows to carry) it filled.
    """
    n = len(rows)
    w.cnt[W_NSYN] = n_syn_carried
    _carry(rows, n_carried, n_syn_carried, w, st)
    for i in range(n_carried, n):
        node = rows[i, C_NODE]
        if node >= ns.shape[0]:
            continue  # host frames echoed back: no table clock
        rows[i, C_EPOCH] = st[S_EPOCH]
        rows[i, C_ARRIVE] = st[S_GLOBAL]
        if rows[i, C_TYPE] == HELLO:
            _hello(rows, i, w, st, ns, clk, params, keep)
        elif node == 0:
            _hub_frame(rows, i, w, st, ns, clk, params, keep)
        else:
            _node_frame(rows, i, w, st, ns, clk, params, keep)
        _declare_silent(rows, w, st, ns, params)
        if w.cnt[W_NW] > 0:
            _expire_waiting(rows, w, st, params)
        if (
            st[S_BOOTED] == 0
            and st[S_FIRST_HUB] >= 0
            and st[S_HUB_NOW] - st[S_FIRST_HUB] >= params[PR_JOIN]
        ):
            present = np.int64(1)
            for k in range(ns.shape[0]):
                present |= ns[k, NS_PRESENT] << k
            _boot_synthetic(rows, w, st, ns, st[S_FIRST_HUB] + params[PR_JOIN], present)
        if w.cnt[W_NW] == 0:
            _release(w, st, _watermark(st, ns, params))

    if flush_upto > np.iinfo(np.int64).min:
        if flush_upto == np.iinfo(np.int64).max:
            if w.cnt[W_NHELD] > 0:
                _review_held(rows, w, st, ns, clk, params, keep, True)
            if w.cnt[W_SUSPECT] >= 0:
                _drop(rows, w.cnt[W_SUSPECT], st)
                w.cnt[W_SUSPECT] = -1
            st[S_UNSYNCED_DROPPED] += w.cnt[W_NW]
            w.cnt[W_NW] = 0
        if w.cnt[W_NW] == 0:
            _release(w, st, flush_upto)
    npend = 0
    for j in range(w.cnt[W_NW]):
        pending[npend] = w.waiting[j]
        npend += 1
    for j in range(w.cnt[W_NHELD]):
        pending[npend] = w.held[j]
        npend += 1
    if w.cnt[W_SUSPECT] >= 0:
        pending[npend] = w.cnt[W_SUSPECT]
        npend += 1
    # what stays in the heap, in heap order (re-pushed by key next time)
    for j in range(w.cnt[W_NH]):
        pending[npend] = w.heap_i[j]
        npend += 1
    return npend


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
        self._params = self.params.array()
        self.clocks = cm.clock_arrays()
        self.state = np.zeros(N_STATE, np.int64)
        self.state[S_FIRST_HUB] = -1
        self.state[S_LEN] = round(table.length_mm)
        self.state[S_WID] = round(table.width_mm)
        self.state[S_BALL_UM] = round(table.ball_mm * 1000)
        self.nodes = np.zeros((cm.N_NODES, N_NODE_STATE), np.int64)
        self._keep = np.zeros(256, np.bool_)
        for name in RELEASED_TYPES:
            self._keep[type_of(name)] = True
        self._rows = np.zeros((0, N_COLS), np.int64)
        self._tracks = _EMPTY_TRACKS
        self._syn = np.zeros((0, 5), np.int64)
        self._host = HostClock()
        #: what the stream did that a person should hear of once (clock steps, inferred boots)
        self.notices: list[str] = []

    @property
    def hub_now(self) -> int:
        """The newest hub time the stream has shown (µs)."""
        return int(self.state[S_GLOBAL])

    def hub_time_at(self, host_ns: int | None) -> int:
        """The hub time of a host instant (the newest hub stamp without host times)."""
        hub = None if host_ns is None else self._host.hub_now(host_ns // 1000)
        return self.hub_now if hub is None else hub

    @property
    def released_upto(self) -> int:
        """Hub time up to which every row has been released (nothing earlier can follow)."""
        return int(min(self.state[S_UPTO], self.state[S_GLOBAL]))

    @property
    def counters(self) -> dict[str, int]:
        """Running totals; every one but ``epochs`` counts something strange in the stream."""
        st = self.state
        return {
            "epochs": int(st[S_EPOCH]) + 1,
            "late": int(st[S_LATE]),
            "unsynced_dropped": int(st[S_UNSYNCED_DROPPED]),
            "refused_syncs": int(st[S_REFUSED_SYNC]),
            "outliers": int(st[S_OUTLIERS]),
            "stray_hellos": int(st[S_STRAY_HELLO]),
            "clock_steps": int(st[S_CLOCK_STEPS]),
            "inferred_boots": int(st[S_INFERRED_BOOTS]),
            "overflow": int(st[S_OVERFLOW]),
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
        work = _work(len(rows), n_syn + _SYN_PER_ROW * len(new_rows) + _SYN_PER_CALL)
        work.syn[:n_syn] = self._syn
        pending = np.empty(len(work.rel), np.int64)
        npend = advance(
            rows,
            carried,
            self._keep,
            self.state,
            self.nodes,
            self.clocks,
            self._params,
            work,
            n_syn,
            np.int64(flush_upto),
            pending,
        )
        n = len(rows)
        nsyn = int(work.cnt[W_NSYN])
        syn = work.syn[:nsyn]
        self._note(syn[n_syn:])
        out = Ordered(rows, tracks, self._made(syn), work.rel[: work.cnt[W_NREL]].copy())
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
                    "a reboot whose HELLO was lost" if self.state[S_EPOCH] else "joined mid-stream"
                )
                self.notices.append(f"no HELLO: {what}; a boot was inferred at hub {hub} µs")

    def _made(self, syn: np.ndarray) -> np.ndarray:
        """Synthetic rows (NODE_SILENT, NODE_BACK, CLOCK_STEP, an inferred boot) as rows."""
        made = np.zeros((len(syn), N_COLS), np.int64)
        made[:, C_HUB] = syn[:, 0]
        made[:, C_TYPE] = syn[:, 1]
        made[:, P0] = syn[:, 2]
        made[:, C_EPOCH] = syn[:, 3]
        made[:, C_TRACK] = -1
        made[:, C_STATE] = MAPPED
        boot = syn[:, 1] == HELLO
        if boot.any():
            made[boot, P0] = 0
            made[boot, _BOOT_ID] = INFERRED_BOOT
            made[boot, _NODES_PRESENT] = syn[boot, 2]
            made[boot, _LEN] = self.state[S_LEN]
            made[boot, _WID] = self.state[S_WID]
            made[boot, _BALL] = self.state[S_BALL_UM]
        return made


#: Synthetic rows one new row can cause at most (a NODE_BACK or a boot, a
#: CLOCK_STEP, a NODE_SILENT after a NODE_BACK), and one call besides.
_SYN_PER_ROW = 3
_SYN_PER_CALL = 2 * cm.N_NODES + 4


def _work(n_rows: int, n_syn: int) -> Work:
    cap = n_rows + n_syn
    return Work(
        heap_t=np.empty(cap, np.int64),
        heap_i=np.empty(cap, np.int64),
        waiting=np.empty(n_rows, np.int64),
        held=np.empty(n_rows, np.int64),
        syn=np.zeros((n_syn, 5), np.int64),
        rel=np.empty(cap, np.int64),
        cnt=np.array([0, 0, 0, 0, 0, -1], np.int64),
    )
