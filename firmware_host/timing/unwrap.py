"""Unwrapping the wire's wrapping counters (ICD §3) into monotonic int64.

``t_us`` wraps every 71.6 min and ``seq`` every 65 536 frames.  Within one
node, successive values are close to each other (a few seconds apart at
most, since CLOCK_SYNC samples every node at >= 4 Hz), so the nearest
representative rule is exact: the step from the previous value is taken
modulo the counter's range and read as a signed number.  A step backwards
of less than half the range is kept as a step backwards (e.g. a sensor's
jitter between two close events), never read as a wrap.

>>> import numpy as np
>>> unwrap(np.array([4294967290, 5, 1], np.int64), 32).tolist()
[4294967290, 4294967301, 4294967297]
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def unwrap_step(previous: np.int64, raw: np.int64, bits: np.int64) -> np.int64:
    """The unwrapped value of ``raw`` nearest to the unwrapped ``previous``."""
    span = np.int64(1) << bits
    half = span >> 1
    step = (raw - previous) % span  # numba: sign of the divisor, so in [0, span)
    if step >= half:
        step -= span
    return previous + step


@njit(cache=True)
def unwrap(raw: np.ndarray, bits: np.int64) -> np.ndarray:
    """A whole column of one counter, unwrapped from its first value."""
    out = np.empty(len(raw), np.int64)
    if len(raw) == 0:
        return out
    out[0] = raw[0]
    for i in range(1, len(raw)):
        out[i] = unwrap_step(out[i - 1], raw[i], bits)
    return out


@njit(cache=True)
def unwrap_chained(
    raw: np.ndarray, key: np.ndarray, state: np.ndarray, bits: np.int64
) -> np.ndarray:
    """One clock carried across runs of a counter: within a run of equal ``key`` each
    value unwrapped from the last, a new key's run going on from where the last ended.
    ``state`` holds (key, unwrapped value, clock) of the latest value and is updated,
    so a column may come in chunks; a key of -1 there means none yet.  One pass where a
    loop per run cost a pass of the chunk per run (a capture of forged reboots: 27 000
    runs a chunk, 14 s of 16)."""
    out = np.empty(len(raw), np.int64)
    current, previous, clock = state[0], state[1], state[2]
    for i in range(len(raw)):
        if key[i] != current:
            current, previous = key[i], raw[i]
        else:
            value = unwrap_step(previous, raw[i], bits)
            clock += value - previous
            previous = value
        out[i] = clock
    state[0], state[1], state[2] = current, previous, clock
    return out
