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
def cushion_gap(geo: np.ndarray, cushion: int, x_mm: float, y_mm: float) -> float:
    """Ball surface to cushion nose (mm), +inf where the ball is not along that piece."""
    L, W, r = geo[G_L], geo[G_W], geo[G_D] / 2
    if cushion == 0:
        return x_mm - r
    if cushion == 3:
        return L - x_mm - r
    front = x_mm < L / 2
    if cushion == 1:
        return y_mm - r if front else np.inf
    if cushion == 2:
        return y_mm - r if not front else np.inf
    if cushion == 4:
        return W - y_mm - r if not front else np.inf
    return W - y_mm - r if front else np.inf  # 5


@njit(cache=True)
def frozen_mask(geo: np.ndarray, x_mm: float, y_mm: float) -> np.int64:
    """Bit c set: the ball rests against cushion c (gap no larger than the configured one)."""
    mask = np.int64(0)
    for c in range(6):
        if cushion_gap(geo, c, x_mm, y_mm) <= geo[G_GAP]:
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
    positions: np.ndarray,
    on_table: np.ndarray,
    penalty: np.ndarray,
    x_mm: float,
    y_mm: float,
    limit: float,
) -> int:
    """The ball ``on_table`` nearest (``x_mm``, ``y_mm``) after its ``penalty`` (mm), or -1 if
    none within ``limit``."""
    best, best_d = -1, limit
    for b in range(positions.shape[0]):
        if not on_table[b]:
            continue
        d = np.hypot(positions[b, 0] - x_mm, positions[b, 1] - y_mm) + penalty[b]
        if d < best_d:
            best, best_d = b, d
    return best


# The kinematics the fusion kernel needs in several places, written once.  Each keeps the
# exact order of operations the kernel has always used (events are compared byte for byte),
# and is inlined into its callers: some run for every pair of balls in every frame.


@njit(cache=True, inline="always")
def step_velocity(
    from_x: float, from_y: float, to_x: float, to_y: float, span: float
) -> tuple[float, float]:
    """Velocity (mm/µs) of a ball seen at (``from_x``, ``from_y``), then at (``to_x``, ``to_y``)
    ``span`` µs later."""
    return (to_x - from_x) / span, (to_y - from_y) / span


@njit(cache=True, inline="always")
def carry(
    from_x: float, from_y: float, velocity_x: float, velocity_y: float, dt_us: float
) -> tuple[float, float]:
    """A ball at (``from_x``, ``from_y``) moving straight at (``velocity_x``, ``velocity_y``) mm/µs:
    where it is ``dt_us`` later."""
    return from_x + velocity_x * dt_us, from_y + velocity_y * dt_us


@njit(cache=True, inline="always")
def carry_step(
    from_x: float, from_y: float, to_x: float, to_y: float, fraction: float
) -> tuple[float, float]:
    """A ball's last step, from (``from_x``, ``from_y``) to (``to_x``, ``to_y``), continued by
    ``fraction`` of itself.

    ``fraction`` is the time since the step ended over the step's own time: a position
    carried forward from the last two tracker frames without a division per axis.
    """
    return to_x + (to_x - from_x) * fraction, to_y + (to_y - from_y) * fraction


@njit(cache=True, inline="always")
def time_at_distance(
    apart_x: float, apart_y: float, closing_x: float, closing_y: float, distance: float
) -> float:
    """When two centres ``(apart_x, apart_y)`` apart, closing at ``(closing_x, closing_y)`` per µs,
    are ``distance`` apart.

    The earlier root of |apart + s closing| = distance (a negative s: before now), or NaN
    when they never are (no relative motion, or they pass wider than that).  With ``distance`` one
    ball diameter: the instant two straight-moving balls touch.
    """
    a = closing_x * closing_x + closing_y * closing_y
    b = 2 * (apart_x * closing_x + apart_y * closing_y)
    c = apart_x * apart_x + apart_y * apart_y - distance * distance
    if a <= 0.0:
        return np.nan
    disc = b * b - 4 * a * c
    if disc < 0:
        return np.nan
    return (-b - np.sqrt(disc)) / (2 * a)
