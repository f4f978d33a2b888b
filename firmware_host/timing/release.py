"""The ordered release: a heap keyed by (hub time, stream position) and its watermark.

A row is released once no node can still precede it: hub time ``<= min over
live nodes of max(latest own frame - slack, newest hub time - lag)``
(:func:`watermark`).  ``lag`` covers the datasheet's 30 ms arrival bound,
so a node that says nothing never holds the others up; a node with no
frame *about* it (own frames or its CLOCK_SYNC) for ``silence`` is declared
silent (a synthetic NODE_SILENT row, :func:`declare_silent`) and dropped
from the watermark until it is heard again (NODE_BACK, :func:`seen`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .rows import NODE_BACK, NODE_SILENT
from .state import (
    EPOCH,
    HEAP_N,
    LAST_RELEASED_T,
    LATE,
    NEWEST_T,
    OFFLINE,
    OVERFLOW,
    OWN_T,
    PRESENT,
    RELEASED_N,
    RELEASED_UPTO,
    SEEN_T,
    SILENT,
    SYN_A,
    SYN_B,
    SYN_EPOCH,
    SYN_HUB_T,
    SYN_TYPE,
    SYNTHETIC_N,
    Buffers,
    Params,
)


@njit(cache=True, inline="always")
def released_before(hub_t: np.int64, row: np.int64, other_t: np.int64, other_row: np.int64) -> bool:
    """Release order: hub time, then arrival; rows at one hub time keep the wire's order."""
    return hub_t < other_t or (hub_t == other_t and row < other_row)


@njit(cache=True, inline="always")
def heap_push(buffers: Buffers, counters, hub_t: np.int64, row: np.int64) -> None:
    """Add a row to the release heap (a full heap is counted, never overrun)."""
    ht, hi = buffers.heap_t, buffers.heap_i
    j = buffers.counts[HEAP_N]
    if j >= len(ht):
        counters[OVERFLOW] += 1
        return
    ht[j] = hub_t
    hi[j] = row
    buffers.counts[HEAP_N] = j + 1
    while j > 0:
        p = (j - 1) // 2
        if released_before(ht[j], hi[j], ht[p], hi[p]):
            ht[j], ht[p] = ht[p], ht[j]
            hi[j], hi[p] = hi[p], hi[j]
            j = p
        else:
            break


@njit(cache=True, inline="always")
def heap_pop(buffers: Buffers) -> None:
    """Drop the release heap's earliest row (the caller has read it), keeping the heap."""
    ht, hi = buffers.heap_t, buffers.heap_i
    n = buffers.counts[HEAP_N] - 1
    buffers.counts[HEAP_N] = n
    ht[0] = ht[n]
    hi[0] = hi[n]
    j = 0
    while True:
        a = 2 * j + 1
        b = a + 1
        m = j
        if a < n and released_before(ht[a], hi[a], ht[m], hi[m]):
            m = a
        if b < n and released_before(ht[b], hi[b], ht[m], hi[m]):
            m = b
        if m == j:
            break
        ht[j], ht[m] = ht[m], ht[j]
        hi[j], hi[m] = hi[m], hi[j]
        j = m


@njit(cache=True, inline="always")
def release_upto(buffers: Buffers, release, counters, upto: np.int64) -> None:
    """Pop every heap entry at or before ``upto`` into ``buffers.released`` (``release``:
    the state's NEWEST_T, LAST_RELEASED_T, RELEASED_UPTO).

    An entry earlier than one already released cannot be placed in order any
    more: it is counted as late and dropped, so the output stays sorted.
    """
    if upto > release[RELEASED_UPTO]:
        release[RELEASED_UPTO] = min(upto, release[NEWEST_T])  # "everything": all that arrived
    counts = buffers.counts
    while counts[HEAP_N] > 0 and buffers.heap_t[0] <= upto:
        if buffers.heap_t[0] < release[LAST_RELEASED_T]:
            counters[LATE] += 1
        else:
            release[LAST_RELEASED_T] = buffers.heap_t[0]
            buffers.released[counts[RELEASED_N]] = buffers.heap_i[0]
            counts[RELEASED_N] += 1
        heap_pop(buffers)


@njit(cache=True, inline="always")
def watermark(release, nodes, params: Params):
    """Hub time no live node can still precede (its own stamps, or the arrival bound)."""
    newest = release[NEWEST_T]
    floor = newest - params.lag_us
    wm = np.iinfo(np.int64).max
    for k in range(nodes.shape[0]):
        if nodes[k, PRESENT] == 0 or nodes[k, OFFLINE] != 0 or nodes[k, SILENT] != 0:
            continue
        bound = max(nodes[k, OWN_T] - params.slack_us, floor)
        wm = min(wm, bound)
    return min(wm, newest) if wm != np.iinfo(np.int64).max else floor


@njit(cache=True)
def make_synthetic(
    buffers: Buffers, epoch, counters, n_rows, hub_t, kind, subject, detail, release
):
    """A row of the timeline's own (see :class:`.state.Buffers`) in this ``epoch``:
    ``subject`` the node (or the nodes heard), ``detail`` a clock step's µs; released if
    ``release``.  Room is counted, never assumed."""
    k = buffers.counts[SYNTHETIC_N]
    if k >= buffers.synthetic.shape[0]:
        counters[OVERFLOW] += 1
        return
    made = buffers.synthetic[k]
    made[SYN_HUB_T] = hub_t
    made[SYN_TYPE] = kind
    made[SYN_A] = subject
    made[SYN_EPOCH] = epoch[EPOCH]
    made[SYN_B] = detail
    buffers.counts[SYNTHETIC_N] = k + 1
    if release:
        heap_push(buffers, counters, hub_t, n_rows + k)


@njit(cache=True)
def seen(buffers: Buffers, epoch, nodes, counters, n_rows, node, hub_t):
    """A frame about ``node`` at ``hub_t``: it is alive; say so if it was declared silent."""
    nodes[node, SEEN_T] = max(nodes[node, SEEN_T], hub_t)
    if nodes[node, SILENT] != 0:
        nodes[node, SILENT] = 0
        make_synthetic(buffers, epoch, counters, n_rows, hub_t, NODE_BACK, node, 0, True)


@njit(cache=True, inline="always")
def declare_silent(rows, buffers: Buffers, epoch, release, nodes, counters, params: Params):
    """No frame about a present node for the silence bound: it is silent (NODE_SILENT)."""
    silence = params.silence_us
    for k in range(1, nodes.shape[0]):
        # counted from the first frame about it in this epoch: after a
        # reboot the hub re-enumerates its nodes for a while
        if (
            nodes[k, PRESENT] != 0
            and nodes[k, OFFLINE] == 0
            and nodes[k, SILENT] == 0
            and nodes[k, SEEN_T] != 0
            and release[NEWEST_T] - nodes[k, SEEN_T] > silence
        ):
            nodes[k, SILENT] = 1
            made_t = nodes[k, SEEN_T] + silence
            make_synthetic(buffers, epoch, counters, len(rows), made_t, NODE_SILENT, k, 0, True)
