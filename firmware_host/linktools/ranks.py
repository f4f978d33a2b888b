"""Exact percentiles of values that come again and again, a chunk at a time, without holding them.

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

A bucket may hold more values than are worth keeping (:data:`MAX_KEPT`): forged reboots
of three frames each put two of every three latencies at 0 (a boot's envelope touches
them), and past half a million boots the 0 µs bucket held more than a million.  Such a
bucket is narrowed instead: its values ordered as their float64 bits are (:func:`keys`)
and counted in :data:`SPLIT` parts of its span of bits, the part holding the rank kept
for the next pass; a span of one value needs no keeping at all.  Each such pass takes
16 bits off a span of at most 64, so a percentile is found in at most four more passes,
each keeping :data:`SPLIT` counts: bounded by design, whatever the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

QUANTILES = np.true_divide([50, 95, 100], 100)  # as np.percentile makes them
BUCKET_MS = 1e-3  # 1 µs a bucket ...
FINE = 1 << 16  # ... up to 65 ms, then 1000 of them a bucket
TOP = 2 * FINE  # buckets (about 65 s of latency); what is above shares the last one
MAX_KEPT = 1 << 20  # values a pass may keep for the wanted ranks
SPLIT = 1 << 16  # parts a narrowing pass counts a bucket's span of keys in
_SIGN = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def keys(values: np.ndarray) -> np.ndarray:
    """float64 values as int64 keys in the same order (the bits, a negative one's turned)."""
    bits = np.ascontiguousarray(values, np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ _SIGN, bits)


def key_values(k: np.ndarray) -> np.ndarray:
    """The float64 values of keys (:func:`keys` undone: the turn is its own inverse)."""
    return np.ascontiguousarray(np.where(k < 0, k ^ _SIGN, k), np.int64).view(np.float64)


KEY_LO, KEY_HI = (int(k) for k in keys(np.array([-np.inf, np.inf])))


def buckets(values: np.ndarray) -> np.ndarray:
    """Each value's bucket, in the values' order (below 0 µs the first, the last holds what
    is above the others)."""
    us = np.floor(values / BUCKET_MS)
    fine = np.clip(us, -1, FINE - 1) + 1
    coarse = np.minimum(FINE + 1 + np.floor((us - FINE) / 1000), TOP - 1)
    return np.where(us < FINE, fine, coarse).astype(np.int64)


def first_key(bucket: int) -> int:
    """The least key whose value is in ``bucket`` or above (:func:`buckets` ascends with the
    value, so each bucket is a run of keys: found by halving)."""
    lo, hi = KEY_LO, KEY_HI + 1
    with np.errstate(over="ignore"):  # a value near the largest float, over a µs
        while lo < hi:
            mid = (lo + hi) // 2
            if buckets(key_values(np.array([mid], np.int64)))[0] >= bucket:
                hi = mid
            else:
                lo = mid + 1
    return lo


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


KEEP, KEPT, NARROW = "keep", "kept", "narrow"  # a span's next pass, or its values all in


@dataclass(eq=False)
class Span:
    """Where a wanted rank's value lies: keys ``lo`` … ``hi`` (ranks may share one), with
    ``below`` values under them and ``inside`` in them; the next pass keeps its values
    (``KEEP``) or counts them in parts (``NARROW``); ``KEPT``: its values are all in."""

    lo: int
    hi: int
    below: int
    inside: int
    mode: str = NARROW
    found: list[np.ndarray] = field(default_factory=list)  # values kept, or the parts' counts

    @property
    def known(self) -> bool:
        return self.lo == self.hi or self.mode == KEPT

    @property
    def shift(self) -> int:
        """Bits of key a part spans: :data:`SPLIT` parts cover the span."""
        return max((self.hi - self.lo).bit_length() - SPLIT.bit_length() + 1, 0)

    def take(self, k: np.ndarray, values: np.ndarray) -> None:
        mine = (k >= self.lo) & (k <= self.hi)
        if self.mode == KEEP:
            if mine.any():
                self.found.append(values[mine])
            return
        from_lo = k[mine].astype(np.uint64) - np.uint64(self.lo % (1 << 64))  # < 2**64
        counts = np.bincount((from_lo >> np.uint64(self.shift)).astype(np.int64), minlength=SPLIT)
        self.found = [self.found[0] + counts] if self.found else [counts]

    def narrowed(self, rank: int) -> Span:
        """After a narrowing pass: its part that holds ``rank``."""
        counts = self.found[0] if self.found else np.zeros(SPLIT, np.int64)
        ends = np.cumsum(counts)
        j = int(np.searchsorted(ends, rank - self.below, side="right"))
        lo = self.lo + (j << self.shift)
        hi = min(self.hi, lo + (1 << self.shift) - 1)
        return Span(lo, hi, self.below + int(ends[j] - counts[j]), int(counts[j]))

    def value(self, rank: int) -> float:
        """The value at ``rank``, once known: the span's one key, or from its values kept."""
        if self.lo == self.hi:
            return float(key_values(np.array([self.lo], np.int64))[0])
        return float(np.sort(np.concatenate(self.found))[rank - self.below])


class Ranks:
    """One node's latencies: counted in the first pass (:meth:`count`), then each wanted rank's
    bucket kept or narrowed in the passes after (:meth:`take`) until :meth:`settle` says every
    wanted value is known; then :meth:`percentiles`."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, np.int64)
        self.spans: dict[int, Span] = {}  # wanted rank -> where its value lies

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

    def settle(self) -> bool:
        """After a pass: where each wanted rank lies now and what the next pass does with it
        (its values kept, the smallest spans first, up to :data:`MAX_KEPT` in all; the others
        narrowed); True once every wanted value is known (no pass is needed)."""
        spans: dict[int, Span] = {}
        shared: dict[tuple[int, int], Span] = {}  # ranks in one span share it
        ends = np.cumsum(self.counts)
        for r in self._ranks().tolist():
            if r not in self.spans:  # the counting pass: the bucket that holds the rank
                b = int(np.searchsorted(ends, r, side="right"))
                new = Span(first_key(b), first_key(b + 1) - 1, int(ends[b] - self.counts[b]),
                           int(self.counts[b]))  # fmt: skip
            elif not self.spans[r].known and self.spans[r].mode == NARROW:
                new = self.spans[r].narrowed(r)
            else:
                new = self.spans[r]
            spans[r] = shared.setdefault((new.lo, new.hi), new)
        for s in shared.values():
            s.mode = KEPT if s.mode == KEEP else s.mode
        room = MAX_KEPT - sum(s.inside for s in shared.values() if s.mode == KEPT)
        for s in sorted((s for s in shared.values() if not s.known), key=lambda s: s.inside):
            s.mode = KEEP if s.inside <= room else NARROW
            room -= s.inside if s.mode == KEEP else 0
        self.spans = spans
        return all(s.known for s in shared.values())

    def take(self, values: np.ndarray) -> None:
        """A pass after the first: the wanted ranks' values kept, or their spans' parts counted."""
        k = keys(values)
        for s in {id(s): s for s in self.spans.values() if not s.known}.values():
            s.take(k, values)

    def percentiles(self) -> np.ndarray:
        return percentiles(self.n, {r: s.value(r) for r, s in self.spans.items()})
