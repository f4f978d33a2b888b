"""A node's frames onto hub time: unwrapped, mapped by its clock model, checked, accepted.

A node's frame is mapped with its clock model *as of this row* (so the
result never depends on how the stream was cut into chunks); a row of a
node with no sync yet waits for the node's first one (:func:`node_frame`,
:func:`sync`).  A mapped frame must land near the hub's own newest frame
(:func:`plausible`): one that does not is held, and accepted if its node's
clock turns out to have stepped, else dropped as an outlier
(:func:`review_held`).  A CLOCK_SYNC feeds its peer's clock model
(:mod:`.clock_model`); a sample far off the model that a second one agrees
with says the clock stepped.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import clock_model as cm
from .release import heap_push, make_synthetic, seen
from .rows import (
    C_ARRIVE,
    C_EPOCH,
    C_HUB,
    C_NODE,
    C_NODE_T,
    C_SEQ,
    C_SEQ_U,
    C_STATE,
    C_TRAW,
    C_TYPE,
    C_UNC,
    CLOCK_STEP,
    HELD,
    MAPPED,
    NEW,
    UNSYNCED,
    col,
)
from .state import (
    BASE,
    CANDIDATE_HUB_T,
    CANDIDATE_NODE_T,
    CLOCK_STEPS,
    EPOCH,
    FIRST_HUB_T,
    HAS_CANDIDATE,
    HAS_SEQ,
    HAS_T,
    HELD_N,
    HELLO_SEEN,
    HUB_NOW,
    LAST_RELEASED_T,
    NEWEST_T,
    NODE_SEQ,
    NODE_T,
    OUTLIERS,
    OVERFLOW,
    OWN_T,
    PRESENT,
    REFUSED_SYNCS,
    UNSYNCED_DROPPED,
    WAITING_N,
    Buffers,
    Params,
    TimelineState,
)
from .unwrap import unwrap_step

_PEER = col("CLOCK_SYNC", "peer")
_PEER_T = col("CLOCK_SYNC", "peer_t_us")


@njit(cache=True)
def unwrap_counter(nodes, node, column, has_column, raw, bits):
    """One more reading of a node's wrapping counter, unwrapped onto its running value in
    ``nodes[node, column]`` (``has_column``: it has one)."""
    if nodes[node, has_column] == 0:
        nodes[node, column] = raw
        nodes[node, has_column] = 1
    else:
        nodes[node, column] = unwrap_step(nodes[node, column], raw, bits)
    return nodes[node, column]


@njit(cache=True, inline="always")
def accept(rows, row, buffers: Buffers, epoch, release, nodes, counters, keep) -> None:
    """A row mapped to a plausible hub time: it moves the clocks on and joins the release
    (if its type is one the fusion takes: ``keep``)."""
    hub_t = rows[row, C_HUB]
    node = rows[row, C_NODE]
    rows[row, C_STATE] = MAPPED
    rows[row, C_EPOCH] = epoch[EPOCH]
    release[NEWEST_T] = max(release[NEWEST_T], hub_t)
    nodes[node, OWN_T] = max(nodes[node, OWN_T], hub_t)
    if node != 0:
        seen(buffers, epoch, nodes, counters, len(rows), node, hub_t)
    if keep[rows[row, C_TYPE]]:
        heap_push(buffers, counters, hub_t, row)


@njit(cache=True, inline="always")
def accept_in(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """:func:`accept` with the arrays it takes from the timeline's ``state``."""
    accept(rows, row, buffers, state.epoch, state.release, state.nodes, state.counters, state.keep)


@njit(cache=True, inline="always")
def plausible(epoch, params: Params, hub_t) -> bool:
    """A node's frame can only map near the hub's own newest frame (see TimelineParams)."""
    if epoch[FIRST_HUB_T] < 0:
        return True  # nothing to judge by yet
    now = epoch[HUB_NOW]
    return now - params.behind_us <= hub_t <= now + params.ahead_us


@njit(cache=True, inline="always")
def map_row(rows, row, epoch, clocks: cm.ClockArrays) -> None:
    """The row's hub time and its uncertainty (µs, rounded up, so never understated) from
    its node's clock model, in the current epoch's base."""
    node = rows[row, C_NODE]
    hub_t, uncertainty = cm.to_hub(clocks, node, rows[row, C_NODE_T])
    rows[row, C_HUB] = hub_t + epoch[BASE]
    rows[row, C_UNC] = np.int64(np.ceil(uncertainty))


@njit(cache=True)
def drop(rows, row, counters) -> None:
    """An implausible row given up on: counted as an outlier, released never."""
    rows[row, C_STATE] = NEW
    counters[OUTLIERS] += 1


@njit(cache=True)
def hold(rows, row, buffers: Buffers, counters) -> None:
    """Keep an implausible row aside: its node may have stepped, or time may catch up."""
    if buffers.counts[HELD_N] >= len(buffers.held):
        counters[OVERFLOW] += 1
        return
    rows[row, C_STATE] = HELD
    buffers.held[buffers.counts[HELD_N]] = row
    buffers.counts[HELD_N] += 1


@njit(cache=True, inline="always")
def place(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A mapped row of a node: accepted if plausible, else held; a plausible one ends its
    node's held rows (they were glitches: the node's clock runs on)."""
    map_row(rows, row, state.epoch, state.clocks)
    if not plausible(state.epoch, state.params, rows[row, C_HUB]):
        hold(rows, row, buffers, state.counters)
        return
    accept_in(rows, row, buffers, state)
    node = rows[row, C_NODE]
    if buffers.counts[HELD_N] > 0:
        kept = 0
        for j in range(buffers.counts[HELD_N]):
            q = buffers.held[j]
            if rows[q, C_NODE] == node and q < row:
                drop(rows, q, state.counters)
            else:
                buffers.held[kept] = q
                kept += 1
        buffers.counts[HELD_N] = kept


@njit(cache=True)
def review_held(rows, buffers: Buffers, state: TimelineState, final) -> None:
    """Held rows after the hub clock moved on or a node resynced: accept, keep or drop."""
    kept = 0
    for j in range(buffers.counts[HELD_N]):
        q = buffers.held[j]
        node = rows[q, C_NODE]
        if state.clocks.fit_i[node, cm.FI_N] > 0:
            map_row(rows, q, state.epoch, state.clocks)
            if plausible(state.epoch, state.params, rows[q, C_HUB]):
                accept_in(rows, q, buffers, state)
                continue
        if final or state.release[NEWEST_T] - rows[q, C_ARRIVE] > state.params.hold_us:
            drop(rows, q, state.counters)
        else:
            buffers.held[kept] = q
            kept += 1
    buffers.counts[HELD_N] = kept


@njit(cache=True)
def sync(rows, row, hub_t, buffers: Buffers, state: TimelineState) -> None:
    """A CLOCK_SYNC: one sample of its peer's clock, checked against the peer's model
    (:func:`_take_sample`); the peer's first sync places the rows that waited for it."""
    peer = rows[row, _PEER]
    nodes = state.nodes
    if not 0 < peer < nodes.shape[0]:
        return
    peer_t = unwrap_counter(nodes, peer, NODE_T, HAS_T, rows[row, _PEER_T], 32)
    if state.epoch[HELLO_SEEN] == 0:
        nodes[peer, PRESENT] = 1
    first = state.clocks.fit_i[peer, cm.FI_N] == 0
    _take_sample(rows, hub_t, buffers, state, peer, peer_t, first)
    seen(buffers, state.epoch, nodes, state.counters, len(rows), peer, hub_t)
    if first:
        # rows that waited for this node's first sync
        kept = 0
        for j in range(buffers.counts[WAITING_N]):
            r = buffers.waiting[j]
            if rows[r, C_NODE] == peer:
                place(rows, r, buffers, state)
            else:
                buffers.waiting[kept] = r
                kept += 1
        buffers.counts[WAITING_N] = kept


@njit(cache=True, inline="always")
def _take_sample(rows, hub_t, buffers: Buffers, state: TimelineState, peer, peer_t, first):
    """The sample (peer's clock ``peer_t`` against the hub's when the beacon left) into the
    peer's model.  A sample far off the model is held as a candidate; a second one that
    agrees with it says the peer's clock stepped: the model restarts from the two
    (reported once, as CLOCK_STEP).  A lone outlier is refused."""
    clocks, nodes, window = state.clocks, state.nodes, state.params.window_us
    h = nodes[0, NODE_T]
    if first:
        cm.add_sync(clocks, peer, peer_t, h, window)
        return
    predicted, _ = cm.to_hub(clocks, peer, peer_t)
    off = h - predicted
    step = state.params.step_us
    if -step <= off <= step:
        nodes[peer, HAS_CANDIDATE] = 0
        if not cm.add_sync(clocks, peer, peer_t, h, window):
            state.counters[REFUSED_SYNCS] += 1
    elif (
        nodes[peer, HAS_CANDIDATE] != 0
        and abs((h - peer_t) - (nodes[peer, CANDIDATE_HUB_T] - nodes[peer, CANDIDATE_NODE_T]))
        <= step
    ):
        clocks.ring_len[peer] = 0
        clocks.ring_start[peer] = 0
        clocks.fit_i[peer, :] = 0
        cm.add_sync(
            clocks, peer, nodes[peer, CANDIDATE_NODE_T], nodes[peer, CANDIDATE_HUB_T], window
        )
        cm.add_sync(clocks, peer, peer_t, h, window)
        nodes[peer, HAS_CANDIDATE] = 0
        state.counters[CLOCK_STEPS] += 1
        make_synthetic(
            buffers, state.epoch, state.counters, len(rows), hub_t, CLOCK_STEP, peer, -off, False
        )
    else:
        nodes[peer, CANDIDATE_NODE_T] = peer_t
        nodes[peer, CANDIDATE_HUB_T] = h
        nodes[peer, HAS_CANDIDATE] = 1
        state.counters[REFUSED_SYNCS] += 1


@njit(cache=True, inline="always")
def node_frame(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A frame of a node with its own clock: mapped onto hub time if its clock is known,
    else left waiting for its first sync."""
    nodes = state.nodes
    node = rows[row, C_NODE]
    rows[row, C_NODE_T] = unwrap_counter(nodes, node, NODE_T, HAS_T, rows[row, C_TRAW], 32)
    rows[row, C_SEQ_U] = unwrap_counter(nodes, node, NODE_SEQ, HAS_SEQ, rows[row, C_SEQ], 16)
    if state.epoch[HELLO_SEEN] == 0:
        nodes[node, PRESENT] = 1  # attached mid-stream: present once heard
    elif nodes[node, PRESENT] == 0:
        state.counters[OUTLIERS] += 1  # the HELLO says there is no such node
        return
    if state.clocks.fit_i[node, cm.FI_N] > 0:
        place(rows, row, buffers, state)
    elif state.keep[rows[row, C_TYPE]]:
        rows[row, C_STATE] = UNSYNCED
        buffers.waiting[buffers.counts[WAITING_N]] = row
        buffers.counts[WAITING_N] += 1


@njit(cache=True)
def expire_waiting(rows, buffers: Buffers, state: TimelineState) -> None:
    """Rows whose node never synced are dropped after a bound."""
    kept = 0
    for j in range(buffers.counts[WAITING_N]):
        r = buffers.waiting[j]
        if state.release[NEWEST_T] - rows[r, C_ARRIVE] > state.params.unsynced_max_us:
            rows[r, C_STATE] = NEW
            state.counters[UNSYNCED_DROPPED] += 1
        else:
            buffers.waiting[kept] = r
            kept += 1
    buffers.counts[WAITING_N] = kept


@njit(cache=True)
def node_mark(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A node's flood starts or ends (NODE_FLOODED, NODE_CALM from the decoder's rate
    limit, dated by the node's own stamp): a synthetic row at that instant's hub time, for
    the fusion.  Never later than needed and never late: with no clock for the node yet,
    or a stamp that maps far from the hub's newest frame (a flood that forges its stamps),
    it is the hub's newest time; and never before a row already released, so it is never
    dropped as late.  The hub (node 0) has no status for the fusion: only counted."""
    node = rows[row, C_NODE]
    if node == 0:
        return
    epoch, nodes = state.epoch, state.nodes
    hub_t = epoch[HUB_NOW]
    if state.clocks.fit_i[node, cm.FI_N] > 0 and nodes[node, HAS_T] != 0:
        node_t = unwrap_step(nodes[node, NODE_T], rows[row, C_TRAW], 32)
        mapped, _ = cm.to_hub(state.clocks, node, node_t)
        if plausible(epoch, state.params, mapped + epoch[BASE]):
            hub_t = mapped + epoch[BASE]
    hub_t = max(hub_t, state.release[LAST_RELEASED_T])
    make_synthetic(
        buffers, epoch, state.counters, len(rows), hub_t, rows[row, C_TYPE], node, 0, True
    )
