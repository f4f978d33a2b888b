"""Exact percentiles of values that come twice, a chunk at a time, without holding them.

``stats`` gives each node's arrival latency as ``np.percentile(lat, [50, 95, 100])``
over every frame.  That figure depends only on how many values there are and on the
two values at each percentile's neighbouring ranks (numpy's ``linear`` method).  So:
a first pass counts the values in buckets of 1 µs up to 65 ms, of 1 ms above
(:func:`buckets`: about a megabyte of counts at most, however long the latency a
stall makes), which tells in which bucket each wanted rank lies; a second pass keeps
only the values in those buckets (a few of every thousand frames) and picks the
ranks out of them; numpy's interpolation is then applied to those values as it would be to the
whole sorted array.  :func:`percentiles` is that interpolation, written out as numpy's
``_quantile`` and ``_lerp`` do it (``tests/linktools/test_host_stream.py`` holds it to
``np.percentile``).
"""

from __future__ import annotations

import numpy as np

QUANTILES = np.true_divide([50, 95, 100], 100)  # as np.percentile makes them
BUCKET_MS = 1e-3  # 1 µs a bucket ...
FINE = 1 << 16  # ... up to 65 ms, then 1000 of them a bucket
TOP = 2 * FINE  # buckets (about 65 s of latency); what is above shares the last one
MAX_KEPT = 1 << 20  # values a second pass may keep for the wanted ranks


class TooMany(Exception):
    """The wanted ranks lie in buckets holding more values than :data:`MAX_KEPT`."""


def buckets(values: np.ndarray) -> np.ndarray:
    """Each value's bucket, in the values' order (below 0 µs the first, the last holds what
    is above the others)."""
    us = np.floor(values / BUCKET_MS)
    fine = np.clip(us, -1, FINE - 1) + 1
    coarse = np.minimum(FINE + 1 + np.floor((us - FINE) / 1000), TOP - 1)
    return np.where(us < FINE, fine, coarse).astype(np.int64)


def neighbours(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's ``linear`` method on ``n`` values: (rank below, rank above, weight) of each of
    :data:`QUANTILES` (a rank past the last is the last, -1, as numpy takes it)."""
    virtual = (n - 1) * QUANTILES
    below = np.floor(virtual)
    above = below + 1
    past = virtual >= n - 1
    below[past] = -1
    above[past] = -1
    below_i, above_i = below.astype(np.intp), above.astype(np.intp)
    return below_i, above_i, np.asanyarray(virtual - below_i, dtype=virtual.dtype)


def percentiles(n: int, value_at: dict[int, float]) -> np.ndarray:
    """``np.percentile(values, [50, 95, 100])`` of ``n`` values, given the value at each rank
    :func:`neighbours` names (``value_at``: sorted rank, 0 … n-1, to value)."""
    below, above, gamma = neighbours(n)
    a = np.array([value_at[int(r) % n] for r in below])
    b = np.array([value_at[int(r) % n] for r in above])
    diff_b_a = b - a
    out = np.add(a, diff_b_a * gamma)
    np.subtract(b, diff_b_a * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


class Ranks:
    """One node's latencies: counted in the first pass (:meth:`count`), the wanted ranks'
    buckets kept in the second (:meth:`keep`), then :meth:`percentiles`."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, np.int64)
        self.wanted: np.ndarray | None = None  # the buckets the second pass keeps
        self.kept: list[np.ndarray] = []

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def count(self, values: np.ndarray) -> None:
        found = np.bincount(buckets(values))
        if len(found) > len(self.counts):
            self.counts = np.concatenate((self.counts, np.zeros(len(found) - len(self.counts),
                                                                np.int64)))  # fmt: skip
        self.counts[: len(found)] += found

    def _ranks(self) -> np.ndarray:
        below, above, _ = neighbours(self.n)
        return np.unique(np.concatenate((below, above)) % self.n)

    def plan(self) -> None:
        """After the first pass: which buckets hold the wanted ranks (:class:`TooMany` when
        they hold more than :data:`MAX_KEPT` values)."""
        ends = np.cumsum(self.counts)
        self.wanted = np.unique(np.searchsorted(ends, self._ranks(), side="right"))
        if self.counts[self.wanted].sum() > MAX_KEPT:
            raise TooMany(int(self.counts[self.wanted].sum()))

    def keep(self, values: np.ndarray) -> None:
        assert self.wanted is not None
        mine = values[np.isin(buckets(values), self.wanted)]
        if len(mine):
            self.kept.append(mine)

    def percentiles(self) -> np.ndarray:
        kept = np.sort(np.concatenate(self.kept)) if self.kept else np.zeros(0)
        ends = np.cumsum(self.counts)
        value_at = {}
        for r in self._ranks().tolist():
            b = int(np.searchsorted(ends, r, side="right"))
            before = int(ends[b] - self.counts[b])  # ranks below this bucket
            mine = kept[buckets(kept) == b]
            value_at[r] = float(mine[r - before])
        return percentiles(self.n, value_at)
