"""A cushion touch the rails did not report, seen in the tracker's frames.

ICD §7 rails: "impacts with normal speed under 0.05 m/s are not reported";
RULES.md counts any touch of a cushion, however soft.  At such speeds a
ball's centre moves under 0.42 mm a frame across the cushion, against the
tracker's position σ of 0.7 mm, so one frame shows nothing: the touch is a
fit over frames.  Near the cushion the ball's gap to the nose (centre
distance minus the radius) is modelled as an apex at the contact time
``tc``::

    gap(t) = h + a_in * max(tc - t, 0) + a_out * max(t - tc, 0),   a_in, a_out >= 0

(approach, then rebound -- ``a_out`` = 0.55 ``a_in`` on the virtual table --
or none: a ball whose rebound is too slow stays against the cushion).  With
``h`` free the fit says how close the ball came, with a standard error from
the tracker's σ; with ``h`` = 0 it times the touch.  The kernel
(:mod:`.soft_touches`) decides from the fits; this module is the
arithmetic.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .geometry import G_CORNER_NOSE, G_L, G_MIDDLE_NOSE, G_W, cushion_gap

TRACK_SIGMA_MM = 0.7  # ICD §7 tracker: position σ per frame
DECISIVE_SIGMAS = 4.0  # the tracker is decisive about a place this many standard errors off it
(FT_SSR, FT_H, FT_IN, FT_OUT, FT_SE_H, FT_SE_IN, FT_SE_OUT, FT_PRE, FT_POST) = range(9)
N_FIT = 9


@njit(cache=True)
def nose_gap(geo: np.ndarray, cushion: int, x_mm: float, y_mm: float) -> float:
    """Ball surface to cushion nose (mm), +inf where the ball is not along that piece or
    its centre is past the nose's end at a pocket (``G_CORNER_NOSE``, ``G_MIDDLE_NOSE``).

    Near a pocket's mouth the nose ends at a jaw, and a ball touching the jaw is nowhere
    near the nose line's gap of 0; a ball whose centre is short of the jaw touches the
    nose itself, so its touches are watched up to there (with a whole diameter left
    alone, a ball resting against a cushion 56 mm from a corner was never seen to
    touch it: a false foul 20).
    """
    g = cushion_gap(geo, cushion, x_mm, y_mm)
    if not np.isfinite(g):
        return g
    L, W = geo[G_L], geo[G_W]
    corner = geo[G_CORNER_NOSE]
    across = cushion == 0 or cushion == 3  # the piece runs along y
    s = y_mm if across else x_mm
    extent = W if across else L
    if s < corner or s > extent - corner or (not across and abs(x_mm - L / 2) < geo[G_MIDDLE_NOSE]):
        return np.inf
    return g


@njit(cache=True)
def _inverse3(matrix: np.ndarray, out: np.ndarray) -> bool:
    """Inverse of the symmetric 3x3 matrix a into out; False if singular."""
    c00 = matrix[1, 1] * matrix[2, 2] - matrix[1, 2] * matrix[2, 1]
    c01 = matrix[1, 2] * matrix[2, 0] - matrix[1, 0] * matrix[2, 2]
    c02 = matrix[1, 0] * matrix[2, 1] - matrix[1, 1] * matrix[2, 0]
    det = matrix[0, 0] * c00 + matrix[0, 1] * c01 + matrix[0, 2] * c02
    if abs(det) < 1e-12:
        return False
    out[0, 0] = c00 / det
    out[1, 0] = c01 / det
    out[2, 0] = c02 / det
    out[0, 1] = (matrix[0, 2] * matrix[2, 1] - matrix[0, 1] * matrix[2, 2]) / det
    out[1, 1] = (matrix[0, 0] * matrix[2, 2] - matrix[0, 2] * matrix[2, 0]) / det
    out[2, 1] = (matrix[0, 1] * matrix[2, 0] - matrix[0, 0] * matrix[2, 1]) / det
    out[0, 2] = (matrix[0, 1] * matrix[1, 2] - matrix[0, 2] * matrix[1, 1]) / det
    out[1, 2] = (matrix[0, 2] * matrix[1, 0] - matrix[0, 0] * matrix[1, 2]) / det
    out[2, 2] = (matrix[0, 0] * matrix[1, 1] - matrix[0, 1] * matrix[1, 0]) / det
    return True


@njit(cache=True, inline="always")
def _drop_inactive(a: np.ndarray, r: np.ndarray, active: np.ndarray) -> None:
    """The normal equations (``a``, ``r``) without the inactive terms: their rows and
    columns 0, their diagonal 1 (so ``a`` stays invertible and their coefficient 0)."""
    for j in range(3):
        if not active[j]:
            r[j] = 0.0
            for m in range(3):
                a[j, m] = 0.0
                a[m, j] = 0.0
    for j in range(3):
        if not active[j]:
            a[j, j] = 1.0


@njit(cache=True)
def fit_apex(
    tau: np.ndarray,
    gap: np.ndarray,
    count: int,
    apex_ms: float,
    free_h: bool,
    out: np.ndarray,
    work: np.ndarray,
):
    """Least squares of ``gap[:count]`` (mm) at ``tau[:count]`` (ms) by an apex at
    ``apex_ms``, slopes kept >= 0 (a negative one is dropped and the rest refitted); ``h`` = 0
    unless ``free_h``.  Writes ``out[FT_*]``: the residual sum of squares, h, a_in, a_out
    (mm/ms) and their standard errors (σ 0.7 mm a frame), and the frames before and after
    the apex.  ``work``: (3, 3, 3) float scratch, so the caller's grid of fits allocates
    nothing per fit.

    The sums of the normal equations are taken in one pass over the frames, before the
    fits: a refit without a slope uses the others' sums as they are (each sum is the same
    additions in the same order whichever terms are active, so the same bits as a pass
    over the active terms only).  This is the soft-touch watch's inner loop: up to 160
    fits per watched ball per tracker frame.
    """
    a, inv = work[0], work[1]
    r, beta, active = work[2, 0], work[2, 1], work[2, 2]
    # per frame x = (1, max(apex - tau, 0), max(tau - apex, 0)); x0 * v is v exactly
    n = s_in = s_out = s_in_in = s_in_out = s_out_out = 0.0
    g_h = g_in = g_out = 0.0
    for i in range(count):
        x_in = max(apex_ms - tau[i], 0.0)
        x_out = max(tau[i] - apex_ms, 0.0)
        g_h += gap[i]
        g_in += x_in * gap[i]
        g_out += x_out * gap[i]
        n += 1.0
        s_in += x_in
        s_out += x_out
        s_in_in += x_in * x_in
        s_in_out += x_in * x_out
        s_out_out += x_out * x_out
    active[0] = 1.0 if free_h else 0.0
    active[1] = 1.0
    active[2] = 1.0
    out[FT_SSR] = np.inf
    settled = False
    for _ in range(3):
        a[0, 0], a[0, 1], a[0, 2] = n, s_in, s_out
        a[1, 0], a[1, 1], a[1, 2] = s_in, s_in_in, s_in_out
        a[2, 0], a[2, 1], a[2, 2] = s_out, s_in_out, s_out_out
        r[0], r[1], r[2] = g_h, g_in, g_out
        _drop_inactive(a, r, active)
        if not _inverse3(a, inv):
            return
        for j in range(3):
            beta[j] = inv[j, 0] * r[0] + inv[j, 1] * r[1] + inv[j, 2] * r[2]
        worst = -1
        for j in (1, 2):
            if active[j] and beta[j] < 0.0 and (worst < 0 or beta[j] < beta[worst]):
                worst = j
        if worst < 0:
            settled = True
            break
        active[worst] = 0.0
    if not settled:
        return
    ssr = 0.0
    pre = 0
    for i in range(count):
        fit = beta[0] + beta[1] * max(apex_ms - tau[i], 0.0) + beta[2] * max(tau[i] - apex_ms, 0.0)
        ssr += (gap[i] - fit) ** 2
        if tau[i] <= apex_ms:
            pre += 1
    out[FT_SSR] = ssr
    out[FT_H] = beta[0]
    out[FT_IN] = beta[1]
    out[FT_OUT] = beta[2]
    for j in range(3):
        out[FT_SE_H + j] = TRACK_SIGMA_MM * np.sqrt(inv[j, j]) if active[j] else np.inf
    out[FT_PRE] = pre
    out[FT_POST] = count - pre
