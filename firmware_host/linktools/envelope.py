"""The upper envelope of a clock's samples, built as they come: ``stats`` streamed with host
receive times (:mod:`.hoststream`).

:func:`firmware_host.timing.clock_model.envelope_line` takes every sample of a fit at
once: the upper hull of (x, y) in ascending x (a monotone chain: each point pops the
hull points under the chord to it), then the hull edge over the samples' mean x.  The
chain is the same whether its points come at once or a chunk at a time, and so is the
mean, a running sum in the samples' order (numba's ``mean`` is that loop), so a fit fed
here chunk by chunk is the whole one's to the last bit while keeping only its hull (a
few points: the samples of a clock lie close under a line).  :class:`Envelope` is that,
with :func:`.drift.envelope_slope`'s merging of samples at one x (frames read in one
chunk share a host time: the envelope touches only the highest).  Samples that come a
little out of order wait in a :class:`Reorder` to be fed in order; :class:`Fits` holds
one of each per node and boot while the boot goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

# the state of a fit: hull points, samples taken, running sum of x, a sample held back
# (the next may share its x), the first sample's x (x is taken from it, as the fits do)
K, N, SUM, HELD, HX, HY, X0 = range(7)
REORDER_US = 60_000_000  # a node's stamps may come this much out of order (late resends)
REORDER_KEEP = 4096  # ... and this many wait, however far apart


class NotStreamable(Exception):
    """This recording's host-time figures cannot be made a chunk at a time: why."""


@njit(cache=True)
def _push(
    hx: np.ndarray, hy: np.ndarray, k: int, x: float, y: float
) -> tuple[np.ndarray, np.ndarray, int]:
    """One point onto the hull (``envelope_line``'s chain step): the hull's arrays (twice as
    long when full) and its new size."""
    while k >= 2:
        cross = (hx[k - 1] - hx[k - 2]) * (y - hy[k - 2]) - (hy[k - 1] - hy[k - 2]) * (
            x - hx[k - 2]
        )
        if cross >= 0.0:  # not a right turn: hx[k-1] is under the chord
            k -= 1
        else:
            break
    if k == len(hx):
        more = max(len(hx), 8)
        hx = np.concatenate((hx, np.empty(more)))
        hy = np.concatenate((hy, np.empty(more)))
    hx[k] = x
    hy[k] = y
    return hx, hy, k + 1


@njit(cache=True)
def envelope_feed(
    hx: np.ndarray, hy: np.ndarray, state: np.ndarray, x: np.ndarray, y: np.ndarray, merge: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Samples (x ascending, after those before) into a fit's hull and ``state``; ``merge``:
    samples at one x are one, the highest (:func:`.drift.envelope_slope`).  The hull's
    arrays are returned, grown only as the hull grows: a fit keeps a few points however
    many samples it is fed (one grown to each feed's samples stayed that big: every node's
    fit of every boot of a long capture, issue 29)."""
    k, n, total = int(state[K]), int(state[N]), state[SUM]
    held, px, py, x0 = state[HELD] != 0.0, state[HX], state[HY], state[X0]
    for i in range(len(x)):
        if held and merge and x[i] == px:
            py = max(py, y[i])
            continue
        if held:
            hx, hy, k = _push(hx, hy, k, px - x0, py)
            total += px - x0
            n += 1
        else:
            x0 = x[i]
        held, px, py = True, x[i], y[i]
    state[K], state[N], state[SUM] = k, n, total
    state[HELD], state[HX], state[HY], state[X0] = 1.0 if held else 0.0, px, py, x0
    return hx, hy


class Envelope:
    """One fit's upper envelope, fed in order a chunk at a time (:func:`envelope_feed`)."""

    def __init__(self, merge: bool) -> None:
        self.merge = merge
        self.state = np.zeros(7)
        self.hx = np.empty(64)
        self.hy = np.empty(64)
        self.last = -np.inf  # the highest x so far: samples must not go back

    def feed(self, x: np.ndarray, y: np.ndarray) -> bool:
        """Samples in ascending x; False (and nothing taken) when they go back before what
        was fed already (a fit of samples out of order is not this one's)."""
        if not len(x):
            return True
        if x[0] < self.last or (len(x) > 1 and bool(np.any(x[1:] < x[:-1]))):
            return False
        self.hx, self.hy = envelope_feed(self.hx, self.hy, self.state, x.astype(np.float64),
                                         y.astype(np.float64), self.merge)  # fmt: skip
        self.last = float(x[-1])
        return True

    @property
    def points(self) -> int:
        """Samples taken (those at one x as one when merged)."""
        return int(self.state[N]) + (self.state[HELD] != 0.0)

    @property
    def x0(self) -> float:
        return float(self.state[X0])

    def line(self) -> tuple[float, float]:
        """(value at the first sample's x, slope): ``envelope_line`` of every sample fed."""
        hx, hy, state = self.hx.copy(), self.hy.copy(), self.state.copy()
        k, n, total = int(state[K]), int(state[N]), state[SUM]
        if state[HELD] != 0.0:
            hx, hy, k = _push(hx, hy, k, state[HX] - state[X0], state[HY])
            total += state[HX] - state[X0]
            n += 1
        if n == 1 or k == 1:
            return float(hy[0]), 0.0
        xbar = total / n
        j = 0
        while j < k - 2 and hx[j + 1] < xbar:
            j += 1
        slope = (hy[j + 1] - hy[j]) / (hx[j + 1] - hx[j])
        return float(hy[j] - slope * hx[j]), float(slope)


class Reorder:
    """Samples into fits in ascending x, as the fits sort them (stable: ties in the order
    they came): each waits until x has gone :data:`REORDER_US` past it (a late resend
    comes with an older stamp; a host's receive times may step back a little) and more
    than :data:`REORDER_KEEP` wait (a node heard a few times an hour: its stamps,
    unwrapped across gaps of over half the clock's 71.6 min, may step back by any
    amount, and all of them wait for the end)."""

    def __init__(self, sink: Callable[[np.ndarray, np.ndarray], bool]) -> None:
        self.sink = sink  # takes samples in order; False: they go back before those it took
        self.x: list[np.ndarray] = [np.zeros(0)]
        self.y: list[np.ndarray] = [np.zeros(0)]
        self.n = self.waiting = 0
        self.lo, self.hi = np.inf, -np.inf

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        if not len(x):
            return
        self.x.append(x)
        self.y.append(y)
        self.n += len(x)
        self.waiting += len(x)
        self.lo, self.hi = min(self.lo, float(x.min())), max(self.hi, float(x.max()))
        if self.waiting > REORDER_KEEP:
            self.flush(self.hi - REORDER_US)

    def flush(self, below: float = np.inf) -> None:
        x, y = np.concatenate(self.x), np.concatenate(self.y)
        order = np.argsort(x, kind="stable")
        go = order[x[order] < below]
        if not self.sink(x[go], y[go]):
            raise NotStreamable("samples came further out of order than a minute")
        rest = np.ones(len(x), bool)
        rest[go] = False
        self.x, self.y = [x[rest]], [y[rest]]
        self.waiting = len(self.x[0])


class Fits:
    """An envelope per key (a node and its boot) fed through a :class:`Reorder`, handed back
    when its boot has ended (a later boot's frames have come: a frame's boot is set by its
    position) with all its samples in it: what is kept is the fits of the boots going on,
    never one per boot of the capture (forged reboots by the hundred thousand, issue 29)."""

    def __init__(self, merge: bool) -> None:
        self.merge = merge
        self.fits: dict[Any, tuple[int, Envelope, Reorder]] = {}  # key -> its boot, its fit

    def add(self, key: Any, boot: int, x: np.ndarray, y: np.ndarray) -> None:
        if key not in self.fits:
            envelope = Envelope(self.merge)
            self.fits[key] = (boot, envelope, Reorder(envelope.feed))
        self.fits[key][2].add(x, y)

    def end_before(self, boot: float) -> list[tuple[Any, Envelope, Reorder]]:
        """The boots before ``boot`` have ended: their fits, by boot and then key, each with
        its samples all fed, let go here."""
        out = []
        for _, key in sorted((b, key) for key, (b, _, _) in self.fits.items() if b < boot):
            _, envelope, order = self.fits.pop(key)
            order.flush()
            out.append((key, envelope, order))
        return out
