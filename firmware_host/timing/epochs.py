"""The hub's frames: the reference clock, and its epochs (ICD §3: a boot resets everything).

A hub frame that continues the hub's clock and counters is the reference
time (:func:`accept_hub`).  A HELLO with a new ``boot_id`` whose clock and
seq did not run on starts a new epoch (:func:`hello`): what is pending is
released, the clock models are cleared, and hub time is shifted so it keeps
increasing (:func:`new_epoch`).  A hub frame that does not continue the
clock is held; the next one decides (:func:`hub_frame`): time passing (a
stalled link), a reboot whose HELLO was lost (a boot inferred), or an
outlier.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .mapping import accept_in, drop, review_held, sync, unwrap_counter
from .release import make_synthetic, release_upto
from .rows import (
    C_HUB,
    C_NODE_T,
    C_SEQ,
    C_SEQ_U,
    C_STATE,
    C_TRAW,
    C_TYPE,
    C_UNC,
    HELD,
    col,
    cols,
    type_of,
)
from .state import (
    BALL_UM,
    BASE,
    BOOT_ID,
    BOOTED,
    EPOCH,
    FIRST_HUB_T,
    HAS_SEQ,
    HAS_T,
    HELD_N,
    HELLO_SEEN,
    HUB_NOW,
    INFERRED_BOOTS,
    INFERRED_T,
    NEWEST_T,
    NODE_SEQ,
    NODE_T,
    OFFLINE,
    PRESENT,
    SEEN_T,
    STRAY_HELLOS,
    SUSPECT,
    TABLE_LENGTH_MM,
    TABLE_WIDTH_MM,
    UNSYNCED_DROPPED,
    UPTIME,
    WAITING_N,
    Buffers,
    Params,
    TimelineState,
)
from .unwrap import unwrap_step

HELLO, CLOCK_SYNC, NODE_STATUS = type_of("HELLO"), type_of("CLOCK_SYNC"), type_of("NODE_STATUS")
HEARTBEAT = type_of("HEARTBEAT")
_BOOT_ID = col("HELLO", "boot_id")
_NODES_PRESENT = col("HELLO", "nodes_present")
_LEN, _WID, _BALL = cols("HELLO", "table_length_mm", "table_width_mm", "ball_diameter_um")
_STATUS_PEER = col("NODE_STATUS", "peer")
_STATUS_CODE = col("NODE_STATUS", "code")
_UPTIME = col("HEARTBEAT", "uptime_s")
OFFLINE_CODE = 1
_SEQ_BACK, _SEQ_AHEAD = 64, 4096  # a hub seq step outside this is a restarted counter


@njit(cache=True)
def steps(previous_t, previous_seq, t_raw, seq_raw) -> tuple[np.int64, np.int64]:
    """How far a hub frame's clock and seq moved on from an earlier one's (unwrapped)."""
    return (
        unwrap_step(previous_t, t_raw, 32) - previous_t,
        unwrap_step(previous_seq, seq_raw, 16) - previous_seq,
    )


@njit(cache=True)
def continues(clock_step, seq_step, params: Params) -> bool:
    """Steps a running hub makes between two of its frames."""
    return (
        -params.hub_back_us <= clock_step <= params.hub_gap_us
        and -_SEQ_BACK <= seq_step <= _SEQ_AHEAD
    )


@njit(cache=True)
def uptime_restarted(nodes, uptime) -> bool:
    """A HEARTBEAT (uptime >= 0) whose uptime went back: the hub rebooted."""
    return uptime >= 0 and nodes[0, UPTIME] > 0 and uptime + 2 < nodes[0, UPTIME] - 1


@njit(cache=True)
def hub_follows(nodes, t_raw, seq_raw, uptime, params: Params) -> bool:
    """Does a hub frame continue the hub's accepted clock and counters?"""
    if nodes[0, HAS_T] == 0:
        return True
    clock_step, seq_step = steps(nodes[0, NODE_T], nodes[0, NODE_SEQ], t_raw, seq_raw)
    return not uptime_restarted(nodes, uptime) and continues(clock_step, seq_step, params)


@njit(cache=True)
def follows_row(rows, suspect, row, params: Params) -> bool:
    """Does hub row ``row`` continue hub row ``suspect`` (a held one)?"""
    clock_step, seq_step = steps(
        rows[suspect, C_TRAW], rows[suspect, C_SEQ], rows[row, C_TRAW], rows[row, C_SEQ]
    )
    return continues(clock_step, seq_step, params)


@njit(cache=True)
def uptime_of(rows, row) -> np.int64:
    """A HEARTBEAT's uptime, which tells a reboot from a stalled link; -1 for other rows."""
    return rows[row, _UPTIME] if rows[row, C_TYPE] == HEARTBEAT else np.int64(-1)


@njit(cache=True)
def time_passed(rows, suspect, nodes) -> bool:
    """A confirmed hub step that is only time passing (a stalled link), not a reboot."""
    clock_step, seq_step = steps(
        nodes[0, NODE_T], nodes[0, NODE_SEQ], rows[suspect, C_TRAW], rows[suspect, C_SEQ]
    )
    restarted = uptime_restarted(nodes, uptime_of(rows, suspect))
    return clock_step > 0 and 0 < seq_step <= _SEQ_AHEAD and not restarted


@njit(cache=True)
def new_epoch(rows, t_raw, buffers: Buffers, state: TimelineState) -> None:
    """Every clock and counter of the table restarted: release the old epoch, clear the models.

    Hub time runs on across the restart (the new epoch's first hub frame
    lands 2 µs after the newest hub time so far), so it never goes back.
    """
    epoch, counts = state.epoch, buffers.counts
    release_upto(buffers, state.release, state.counters, np.iinfo(np.int64).max)
    state.counters[UNSYNCED_DROPPED] += counts[WAITING_N]
    counts[WAITING_N] = 0
    for j in range(counts[HELD_N]):
        drop(rows, buffers.held[j], state.counters)
    counts[HELD_N] = 0
    if epoch[HELLO_SEEN] != 0 or epoch[FIRST_HUB_T] >= 0:
        epoch[EPOCH] += 1
    state.nodes[:, :] = 0
    state.clocks.ring_len[:] = 0
    state.clocks.ring_start[:] = 0
    state.clocks.fit_i[:, :] = 0
    epoch[BASE] = max(0, state.release[NEWEST_T] + 2 - t_raw) if epoch[EPOCH] > 0 else 0


@njit(cache=True)
def boot_synthetic(rows, buffers: Buffers, state: TimelineState, hub_t, present) -> None:
    """A boot the stream did not announce: a join, or a reboot whose HELLO was lost."""
    make_synthetic(buffers, state.epoch, state.counters, len(rows), hub_t, HELLO, present, 0, True)
    state.epoch[BOOTED] = 1


@njit(cache=True, inline="always")
def accept_hub(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A hub frame that continues the hub's clock: it is the reference time."""
    nodes, epoch = state.nodes, state.epoch
    rows[row, C_NODE_T] = unwrap_counter(nodes, 0, NODE_T, HAS_T, rows[row, C_TRAW], 32)
    rows[row, C_SEQ_U] = unwrap_counter(nodes, 0, NODE_SEQ, HAS_SEQ, rows[row, C_SEQ], 16)
    up = uptime_of(rows, row)
    if up >= 0:
        nodes[0, UPTIME] = up + 1
    hub_t = nodes[0, NODE_T] + epoch[BASE]
    rows[row, C_HUB] = hub_t
    rows[row, C_UNC] = 0
    epoch[HUB_NOW] = max(epoch[HUB_NOW], hub_t)
    if epoch[FIRST_HUB_T] < 0:
        epoch[FIRST_HUB_T] = hub_t
    mtype = rows[row, C_TYPE]
    if mtype == CLOCK_SYNC:
        sync(rows, row, hub_t, buffers, state)
    elif mtype == NODE_STATUS:
        peer = rows[row, _STATUS_PEER]
        if 0 < peer < nodes.shape[0]:
            nodes[peer, OFFLINE] = 1 if rows[row, _STATUS_CODE] == OFFLINE_CODE else 0
            if nodes[peer, OFFLINE] == 0:
                nodes[peer, SEEN_T] = max(nodes[peer, SEEN_T], hub_t)
    accept_in(rows, row, buffers, state)
    if buffers.counts[HELD_N] > 0:
        review_held(rows, buffers, state, False)


@njit(cache=True)
def hello(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A HELLO: a reboot (ICD §3) only if the hub's clock and counters did not run on.

    A repeat of the running boot's HELLO (firmware 1.1 answers REQUEST_HELLO
    with one) changes nothing.  A HELLO whose clock and seq continue the
    hub's is no reboot either: the first one after a join names the boot, a
    later one with a new boot_id is stray (counted).  Nor is the first HELLO
    within ``join_us`` of a boot inferred (:func:`names_inferred`), whatever
    its clock: it is that boot's, one boot.
    """
    epoch, nodes = state.epoch, state.nodes
    boot = rows[row, _BOOT_ID]
    present = rows[row, _NODES_PRESENT] | 1
    if epoch[HELLO_SEEN] != 0 and boot == epoch[BOOT_ID]:
        return
    if rows[row, _LEN] > 0 and rows[row, _WID] > 0 and rows[row, _BALL] > 0:
        epoch[TABLE_LENGTH_MM] = rows[row, _LEN]
        epoch[TABLE_WIDTH_MM] = rows[row, _WID]
        epoch[BALL_UM] = rows[row, _BALL]
    runs_on = nodes[0, HAS_T] != 0 and hub_follows(
        nodes, rows[row, C_TRAW], rows[row, C_SEQ], -1, state.params
    )
    if runs_on and epoch[HELLO_SEEN] != 0:
        state.counters[STRAY_HELLOS] += 1
        return
    if runs_on or names_inferred(epoch, state.params):
        epoch[INFERRED_T] = -1
        epoch[HELLO_SEEN] = 1
        epoch[BOOT_ID] = boot
        for k in range(nodes.shape[0]):
            nodes[k, PRESENT] |= (present >> k) & 1
        if epoch[BOOTED] != 0:
            return  # the inferred boot (a join's, a reboot's) stands; this only names it
        accept_hub(rows, row, buffers, state)
        epoch[BOOTED] = 1
        return
    if buffers.counts[SUSPECT] >= 0:
        drop(rows, buffers.counts[SUSPECT], state.counters)
        buffers.counts[SUSPECT] = -1
    new_epoch(rows, rows[row, C_TRAW] + 1, buffers, state)
    epoch[INFERRED_T] = -1
    epoch[HELLO_SEEN] = 1
    epoch[BOOT_ID] = boot
    for k in range(nodes.shape[0]):
        nodes[k, PRESENT] = (present >> k) & 1
    accept_hub(rows, row, buffers, state)
    epoch[BOOTED] = 1


@njit(cache=True)
def names_inferred(epoch, params: Params) -> bool:
    """A HELLO that comes within ``join_us`` of hub time after a boot inferred, before any
    other HELLO: that boot's own, late (issue 26: a live run wrote it as a second reboot).
    It names the boot; the hub frames that made the inference keep the clock, so a HELLO
    stamped behind them (over ``hub_back_us``) starts no epoch and no boot of its own."""
    return (
        epoch[HELLO_SEEN] == 0
        and epoch[INFERRED_T] >= 0
        and epoch[HUB_NOW] - epoch[INFERRED_T] <= params.join_us
    )


@njit(cache=True, inline="always")
def hub_frame(rows, row, buffers: Buffers, state: TimelineState) -> None:
    """A hub frame other than HELLO: accepted if it continues the hub's clock, else held.

    The next hub frame decides a held one: if it continues the held frame,
    the step was real -- time passing (clock and seq forward) or, with the
    clock or seq gone back or the uptime restarted, a reboot whose HELLO was
    lost (a new epoch); if it continues the old clock, the held frame was an
    outlier.
    """
    nodes, counts = state.nodes, buffers.counts
    suspect = counts[SUSPECT]
    uptime = uptime_of(rows, row)
    if hub_follows(nodes, rows[row, C_TRAW], rows[row, C_SEQ], uptime, state.params):
        if suspect >= 0:
            drop(rows, suspect, state.counters)
            counts[SUSPECT] = -1
        accept_hub(rows, row, buffers, state)
        return
    if suspect >= 0 and follows_row(rows, suspect, row, state.params):
        counts[SUSPECT] = -1
        if not time_passed(rows, suspect, nodes):
            _reboot_inferred(rows, suspect, buffers, state)
        accept_hub(rows, suspect, buffers, state)
        accept_hub(rows, row, buffers, state)
        return
    if suspect >= 0:
        drop(rows, suspect, state.counters)
    rows[row, C_STATE] = HELD
    counts[SUSPECT] = row


@njit(cache=True, inline="always")
def _reboot_inferred(rows, suspect, buffers: Buffers, state: TimelineState) -> None:
    """The hub's clock or counters restarted at held row ``suspect`` without a HELLO: a new
    epoch with the nodes present before, and a boot inferred for it (its id unknown: its
    HELLO may still come)."""
    nodes = state.nodes
    present = np.int64(0)
    for k in range(nodes.shape[0]):
        present |= nodes[k, PRESENT] << k
    new_epoch(rows, rows[suspect, C_TRAW], buffers, state)
    state.counters[INFERRED_BOOTS] += 1
    state.epoch[HELLO_SEEN] = 0
    for k in range(nodes.shape[0]):
        nodes[k, PRESENT] = (present >> k) & 1
    hub_t = state.release[NEWEST_T] + 1
    state.epoch[INFERRED_T] = hub_t  # its HELLO may still come (names_inferred)
    boot_synthetic(rows, buffers, state, hub_t, present | 1)
