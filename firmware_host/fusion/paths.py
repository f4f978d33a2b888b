"""Shot paths as polylines: Douglas-Peucker over the tracked positions.

EVENTS.md asks for each moving ball's path "within 2 mm of the tracked
path" with its start, contacts, cushions, changes of direction and stop:
exactly the corners Douglas-Peucker keeps at a 2 mm tolerance.  The
tracker's own noise (σ 0.7 mm) stays under the tolerance, so straight runs
collapse to their ends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

PATH_TOLERANCE_MM = 2.0


@njit(cache=True)
def simplify(xs: np.ndarray, ys: np.ndarray, tolerance: float, keep: np.ndarray) -> int:
    """Mark in ``keep`` the points of the polyline a 2-D Douglas-Peucker keeps; returns how many."""
    n = len(xs)
    keep[:n] = False
    if n == 0:
        return 0
    keep[0] = True
    keep[n - 1] = True
    stack = np.empty((n, 2), np.int64)
    top = 0
    stack[0, 0], stack[0, 1] = 0, n - 1
    top = 1
    while top > 0:
        top -= 1
        a, b = stack[top, 0], stack[top, 1]
        if b - a < 2:
            continue
        worst, at = farthest(xs, ys, a, b)
        if worst > tolerance:
            keep[at] = True
            stack[top, 0], stack[top, 1] = a, at
            stack[top + 1, 0], stack[top + 1, 1] = at, b
            top += 2
    return int(keep[:n].sum())


@njit(cache=True, inline="always")
def farthest(xs: np.ndarray, ys: np.ndarray, start: int, end: int) -> tuple[float, int]:
    """The point strictly between ``start`` and ``end`` farthest from the chord between them
    (the first of equals), and its distance (-1.0 and -1: none).

    The distance is to the chord as a segment: a ball that runs into a cushion and back
    along the same line must keep its turning point.  (The interpreted worker runs a numpy
    twin of this loop: ``firmware_host.live.interpreted.farthest``.)
    """
    dx, dy = xs[end] - xs[start], ys[end] - ys[start]
    norm2 = dx * dx + dy * dy
    worst, at = -1.0, -1
    for i in range(start + 1, end):
        u = ((xs[i] - xs[start]) * dx + (ys[i] - ys[start]) * dy) / norm2 if norm2 > 1e-12 else 0.0
        u = min(max(u, 0.0), 1.0)
        d = np.hypot(xs[i] - xs[start] - u * dx, ys[i] - ys[start] - u * dy)
        if d > worst:
            worst, at = d, i
    return worst, at
