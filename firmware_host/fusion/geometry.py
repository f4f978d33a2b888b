"""Table geometry for the fusion kernels: frozen balls, cushion contact points, nearest balls.

numba versions of what :class:`protocol.geometry.Table` says in Python
(ICD §6); the table's size comes in a small float array ``geo`` =
(length, width, ball diameter, frozen gap, where the noses end) so a HELLO
can change it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from protocol.geometry import DEFAULT_TABLE, Table

G_L, G_W, G_D, G_GAP, G_CORNER_NOSE, G_MIDDLE_NOSE = range(6)
FROZEN_GAP_MM = 1.5  # RULES.md: the tracker's uncertainty, configurable
JAW_MARGIN_MM = 3.0  # a nose this near its jaw is left alone: the jaw's rounding, the tracker's σ


def geometry(table: Table = DEFAULT_TABLE, gap_mm: float = FROZEN_GAP_MM) -> np.ndarray:
    """``G_CORNER_NOSE`` and ``G_MIDDLE_NOSE``: how far from a corner, and from the middle
    of a long side, a ball's centre must be for the ball to touch the nose, not a jaw (a
    corner's jaws sit opening/√2 from the corner on each nose, a middle pocket's
    opening/2 either side of it), plus ``JAW_MARGIN_MM``."""
    corner = table.corner_mm / np.sqrt(2.0) + JAW_MARGIN_MM
    middle = table.middle_mm / 2 + JAW_MARGIN_MM
    return np.array(
        [table.length_mm, table.width_mm, table.ball_mm, gap_mm, corner, middle], np.float64
    )


@njit(cache=True)
def cushion_gap(geo: np.ndarray, cushion: int, x: float, y: float) -> float:
    """Ball surface to cushion nose (mm), +inf where the ball is not along that piece."""
    L, W, r = geo[G_L], geo[G_W], geo[G_D] / 2
    if cushion == 0:
        return x - r
    if cushion == 3:
        return L - x - r
    front = x < L / 2
    if cushion == 1:
        return y - r if front else np.inf
    if cushion == 2:
        return y - r if not front else np.inf
    if cushion == 4:
        return W - y - r if not front else np.inf
    return W - y - r if front else np.inf  # 5


@njit(cache=True)
def frozen_mask(geo: np.ndarray, x: float, y: float) -> np.int64:
    """Bit c set: the ball rests against cushion c (gap no larger than the configured one)."""
    mask = np.int64(0)
    for c in range(6):
        if cushion_gap(geo, c, x, y) <= geo[G_GAP]:
            mask |= np.int64(1) << c
    return mask


@njit(cache=True)
def cushion_contact(geo: np.ndarray, cushion: int, pos_mm: float) -> tuple[float, float]:
    """Where a ball's centre is when it touches ``cushion`` at ``pos_mm`` along it."""
    L, W, r = geo[G_L], geo[G_W], geo[G_D] / 2
    if cushion == 0:
        return r, pos_mm
    if cushion == 3:
        return L - r, pos_mm
    if cushion in (1, 2):
        return pos_mm, r
    return pos_mm, W - r


@njit(cache=True)
def pocket_xy(geo: np.ndarray, pocket: int) -> tuple[float, float]:
    """Where pocket ``pocket`` is (0-2 along y = 0 from x = 0, 3-5 back along y = W): the
    point a POCKET_DROP's ball is looked for near (the nearest carried ball)."""
    L, W = geo[G_L], geo[G_W]
    xs = (0.0, L / 2, L, L, L / 2, 0.0)
    ys = (0.0, 0.0, 0.0, W, W, W)
    return xs[pocket], ys[pocket]


@njit(cache=True)
def line_x(geo: np.ndarray, line: int) -> float:
    """ICD §6: line 0 the centre line (L/2), 1 the house line (L/4)."""
    return geo[G_L] / 2 if line == 0 else geo[G_L] / 4


@njit(cache=True)
def nearest_ball(
    xy: np.ndarray, on: np.ndarray, penalty: np.ndarray, x: float, y: float, limit: float
) -> int:
    """The present ball nearest (x, y) after its penalty (mm), or -1 if none within ``limit``."""
    best, best_d = -1, limit
    for b in range(xy.shape[0]):
        if not on[b]:
            continue
        d = np.hypot(xy[b, 0] - x, xy[b, 1] - y) + penalty[b]
        if d < best_d:
            best, best_d = b, d
    return best


# The kinematics the fusion kernel needs in several places, written once.  Each keeps the
# exact order of operations the kernel has always used (events are compared byte for byte),
# and is inlined into its callers: some run for every pair of balls in every frame.


@njit(cache=True, inline="always")
def step_velocity(x0: float, y0: float, x1: float, y1: float, span: float) -> tuple[float, float]:
    """Velocity (mm/µs) of a ball seen at (x0, y0), then at (x1, y1) ``span`` µs later."""
    return (x1 - x0) / span, (y1 - y0) / span


@njit(cache=True, inline="always")
def carry(x: float, y: float, vx: float, vy: float, dt: float) -> tuple[float, float]:
    """A ball at (x, y) moving straight at (vx, vy) mm/µs: where it is ``dt`` µs later."""
    return x + vx * dt, y + vy * dt


@njit(cache=True, inline="always")
def carry_step(x0: float, y0: float, x1: float, y1: float, f: float) -> tuple[float, float]:
    """A ball's last step, from (x0, y0) to (x1, y1), continued by ``f`` of itself.

    ``f`` is the time since the step ended over the step's own time: a position
    carried forward from the last two tracker frames without a division per axis.
    """
    return x1 + (x1 - x0) * f, y1 + (y1 - y0) * f


@njit(cache=True, inline="always")
def time_at_distance(dx: float, dy: float, dvx: float, dvy: float, d: float) -> float:
    """When two centres ``(dx, dy)`` apart, closing at ``(dvx, dvy)`` per µs, are ``d`` apart.

    The earlier root of |(dx, dy) + s (dvx, dvy)| = d (a negative s: before now), or NaN
    when they never are (no relative motion, or they pass wider than d).  With ``d`` one
    ball diameter: the instant two straight-moving balls touch.
    """
    a = dvx * dvx + dvy * dvy
    b = 2 * (dx * dvx + dy * dvy)
    c = dx * dx + dy * dy - d * d
    if a <= 0.0:
        return np.nan
    disc = b * b - 4 * a * c
    if disc < 0:
        return np.nan
    return (-b - np.sqrt(disc)) / (2 * a)
