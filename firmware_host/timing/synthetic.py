"""Synthetic clocks with known truth: the clock model's test bench.

Independent of the virtual table so the estimator's accuracy can be shown
on its own: every node gets a random offset, the datasheet's worst
frequency error against the hub (±50 ppm each side: ±100 ppm, cue ±150 ppm)
plus a slow temperature drift, and
CLOCK_SYNC samples with the datasheet's delays (cue retries included).
All times are µs; "hub time" is the reference clock itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .clock_model import MAX_PPM, MIN_DELAY_US, N_NODES, WINDOW_US

SYNC_HZ = np.array([0, 4, 4, 10, 4, 4, 4, 4], np.float64)


@dataclass
class SyntheticClocks:
    """Node clocks as functions of hub time, with sync samples."""

    offset: np.ndarray  # node clock at hub time 0
    ppm: np.ndarray  # constant frequency error
    drift_ppm: np.ndarray  # amplitude of the slow sinusoidal drift
    drift_period_us: float

    def node_time(self, node: int, hub: np.ndarray) -> np.ndarray:
        """Exact node clock (µs, float, unwrapped) at hub time ``hub``."""
        hub = np.asarray(hub, np.float64)
        w = 2 * np.pi / self.drift_period_us
        integral = self.drift_ppm[node] * 1e-6 * (1 - np.cos(w * hub)) / w
        return self.offset[node] + hub * (1 + self.ppm[node] * 1e-6) + integral


def make_clocks(rng: np.random.Generator, drift_ppm: float = 1.0) -> SyntheticClocks:
    offset = rng.uniform(0, 2**32, N_NODES)
    offset[0] = 0.0
    # the hub is the reference here: a node's error against it is its own plus the hub's
    ppm = (MAX_PPM + MAX_PPM[0]) * rng.choice([-1.0, 1.0], N_NODES)
    ppm[0] = 0.0
    drift = np.full(N_NODES, drift_ppm)
    drift[0] = 0.0
    return SyntheticClocks(offset, ppm, drift, drift_period_us=600e6)


def sync_delays(rng: np.random.Generator, node: int, n: int) -> np.ndarray:
    """Beacon delays per ICD §7 (µs): wired 8-20, cue 150-400 with 5 % retried 1-5 ms late."""
    if node == 3:
        d = rng.uniform(150, 400, n)
        retried = rng.random(n) < 0.05
        d[retried] += rng.uniform(1000, 5000, retried.sum())
        return d
    return rng.uniform(8, 20, n)


def make_syncs(
    rng: np.random.Generator, clocks: SyntheticClocks, hub_start: float, duration_us: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sync samples of every node, sorted by arrival (hub time the frame reaches the host).

    Returns node, hub time the beacon left, node time it arrived (exact,
    rounded down to the 1 µs resolution), arrival hub time.
    """
    nodes, hs, ns, arrive = [], [], [], []
    for node in range(1, N_NODES):
        period = 1e6 / SYNC_HZ[node]
        h = hub_start + rng.uniform(0, period) + np.arange(0, duration_us, period)
        h = np.floor(h)
        d = sync_delays(rng, node, len(h))
        nodes.append(np.full(len(h), node))
        hs.append(h)
        ns.append(np.floor(clocks.node_time(node, h + d)))
        arrive.append(h + d + rng.uniform(0, 30_000, len(h)))
    order = np.argsort(np.concatenate(arrive), kind="stable")
    return (
        np.concatenate(nodes)[order].astype(np.int64),
        np.concatenate(hs)[order].astype(np.int64),
        np.concatenate(ns)[order].astype(np.int64),
        np.concatenate(arrive)[order],
    )


def least_squares_map(
    s_node: np.ndarray,
    s_n: np.ndarray,
    s_h: np.ndarray,
    q_node: np.ndarray,
    q_n: np.ndarray,
    q_after: np.ndarray,
) -> np.ndarray:
    """The strawman the clock model is measured against: a least-squares line.

    Same trailing window and same delay correction as the envelope; fitted
    through every sample, it sits at the *mean* delay.  ``q_after[q]``:
    how many sync samples (unwrapped, stream order) came before query q.
    """
    out = np.empty(len(q_n), np.float64)
    for q in range(len(q_n)):
        node = q_node[q]
        sel = np.flatnonzero(s_node[: q_after[q]] == node)
        sel = sel[s_h[sel] >= s_h[sel[-1]] - WINDOW_US]
        x = (s_n[sel] - s_n[sel[-1]]).astype(float)
        y = (s_h[sel] - s_n[sel]).astype(float)
        b, a = np.polyfit(x, y, 1)
        out[q] = q_n[q] + a + b * (q_n[q] - s_n[sel[-1]]) + MIN_DELAY_US[node]
    return out
