"""What the timeline keeps between calls, and one call's buffers: NamedTuples, named slots.

The timeline's scalars sit in small int64 arrays by concern (the epoch, the
release, the counters), each slot named below; each node's state is a row
of ``nodes`` with named columns; the clock models are
:class:`.clock_model.ClockArrays`.  :class:`TimelineState` holds them for
the driver (:func:`.advance.advance`); :class:`Buffers` are what one call
fills, sized by the caller from what the call can produce.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import clock_model as cm

# -- the epoch: the hub's boot and its clock ------------------------------------------------------
(
    EPOCH,  # hub boot epochs so far (0: before the first HELLO)
    BOOT_ID,  # the running boot's id (ICD §3)
    BASE,  # added to the hub's clock: hub time keeps increasing across epochs
    HELLO_SEEN,  # the running boot's HELLO was seen (0: joined mid-stream, or a boot inferred)
    BOOTED,  # a boot (a HELLO, or one inferred) has been released
    FIRST_HUB_T,  # hub time of the first hub frame heard (-1: none yet)
    HUB_NOW,  # hub time of the newest accepted hub frame: the reference "now"
    TABLE_LENGTH_MM,  # the table's size from the last HELLO (ICD defaults until one)
    TABLE_WIDTH_MM,
    BALL_UM,
    INFERRED_T,  # hub time of a boot inferred whose HELLO has not come (-1: none)
) = range(11)
N_EPOCH = 11

# -- the release ------------------------------------------------------------------------------------
NEWEST_T, LAST_RELEASED_T, RELEASED_UPTO = range(3)  # the newest hub time any row mapped to, ...

# -- counters: each counts something strange in the stream -------------------------------------
(
    LATE,  # rows that came after a later one was released: dropped
    UNSYNCED_DROPPED,  # rows whose node never synced
    REFUSED_SYNCS,  # CLOCK_SYNC samples refused
    OUTLIERS,  # frames held as implausible, then dropped
    STRAY_HELLOS,  # HELLOs with a new boot_id whose hub clock and seq ran on
    CLOCK_STEPS,  # node clocks found stepped, and resynced
    INFERRED_BOOTS,  # hub reboots recognised without their HELLO
    OVERFLOW,  # rows that found no room in a buffer (sized so it never happens)
) = range(8)
N_COUNTERS = 8

# -- each node: a row of TimelineState.nodes -----------------------------------------------------
(
    NODE_T,  # its clock, unwrapped
    HAS_T,
    NODE_SEQ,  # its seq, unwrapped
    HAS_SEQ,
    OWN_T,  # hub time of its latest own frame
    SEEN_T,  # hub time of the latest frame about it (its own or its CLOCK_SYNC)
    PRESENT,  # in the HELLO (or heard, attached mid-stream)
    OFFLINE,  # the hub reported it offline
    SILENT,  # declared silent (NODE_SILENT)
    CANDIDATE_NODE_T,  # a CLOCK_SYNC sample that disagreed with the node's clock model
    CANDIDATE_HUB_T,
    HAS_CANDIDATE,
    UPTIME,  # hub only: HEARTBEAT uptime_s, +1 (0: none yet)
) = range(13)
N_NODE_COLUMNS = 13


class Params(NamedTuple):
    """:class:`.timeline.TimelineParams` as the kernels read them (int64, µs of hub time)."""

    lag_us: np.int64
    slack_us: np.int64
    silence_us: np.int64
    unsynced_max_us: np.int64
    window_us: np.int64
    ahead_us: np.int64
    behind_us: np.int64
    hold_us: np.int64
    step_us: np.int64
    hub_back_us: np.int64
    hub_gap_us: np.int64
    join_us: np.int64


class TimelineState(NamedTuple):
    """Everything the timeline keeps between calls."""

    epoch: np.ndarray  # (N_EPOCH,) int64, the slots above
    release: np.ndarray  # (3,) int64 NEWEST_T, LAST_RELEASED_T, RELEASED_UPTO
    counters: np.ndarray  # (N_COUNTERS,) int64
    nodes: np.ndarray  # (cm.N_NODES, N_NODE_COLUMNS) int64
    clocks: cm.ClockArrays  # each node's clock model (this epoch)
    params: Params
    keep: np.ndarray  # (256,) bool: the message types released to the fusion


# -- one call's buffers --------------------------------------------------------------------------
# Buffers.counts slots: entries in the release heap, rows released, synthetic rows made, rows
# waiting for their node's first sync, rows held as implausible, a held hub frame (-1: none)
HEAP_N, RELEASED_N, SYNTHETIC_N, WAITING_N, HELD_N, SUSPECT = range(6)
# synthetic rows' columns: hub time, type, a, epoch, b
SYN_HUB_T, SYN_TYPE, SYN_A, SYN_EPOCH, SYN_B = range(5)


class Buffers(NamedTuple):
    """One call's buffers, sized by the caller from what the call can produce.

    Row indices ``>= len(rows)`` name synthetic rows ``synthetic[i - len(rows)]``
    (``SYN_*`` columns): NODE_SILENT / NODE_BACK (a = node), CLOCK_STEP (a =
    node, b = step µs, never released) and an inferred boot (type HELLO, a =
    nodes heard).
    """

    heap_t: np.ndarray  # (rows + synthetic,) release heap: hub time
    heap_i: np.ndarray  # and row index
    waiting: np.ndarray  # (rows,) rows waiting for their node's first sync
    held: np.ndarray  # (rows,) rows held as implausible
    synthetic: np.ndarray  # (m, 5) synthetic rows
    released: np.ndarray  # (rows + synthetic,) released, in order
    counts: np.ndarray  # (6,) int64, the slots above


def new_state(params: Params, keep: np.ndarray, table_mm: tuple[int, int, int]) -> TimelineState:
    """The state at the start of a stream: no epoch, no clock, nothing released; the
    table's length, width (mm) and ball diameter (µm) as the ICD's defaults give them."""
    epoch = np.zeros(N_EPOCH, np.int64)
    epoch[FIRST_HUB_T] = -1
    epoch[INFERRED_T] = -1
    epoch[TABLE_LENGTH_MM], epoch[TABLE_WIDTH_MM], epoch[BALL_UM] = table_mm
    return TimelineState(
        epoch=epoch,
        release=np.zeros(3, np.int64),
        counters=np.zeros(N_COUNTERS, np.int64),
        nodes=np.zeros((cm.N_NODES, N_NODE_COLUMNS), np.int64),
        clocks=cm.clock_arrays(),
        params=params,
        keep=keep,
    )


def new_buffers(n_rows: int, n_synthetic: int) -> Buffers:
    """Buffers for a call over ``n_rows`` rows that may make ``n_synthetic`` rows."""
    cap = n_rows + n_synthetic
    return Buffers(
        heap_t=np.empty(cap, np.int64),
        heap_i=np.empty(cap, np.int64),
        waiting=np.empty(n_rows, np.int64),
        held=np.empty(n_rows, np.int64),
        synthetic=np.zeros((n_synthetic, 5), np.int64),
        released=np.empty(cap, np.int64),
        counts=np.array([0, 0, 0, 0, 0, -1], np.int64),
    )
