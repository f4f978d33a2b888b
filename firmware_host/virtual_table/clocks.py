"""Every node's own imperfect clock, and the hub's boots that reset them all.

True time (``t_s``, seconds, float) is the physics' perfect clock.  A node's
clock reads ``ticks(t_s)`` microseconds: an arbitrary value at boot, a
constant frequency error (ICD §7: +-50 ppm, the cue +-100 ppm) and a slow
temperature drift of that error, modelled as a constant rate of change::

    ticks(t) = offset_us + (1e6 + ppm) * dt + 0.5 * drift_ppm_per_s * dt**2,  dt = t - boot_s

Ticks are unwrapped floats here; the wire carries ``floor(ticks) mod 2**32``.
A hub reboot (:class:`Timeline`) starts a new boot: new offsets for every
node, same crystals (ppm), and a new ``boot_id``.

>>> clock = NodeClock(node=1, offset_us=1000.0, ppm=20.0, drift_ppm_per_s=0.0)
>>> float(clock.ticks(1.0))
1001020.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NODES = tuple(range(8))  # hub, rails, pockets, cue, tracker, lines, acoustic, keypad
CUE = 3
WRAP = 1 << 32
WIRED_PPM, CUE_PPM = 50.0, 100.0
# Temperature drift: the frequency error moves by at most ~1 ppm per 10 minutes.
MAX_DRIFT_PPM_PER_S = 1.0 / 600.0
# With ``near_wrap``, every clock boots this many seconds (at most) below 2**32.
NEAR_WRAP_S = (5.0, 60.0)


@dataclass(frozen=True)
class NodeClock:
    """One node's clock during one boot; ``boot_s`` is the true time it was reset."""

    node: int
    offset_us: float
    ppm: float
    drift_ppm_per_s: float
    boot_s: float = 0.0

    def ticks(self, t_s: np.ndarray | float) -> np.ndarray:
        """Unwrapped microseconds this clock reads at true time ``t_s``."""
        dt = np.asarray(t_s, dtype=np.float64) - self.boot_s
        return self.offset_us + (1e6 + self.ppm) * dt + 0.5 * self.drift_ppm_per_s * dt * dt

    def rate_ppm(self, t_s: np.ndarray | float) -> np.ndarray:
        """Frequency error against true time at ``t_s`` (ppm)."""
        return self.ppm + self.drift_ppm_per_s * (np.asarray(t_s, dtype=np.float64) - self.boot_s)


@dataclass(frozen=True)
class Boot:
    """One hub boot: when it started (true time), its id and every node's clock."""

    index: int
    boot_s: float
    boot_id: int
    clocks: tuple[NodeClock, ...]  # indexed by node 0-7

    def hub_us(self, t_s: np.ndarray | float) -> np.ndarray:
        """The hub (reference) clock, unwrapped, at true time ``t_s``."""
        return self.clocks[0].ticks(t_s)


def crystal_errors(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-node frequency error and drift: a property of the hardware, kept over reboots."""
    limit = np.array([CUE_PPM if node == CUE else WIRED_PPM for node in NODES])
    ppm = rng.uniform(-limit, limit)
    drift = rng.uniform(-MAX_DRIFT_PPM_PER_S, MAX_DRIFT_PPM_PER_S, len(NODES))
    return ppm, drift


def new_boot(
    rng: np.random.Generator,
    index: int,
    boot_s: float,
    ppm: np.ndarray,
    drift: np.ndarray,
    near_wrap: bool = False,
) -> Boot:
    """Reset every clock to an arbitrary value (or to just below 2**32)."""
    if near_wrap:
        offsets = WRAP - rng.uniform(*NEAR_WRAP_S, len(NODES)) * 1e6
    else:
        offsets = rng.uniform(0, WRAP, len(NODES))
    offsets = np.floor(offsets)
    clocks = tuple(
        NodeClock(node, float(offsets[node]), float(ppm[node]), float(drift[node]), boot_s)
        for node in NODES
    )
    return Boot(index, boot_s, int(rng.integers(1, WRAP)), clocks)


@dataclass(frozen=True)
class Timeline:
    """The hub's boots in true-time order; a reboot resets every clock and counter."""

    boots: tuple[Boot, ...]

    @classmethod
    def create(
        cls,
        rng: np.random.Generator,
        start_s: float,
        reboots_s: tuple[float, ...] = (),
        near_wrap: bool = False,
        set_ppm: tuple[tuple[int, float], ...] = (),
    ) -> Timeline:
        """``set_ppm``: (node, ppm) crystals to use instead of drawn ones, e.g. a cue
        clock out of its datasheet limit for ``stats`` to find."""
        ppm, drift = crystal_errors(rng)
        for node, value in set_ppm:
            ppm[node] = value
        starts = (start_s, *sorted(reboots_s))
        boots = tuple(
            new_boot(rng, i, s, ppm, drift, near_wrap=near_wrap and i == 0)
            for i, s in enumerate(starts)
        )
        return cls(boots)

    def boot_index(self, t_s: np.ndarray | float) -> np.ndarray:
        """Which boot was running at each true time (times before the first boot: 0)."""
        starts = np.array([b.boot_s for b in self.boots])
        return np.maximum(
            np.searchsorted(starts, np.asarray(t_s, dtype=np.float64), side="right") - 1, 0
        )

    def ticks(self, node: np.ndarray | int, t_s: np.ndarray | float) -> np.ndarray:
        """Unwrapped clock of ``node`` at ``t_s`` in the boot running then (vectorised)."""
        t = np.atleast_1d(np.asarray(t_s, dtype=np.float64))
        nodes = np.broadcast_to(np.asarray(node), t.shape)
        boot = self.boot_index(t)
        out = np.empty_like(t)
        for b in np.unique(boot):
            for n in np.unique(nodes[boot == b]):
                sel = (boot == b) & (nodes == n)
                out[sel] = self.boots[b].clocks[n].ticks(t[sel])
        return out

    def hub_us(self, t_s: np.ndarray | float) -> np.ndarray:
        """The hub clock (unwrapped, in the boot running then) at true times ``t_s``."""
        return self.ticks(0, t_s)
