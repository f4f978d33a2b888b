"""Where a frame's ``seq`` stands among its node's recent ones: the one rule (ICD §3, §7).

Every node counts its frames, +1 per new frame, wrapping 65535 → 0; a
retransmission (flags bit 0) repeats an earlier frame's ``seq`` and may
arrive any number of frames late (ICD §7: within one node frames arrive in
``seq`` order, retransmissions aside; a radio node resends until it is
heard).  So a frame is, against the newest ``seq`` of its node:

=============  ===========================================================
``FIRST``      the node's first frame (of the stream, or since a reboot)
``NEXT``       one ahead
``GAP``        further ahead (less than half the counter): the frames in
               between were lost (``missing`` of them)
``LATE``       a retransmission behind, of a ``seq`` never seen: a frame
               counted lost has arrived after all
``DUPLICATE``  a retransmission of a ``seq`` already seen, or one older
               than the window (too old to tell: taken as delivered, so
               never delivered twice)
``RESTART``    behind (or equal) and *not* a retransmission: the node
               restarted its counter on its own
``CONFLICT``   the very ``seq`` of the node's newest frame again, *not* a
               retransmission and with other content (another CRC): two
               senders claim one ``seq``, one of them a forger (issue 29).
               Marked by the decoder (which knows the content), never by
               :func:`classify`; the window stays as it was
=============  ===========================================================

A retransmission is never a restart, however late (issue 30: one 100
frames late was once taken for a restart and charged a loss of 100).
The window remembers the last :data:`WINDOW` ``seq`` values of each node as
a ring of bits indexed by ``seq % WINDOW`` (65536 is a multiple of it, so
the ring is unbroken across the wrap).

:func:`classify` only looks (a caller that must check a frame further
before it counts, e.g. a signature, calls it first); :func:`remember`
takes the frame into the window; :func:`account` does both.  They run in
the bulk decoder's kernel and work on one node's row of a state array
from :func:`seq_states`: ``[has, last, ring words...]``.

>>> state = seq_states(1)
>>> [int(account(state[0], s, r)[0]) for s, r in ((7, 0), (8, 0), (11, 0), (9, 1), (9, 1), (2, 0))]
[1, 2, 3, 4, 5, 6]
"""

from __future__ import annotations

import numba
import numpy as np

SEQ_MOD = 1 << 16
HALF = SEQ_MOD // 2  # ahead by less than this is ahead; otherwise behind
WINDOW = 1024  # seq values remembered per node (a power of two dividing SEQ_MOD)
_WORDS = WINDOW // 64
HAS, LAST, RING = 0, 1, 2  # columns of a node's state row; the ring's words start at RING
STATE_COLUMNS = RING + _WORDS

# Marks: what a frame's seq says (the frame table's ``seq_mark``).  NONE: a bad frame;
# REBOOT: the hub HELLO with a new boot_id, which restarts every node's counter.
NONE, FIRST, NEXT, GAP, LATE, DUPLICATE, RESTART, REBOOT, CONFLICT = range(9)
MARK_NAMES = ("-", "first", "next", "gap", "late", "duplicate", "restart", "reboot", "conflict")


def seq_states(nodes: int = 256) -> np.ndarray:
    """Empty windows for ``nodes`` nodes: int64 (nodes, :data:`STATE_COLUMNS`)."""
    return np.zeros((nodes, STATE_COLUMNS), np.int64)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def ahead(seq: int, last: int) -> int:
    """How far ``seq`` is after ``last`` on the wrapping counter, 0 … 65535."""
    return (seq - last) & (SEQ_MOD - 1)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _seen(row: np.ndarray, seq: int) -> bool:
    """Whether ``seq`` is marked in the node's ring of the last ``WINDOW`` sequence numbers."""
    i = seq & (WINDOW - 1)
    return (row[RING + (i >> 6)] >> (i & 63)) & 1 != 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def classify(row: np.ndarray, seq: int, retx: bool) -> tuple[int, int]:
    """(mark, frames missing just before it) for a frame of this node; changes nothing."""
    if row[HAS] == 0:
        return FIRST, 0
    d = ahead(seq, row[LAST])
    if d == 1:
        return NEXT, 0
    if 0 < d < HALF:
        return GAP, d - 1
    if not retx:
        return RESTART, 0
    if d == 0 or SEQ_MOD - d >= WINDOW or _seen(row, seq):
        return DUPLICATE, 0
    return LATE, 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def reuses_newest(row: np.ndarray, seq: int, retx: bool) -> bool:
    """A frame that is not a retransmission claims the ``seq`` of the node's newest frame:
    a conflict if its content differs (the caller compares), else a plain repeat."""
    return row[HAS] != 0 and not retx and seq == row[LAST]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def remember(row: np.ndarray, seq: int, mark: int) -> None:
    """Take a frame :func:`classify` marked into the window."""
    if mark == DUPLICATE:
        return
    if mark == FIRST or mark == RESTART:
        row[RING:] = 0
    elif mark == NEXT or mark == GAP:
        d = ahead(seq, row[LAST])
        if d > WINDOW:
            row[RING:] = 0
        else:
            for s in range(row[LAST] + 1, row[LAST] + d):  # the lost ones: not seen
                i = s & (WINDOW - 1)
                row[RING + (i >> 6)] &= ~(np.int64(1) << (i & 63))
    i = seq & (WINDOW - 1)
    row[RING + (i >> 6)] |= np.int64(1) << (i & 63)
    if mark != LATE:
        row[HAS] = 1
        row[LAST] = seq


@numba.njit(cache=True, nogil=True, boundscheck=False)
def account(row: np.ndarray, seq: int, retx: bool) -> tuple[int, int]:
    """:func:`classify`, then :func:`remember`: the decoder's step per good frame."""
    mark, missing = classify(row, seq, retx)
    remember(row, seq, mark)
    return mark, missing
