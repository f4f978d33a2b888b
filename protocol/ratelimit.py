"""Per-node rate limits on each node's own clock: a flooding node is dropped, not believed.

ICD §4 and §7 give two rates: the tracker sends at most 240 frames/s (120
by default) and the hub its HEARTBEAT at 1 Hz.  A node that sends faster
than its datasheet lets it is broken or imitated (issue 29): whatever it
says is garbage, and 5 000 extra tracker frames a second once turned every
verdict into foul 17.  The other nodes have no datasheet rate, so their
bound is one a real break never reaches (docs/security.md has the figures
and why).

Each limit is a token bucket in *its node's own clock* (the header's
``t_us``), never the host's: a capture replayed at any speed and the live
link decide alike.  ``credit`` grows by ``rate`` per µs of the node's time up
to ``burst`` frames; a frame costs :data:`UNIT`.  A frame that finds no
credit puts its node in *flood*: from there every frame of that class is
dropped and counted (its true frames can no longer be told from the
flood's), until the node has kept to its rate for ``calm_us`` of its own
time; the frame that shows it is taken again.  :func:`admit` answers per
frame, in the bulk decoder's kernel (``protocol.kernels.scan``).

A stamp behind the newest by a little (jitter) earns no credit; one far
behind (more than :data:`RESTART_US`) is a clock that restarted (a reboot
whose HELLO was lost): the bucket follows it without credit.  A stamp more
than :data:`MAX_STEP_US` ahead earns nothing either (a node silent that long
kept the credit it had): a flood whose stamps leap back and forth buys no
frames.  One whose stamps step back and forth by a few seconds can (the
limit reads the node's clock, and a clock that does that is garbage the
timing core holds or drops as implausible; docs/security.md).

Classes: 0 the hub's HEARTBEAT (the hub's other frames have no bound: it is
the bus master and its CLOCK_SYNC, ACK and NODE_STATUS come at its pace),
1-7 every frame of node 1-7.
"""

from __future__ import annotations

import numba
import numpy as np

from .catalogue import BY_NAME, NODE_IDS

HEARTBEAT = BY_NAME["HEARTBEAT"].msg_type
CLASSES = 8  # 0: the hub's HEARTBEAT; n: node n
UNIT = 1_000_000  # credit one frame costs; ``rate`` is earned per µs of the node's clock
RESTART_US = 1_000_000  # a stamp this far behind the newest: the node's clock restarted
MAX_STEP_US = 10_000_000  # a stamp further ahead of the newest earns no credit
_MASK = 0xFFFFFFFF
_HALF = 1 << 31

# A class's state row (int64): a stamp seen, the newest stamp, credit, in flood, the last
# stamp that found the bucket full, the last stamp that found no credit.
HAS, REF, CREDIT, FLOODED, FULL_T, OVER_T = range(6)
STATE_COLUMNS = 6
# A class's limit row: frames per second, burst (frames), calm time (µs of its clock).
RATE, BURST, CALM_US = range(3)

# What admit() says of a frame; also the frame table's ``rate`` field.
TAKE, DROP, FLOOD, CALM = 0, 1, 2, 3

#: The tracker's datasheet rate (ICD §7: 120 frames/s, up to 240), with a burst of two
#: frames: its stamps are camera exposures (jitter σ 100 µs, 2.4 % of a frame at 240/s),
#: so a real tracker never runs two frames ahead; a flood is caught by its third frame.
TRACKER = (240, 2, 1_000_000)
#: HEARTBEAT at 1 Hz (ICD §4); three in a row allow a late one and the next on time.
HUB_HEARTBEAT = (1, 3, 3_000_000)
#: Every other node: no datasheet rate, so a bound no real match reaches.  A break sends
#: a few hundred frames within milliseconds (the rails' ring-downs, the clicks of the
#: rack), so 1 000 in a burst and 1 000 a second after it, on the node's own clock: ten
#: times the busiest second of the corpus (docs/security.md), and a node beyond it is no
#: table.
OTHER = (1_000, 1_000, 1_000_000)


def limits() -> np.ndarray:
    """The limits per class (int64 (CLASSES, 3): rate, burst, calm µs)."""
    out = np.array([OTHER] * CLASSES, np.int64)
    out[0] = HUB_HEARTBEAT
    out[NODE_IDS["tracker"]] = TRACKER
    return out


LIMITS = limits()


def states() -> np.ndarray:
    """Empty buckets for one stream: int64 (CLASSES, STATE_COLUMNS)."""
    return np.zeros((CLASSES, STATE_COLUMNS), np.int64)


def limit_text(node: int) -> str:
    """A node's limit in words, for the notices and the docs' reader."""
    rate, burst, calm = (int(v) for v in LIMITS[node])
    what = "HEARTBEAT" if node == 0 else "frames"
    return f"{rate} {what}/s on its own clock (burst {burst}, calm after {calm / 1e6:g} s)"


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def rate_class(node: int, msg_type: int) -> int:
    """The bucket a frame counts in, -1 for none (the hub's frames other than HEARTBEAT,
    the host's)."""
    if node == 0:
        return 0 if msg_type == HEARTBEAT else -1
    return node if node < CLASSES else -1


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def admit(state: np.ndarray, limit: np.ndarray, t_us: int) -> int:
    """TAKE, DROP, FLOOD (the first frame dropped) or CALM (taken: the flood is over) for a
    frame of this class stamped ``t_us``; ``state`` is the class's row, updated."""
    cap = limit[BURST] * UNIT
    if state[HAS] == 0:
        state[HAS] = 1
        state[REF] = t_us
        state[CREDIT] = cap
    else:
        ahead = (t_us - state[REF]) & _MASK
        if ahead < _HALF:
            if ahead <= MAX_STEP_US:
                state[CREDIT] = min(cap, state[CREDIT] + ahead * limit[RATE])
            state[REF] = t_us
        elif (1 << 32) - ahead > RESTART_US:
            state[REF] = t_us  # the clock restarted: followed, no credit earned
    if state[CREDIT] >= cap:
        state[FULL_T] = t_us
    fits = state[CREDIT] >= UNIT
    if fits:
        state[CREDIT] -= UNIT
    if state[FLOODED] == 0:
        if fits:
            return TAKE
        state[FLOODED] = 1
        state[OVER_T] = t_us
        return FLOOD
    if not fits:
        state[OVER_T] = t_us
        return DROP
    calm = (t_us - state[OVER_T]) & _MASK
    if calm < _HALF and calm >= limit[CALM_US]:
        state[FLOODED] = 0
        return CALM
    return DROP


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def flood_from(state: np.ndarray) -> int:
    """The node's stamp (u32) its flood is dated from: just before the last frame that found
    its bucket full, so the frames that emptied it (the flood's first) are set aside too."""
    return (state[FULL_T] - 1) & _MASK
