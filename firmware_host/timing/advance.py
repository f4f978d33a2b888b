"""The timeline's driver: rows in stream order, released in hub-time order, batch or live.

For each row :func:`advance`

1. a HELLO may start a new epoch; any other hub frame is checked against
   the hub's clock (:mod:`.epochs`);
2. a node's frame is unwrapped and mapped onto hub time with its clock
   model *as of this row*, checked for plausibility and accepted, held, or
   left waiting for its node's first sync (:mod:`.mapping`);
3. silent nodes are declared, stale waiting rows dropped, a join's boot
   made, and every row the watermark allows released (:mod:`.release`).

The batch path is the same kernel fed once with everything, then flushed;
the live path feeds it chunk by chunk.  Releases are decided after every
row, so both give the same rows in the same order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .epochs import HELLO, boot_synthetic, hello, hub_frame
from .mapping import drop, expire_waiting, node_frame, node_mark, review_held
from .release import declare_silent, heap_push, release_upto, watermark
from .rows import (
    C_ARRIVE,
    C_EPOCH,
    C_HUB,
    C_NODE,
    C_STATE,
    C_TYPE,
    MAPPED,
    NODE_CALM,
    NODE_FLOODED,
    UNSYNCED,
)
from .state import (
    BOOTED,
    EPOCH,
    FIRST_HUB_T,
    HEAP_N,
    HELD_N,
    HUB_NOW,
    NEWEST_T,
    PRESENT,
    SUSPECT,
    SYN_HUB_T,
    SYNTHETIC_N,
    UNSYNCED_DROPPED,
    WAITING_N,
    Buffers,
    TimelineState,
)


@njit(cache=True)
def advance(
    rows: np.ndarray,
    n_carried: int,
    state: TimelineState,
    buffers: Buffers,
    n_synthetic_carried: int,
    flush_upto: np.int64,
    pending: np.ndarray,
) -> int:
    """Process new rows (after ``n_carried`` carried ones); fill ``buffers.released`` in
    release order; with ``flush_upto`` (not int64's minimum) release up to it (its maximum:
    everything, held rows decided).  Returns how many entries of ``pending`` (rows and
    synthetic rows to carry into the next call) it filled."""
    n = len(rows)
    buffers.counts[SYNTHETIC_N] = n_synthetic_carried
    _carry(rows, n_carried, n_synthetic_carried, buffers, state)
    for i in range(n_carried, n):
        _one_row(rows, i, buffers, state)
    if flush_upto > np.iinfo(np.int64).min:
        _flush(rows, buffers, state, flush_upto)
    return _pending(buffers, pending)


@njit(cache=True, inline="always")
def _one_row(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """One new row through the steps, then the release the watermark allows."""
    node = rows[row, C_NODE]
    if node >= state.nodes.shape[0]:
        return  # host frames echoed back: no table clock
    epoch = state.epoch
    rows[row, C_EPOCH] = epoch[EPOCH]
    rows[row, C_ARRIVE] = state.release[NEWEST_T]
    mtype = rows[row, C_TYPE]
    if mtype == NODE_FLOODED or mtype == NODE_CALM:
        node_mark(rows, row, buffers, state)
    elif mtype == HELLO:
        hello(rows, row, buffers, state)
    elif node == 0:
        hub_frame(rows, row, buffers, state)
    else:
        node_frame(rows, row, buffers, state)
    declare_silent(rows, buffers, epoch, state.release, state.nodes, state.counters, state.params)
    if buffers.counts[WAITING_N] > 0:
        expire_waiting(rows, buffers, state)
    join_us = state.params.join_us
    if (
        epoch[BOOTED] == 0
        and epoch[FIRST_HUB_T] >= 0
        and epoch[HUB_NOW] - epoch[FIRST_HUB_T] >= join_us
    ):
        present = np.int64(1)
        for k in range(state.nodes.shape[0]):
            present |= state.nodes[k, PRESENT] << k
        boot_synthetic(rows, buffers, state, epoch[FIRST_HUB_T] + join_us, present)
    if buffers.counts[WAITING_N] == 0:
        wm = watermark(state.release, state.nodes, state.params)
        release_upto(buffers, state.release, state.counters, wm)


@njit(cache=True, inline="always")
def _flush(rows, buffers: Buffers, state: TimelineState, flush_upto) -> None:
    """Release up to ``flush_upto``; at the end of the input (int64's maximum) held and
    suspect rows are decided and rows still waiting for a sync dropped first."""
    counts = buffers.counts
    if flush_upto == np.iinfo(np.int64).max:
        if counts[HELD_N] > 0:
            review_held(rows, buffers, state, True)
        if counts[SUSPECT] >= 0:
            drop(rows, counts[SUSPECT], state.counters)
            counts[SUSPECT] = -1
        state.counters[UNSYNCED_DROPPED] += counts[WAITING_N]
        counts[WAITING_N] = 0
    if counts[WAITING_N] == 0:
        release_upto(buffers, state.release, state.counters, flush_upto)


@njit(cache=True, inline="always")
def _pending(buffers: Buffers, pending) -> int:
    """The rows to carry into the next call (waiting, held, the suspect, and what stays in
    the heap, in heap order: re-pushed by key next time) into ``pending``; how many."""
    counts = buffers.counts
    n = 0
    for j in range(counts[WAITING_N]):
        pending[n] = buffers.waiting[j]
        n += 1
    for j in range(counts[HELD_N]):
        pending[n] = buffers.held[j]
        n += 1
    if counts[SUSPECT] >= 0:
        pending[n] = counts[SUSPECT]
        n += 1
    for j in range(counts[HEAP_N]):
        pending[n] = buffers.heap_i[j]
        n += 1
    return n


@njit(cache=True)
def _carry(rows, n_carried, n_synthetic_carried, buffers: Buffers, state: TimelineState) -> None:
    """Rows kept from earlier calls back in their places: heap, waiting, held, suspect."""
    counts = buffers.counts
    for i in range(n_carried):
        row_state = rows[i, C_STATE]
        if row_state == MAPPED:
            heap_push(buffers, state.counters, rows[i, C_HUB], i)
        elif row_state == UNSYNCED:
            buffers.waiting[counts[WAITING_N]] = i
            counts[WAITING_N] += 1
        elif rows[i, C_NODE] == 0:
            counts[SUSPECT] = i
        else:
            buffers.held[counts[HELD_N]] = i
            counts[HELD_N] += 1
    for s in range(n_synthetic_carried):
        heap_push(buffers, state.counters, buffers.synthetic[s, SYN_HUB_T], len(rows) + s)
