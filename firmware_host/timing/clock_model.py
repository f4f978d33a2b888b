"""Each node's clock against the hub's, from CLOCK_SYNC (ICD §4, §7).

A CLOCK_SYNC pairs ``h`` (hub clock when a beacon left) with ``n`` (the
peer's clock when it arrived).  With ``H(n)`` the hub time of node time
``n``, ``H(n_i) = h_i + d_i`` where the delay ``d_i`` is always positive and
often much larger than its minimum (cue radio: 150-400 µs, 5 % retried
1-5 ms late).  So in the plane of node time against the offset ``h - n``,
every sample lies *below* the true line ``H(n) - n - d_min`` and the
samples with the smallest delay touch it.  The estimator is the lower
envelope of the delays (the upper envelope of the offsets):

    the line above every sample of the window that is lowest at the
    window's mean node time (the LP of Moon, Skelly & Towsley 1999).

Its solution is the upper convex-hull edge spanning the mean, found in one
monotone-chain pass.  Late and retried beacons never move it; a least-
squares fit would sit at the *mean* delay (hundreds of µs low on the cue).

The envelope is ``d_min`` of the window's luckiest beacon below the truth;
we add the datasheet's minimum delay of that link (wired 8 µs, cue
150 µs), so the residual bias is how far the luckiest beacon of the window
was above the datasheet minimum: on average ``(d_max - d_min) / (m + 1)``
for ``m`` samples, under 1 µs with the default 16 s window.  The
uncertainty we report is that figure plus the slope's extrapolation error.

The window is *trailing* (samples received so far, within ``WINDOW_US`` of
hub time), so the model for a frame depends only on what came before it in
the stream: the live path and the batch path see the same fit for every
frame.  Slow drift (temperature) is tracked because the window slides; a
frequency change of 1 ppm/min costs < 2 µs at the window's newest end.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

N_NODES = 8  # hub + nodes 1-7; the host (0x80) never stamps table events
CAPACITY = 512  # samples kept per node: 16 s at up to 32 Hz
WINDOW_US = 16_000_000

#: ICD §7, per node: minimum / maximum beacon delay and worst frequency error.
MIN_DELAY_US = np.array([0, 8, 8, 150, 8, 8, 8, 8], np.float64)
MAX_DELAY_US = np.array([0, 20, 20, 400, 20, 20, 20, 20], np.float64)
MAX_PPM = np.array([50, 50, 50, 100, 50, 50, 50, 50], np.float64)
#: Against the hub, whose own crystal is off by up to 50 ppm too.
REL_PPM = MAX_PPM + MAX_PPM[0]

# fit_i columns: reference node time, hub-minus-node offset at it (µs, int)
FI_NREF, FI_OREF, FI_N = 0, 1, 2
# fit_f columns: envelope value at the reference, slope, mean x, samples, span
FF_A, FF_B, FF_XBAR, FF_M, FF_SPAN = 0, 1, 2, 3, 4


class ClockArrays(NamedTuple):
    """The clock models of every node for one epoch, as arrays the kernels update."""

    ring_n: np.ndarray  # (node, capacity) sync samples: node time,
    ring_h: np.ndarray  # hub time the beacon left
    ring_start: np.ndarray  # ring buffer start per node
    ring_len: np.ndarray  # and length
    fit_i: np.ndarray  # FI_* per node
    fit_f: np.ndarray  # FF_* per node


@njit(cache=True)
def envelope_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The line above every (x, y) that is lowest at mean(x); x ascending.

    Returns (value at x = 0, slope).  One point: the horizontal line
    through it (no frequency information yet).
    """
    m = len(x)
    if m == 1:
        return y[0], 0.0
    hx = np.empty(m)
    hy = np.empty(m)
    k = 0
    for i in range(m):
        while k >= 2:
            cross = (hx[k - 1] - hx[k - 2]) * (y[i] - hy[k - 2]) - (hy[k - 1] - hy[k - 2]) * (
                x[i] - hx[k - 2]
            )
            if cross >= 0.0:  # not a right turn: hx[k-1] is under the chord
                k -= 1
            else:
                break
        hx[k] = x[i]
        hy[k] = y[i]
        k += 1
    if k == 1:
        return hy[0], 0.0
    xbar = x.mean()
    j = 0
    while j < k - 2 and hx[j + 1] < xbar:
        j += 1
    slope = (hy[j + 1] - hy[j]) / (hx[j + 1] - hx[j])
    return hy[j] - slope * hx[j], slope


@njit(cache=True)
def slope_error(node: int, m: float, span: float) -> float:
    """How far a fit's slope may be off (a fraction, ppm · 1e-6): twice the beacons' delay
    spread over the samples and the span, the envelope's excess at both ends (ICD §7)."""
    return 2.0 * (MAX_DELAY_US[node] - MIN_DELAY_US[node]) / ((m + 1.0) * span)


@njit(cache=True)
def _clamped(node: int, b: float, m: int, span: float) -> bool:
    """Whether a fit's slope beyond the datasheet is beacon noise (clamp it to the bound).

    The datasheet bounds the frequency error (both crystals: ``REL_PPM``), so at start-up a
    steeper edge over a short span is noise, and the best line at the bound serves better.
    A slope past the bound by more than four times what the delays can explain
    (:func:`slope_error`) over eight samples or more is the clock itself, out of spec:
    it is kept (a cue at +180 ppm is shown as +180, not the bound's +157.5).
    """
    bound = REL_PPM[node] * 1.05e-6
    if -bound <= b <= bound:
        return False
    if m < 8 or span <= 0.0:
        return True
    return abs(b) - bound <= 4.0 * slope_error(node, m, span)


@njit(cache=True)
def add_sync(clk: ClockArrays, node: int, n: np.int64, h: np.int64, window_us: np.int64) -> bool:
    """Take one CLOCK_SYNC sample (unwrapped node and hub time) and refit.

    A sample whose node time does not advance is refused (returns False):
    the envelope needs ascending node times.
    """
    cap = clk.ring_n.shape[1]
    length = clk.ring_len[node]
    start = clk.ring_start[node]
    if length > 0 and n <= clk.ring_n[node, (start + length - 1) % cap]:
        return False
    if length == cap:
        start = (start + 1) % cap
        length -= 1
    clk.ring_n[node, (start + length) % cap] = n
    clk.ring_h[node, (start + length) % cap] = h
    length += 1
    while length > 1 and clk.ring_h[node, start] < h - window_us:
        start = (start + 1) % cap
        length -= 1
    clk.ring_start[node] = start
    clk.ring_len[node] = length

    x = np.empty(length)
    y = np.empty(length)
    offset_ref = h - n
    for j in range(length):
        s = (start + j) % cap
        x[j] = float(clk.ring_n[node, s] - n)
        y[j] = float((clk.ring_h[node, s] - clk.ring_n[node, s]) - offset_ref)
    a, b = envelope_line(x, y)
    if _clamped(node, b, length, -x[0]):
        b = REL_PPM[node] * 1.05e-6 if b > 0 else -REL_PPM[node] * 1.05e-6
        a = (y - b * x).max()
    clk.fit_i[node, FI_NREF] = n
    clk.fit_i[node, FI_OREF] = offset_ref
    clk.fit_i[node, FI_N] += 1
    clk.fit_f[node, FF_A] = a
    clk.fit_f[node, FF_B] = b
    clk.fit_f[node, FF_XBAR] = x.mean()
    clk.fit_f[node, FF_M] = length
    clk.fit_f[node, FF_SPAN] = -x[0]
    return True


@njit(cache=True)
def to_hub(clk: ClockArrays, node: int, n: np.int64) -> tuple[np.int64, float]:
    """Hub time (µs, unwrapped within the epoch) of node time ``n``, and its uncertainty.

    Call only once the node has a fit (``clk.fit_i[node, FI_N] > 0``).
    """
    x = float(n - clk.fit_i[node, FI_NREF])
    offset = clk.fit_f[node, FF_A] + clk.fit_f[node, FF_B] * x + MIN_DELAY_US[node]
    hub = n + clk.fit_i[node, FI_OREF] + np.int64(np.round(offset))
    m = clk.fit_f[node, FF_M]
    spread = MAX_DELAY_US[node] - MIN_DELAY_US[node]
    unc = 1.0 + spread / (m + 1.0)
    span = clk.fit_f[node, FF_SPAN]
    if m < 2 or span <= 0.0:
        unc += REL_PPM[node] * 1e-6 * abs(x)
    else:
        # slope error ~ the envelope's excess over the span, times the lever arm
        unc += slope_error(node, m, span) * abs(x - clk.fit_f[node, FF_XBAR])
    return hub, unc


def clock_arrays(capacity: int = CAPACITY) -> ClockArrays:
    """Empty clock models of every node (a new epoch)."""
    return ClockArrays(
        ring_n=np.zeros((N_NODES, capacity), np.int64),
        ring_h=np.zeros((N_NODES, capacity), np.int64),
        ring_start=np.zeros(N_NODES, np.int64),
        ring_len=np.zeros(N_NODES, np.int64),
        fit_i=np.zeros((N_NODES, 3), np.int64),
        fit_f=np.zeros((N_NODES, 5), np.float64),
    )


@njit(cache=True)
def map_samples(
    sync_node: np.ndarray,
    sync_n: np.ndarray,
    sync_h: np.ndarray,
    query_node: np.ndarray,
    query_n: np.ndarray,
    query_after: np.ndarray,
    window_us: np.int64,
    capacity: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Batch form for analysis and tests: map queries with the fit as of a sync.

    ``query_after[q]`` is how many sync samples (in stream order) were
    received before query q; sample times are already unwrapped.  Queries
    must be sorted by ``query_after``.  Returns hub times and uncertainties
    (-1 where the node had no sample yet).
    """
    clk = ClockArrays(
        np.zeros((N_NODES, capacity), np.int64),
        np.zeros((N_NODES, capacity), np.int64),
        np.zeros(N_NODES, np.int64),
        np.zeros(N_NODES, np.int64),
        np.zeros((N_NODES, 3), np.int64),
        np.zeros((N_NODES, 5), np.float64),
    )
    hub = np.empty(len(query_n), np.int64)
    unc = np.empty(len(query_n), np.float64)
    s = 0
    for q in range(len(query_n)):
        while s < query_after[q]:
            add_sync(
                clk,
                sync_node[s],
                sync_n[s],
                sync_h[s],
                window_us,
            )
            s += 1
        node = query_node[q]
        if clk.fit_i[node, FI_N] == 0:
            hub[q] = -1
            unc[q] = -1.0
        else:
            hub[q], unc[q] = to_hub(clk, node, query_n[q])
    return hub, unc
