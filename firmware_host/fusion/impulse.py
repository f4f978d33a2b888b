"""Ball–ball impulses: one collision, and a few milliseconds of a cluster played forward.

A click's 30 mm position error spans neighbouring pairs of a cluster, and
the tracker sees a cluster's collisions only as their result a frame
(8 ms) later. What tells the pairs apart is the physics the table obeys:
equal masses, ball–ball restitution ``E_BALL`` along the line of centres,
and over a few milliseconds straight lines (friction changes a 1 m/s ball's
speed by 2 % in 10 ms). Played event by event from the struck ball, it
gives which pairs collide and when, to match the clicks to.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .geometry import carry

E_BALL = 0.93  # ball–ball restitution
PLAY_STEPS = 4096  # collisions followed at most (a cue pushing a row of touching balls)
TOUCH_MM = 1.0  # resting balls this close touch (a rack's measured gaps are a few 0.1 mm)
# two clicks of one pair more than this apart are two collisions (a frozen ball rebounding off its
# cushion into the cue ball: item 20 note 2's "two separate collisions"); closer, one click
MERGE_US = 1_000
FIT_STEP = 0.08  # rad (and 1.25 × that of relative speed): the stroke fit's coarse grid
MIN_CLOSING = 1e-6  # mm/µs: slower is not closing (the table's engine parts such a pair at this)


@njit(cache=True)
def collide(v: np.ndarray, i: int, j: int, dx: float, dy: float, g: float) -> bool:
    """Exchange the impulse of i meeting j, centres (dx, dy) apart (length g); False if they part."""
    closing = ((v[i, 0] - v[j, 0]) * dx + (v[i, 1] - v[j, 1]) * dy) / g
    if closing <= 1e-12:
        return False
    f = 0.5 * (1.0 + E_BALL) * closing / g
    v[i, 0] -= f * dx
    v[i, 1] -= f * dy
    v[j, 0] += f * dx
    v[j, 1] += f * dy
    return True


@njit(cache=True)
def play(
    p: np.ndarray,
    on: np.ndarray,
    v: np.ndarray,
    D: float,
    span: float,
    contacts: np.ndarray,
    struck: int,
    drive_us: float,
    merge_us: float,
    touch_mm: float,
) -> int:
    """Move the balls straight from ``p`` at ``v`` (mm/µs) for ``span`` µs, colliding on the way.

    The tip stays on the ``struck`` ball for ``drive_us`` (the cue's contact
    time) and, outweighing it, pushes it on through a ball it meets then: its
    speed along the stroke is restored after each such collision (item 19's
    push; without it a ball frozen to the struck one takes half the stroke).
    ``p`` and ``v`` are left at the end; each collision writes ``contacts``
    (ball, ball, µs from the start, x, y of the touch point) while it has
    room. Returns how many collisions there were (more than ``len(contacts)``:
    the rest were not written; the caller counts them); a pair's collisions
    less than ``merge_us`` apart are one (one click). Balls within ``touch_mm`` of touching (a rack: touching, but
    measured to the tracker's 0.1 mm) collide at once if closing, the way the
    table's engine resolves touching balls: moving balls in number order, each
    against the others in number order.
    """
    sx, sy = v[struck, 0], v[struck, 1]
    speed = np.hypot(sx, sy)
    now, n = 0.0, 0
    touch = (D + touch_mm) ** 2 - D * D
    for _ in range(PLAY_STEPS):
        first, bi, bj = span - now, -1, -1
        for i in range(16):
            if not on[i] or (v[i, 0] == 0.0 and v[i, 1] == 0.0):
                continue
            for j in range(16):
                if j == i or not on[j] or (j < i and (v[j, 0] != 0.0 or v[j, 1] != 0.0)):
                    continue
                dvx, dvy = v[i, 0] - v[j, 0], v[i, 1] - v[j, 1]
                dpx, dpy = p[i, 0] - p[j, 0], p[i, 1] - p[j, 1]
                b = dpx * dvx + dpy * dvy
                c = dpx * dpx + dpy * dpy - D * D
                if b >= -MIN_CLOSING * np.sqrt(c + D * D):
                    continue  # not closing
                a = dvx * dvx + dvy * dvy
                if c <= touch:
                    s = 0.0
                else:
                    disc = b * b - a * c
                    if disc < 0.0:
                        continue
                    s = (-b - np.sqrt(disc)) / a
                if s < first:
                    first, bi, bj = s, i, j
        _advance(p, v, first)
        now += first
        if bi < 0:
            break
        dx, dy = p[bj, 0] - p[bi, 0], p[bj, 1] - p[bi, 1]
        collide(v, bi, bj, dx, dy, np.hypot(dx, dy))
        bi, bj = min(bi, bj), max(bi, bj)
        if (bi == struck or bj == struck) and now < drive_us and speed > 0.0:
            along = (v[struck, 0] * sx + v[struck, 1] * sy) / speed
            if along < speed:
                v[struck, 0] += (speed - along) * sx / speed
                v[struck, 1] += (speed - along) * sy / speed
        again = False
        for q in range(min(n, contacts.shape[0])):
            if contacts[q, 0] == bi and contacts[q, 1] == bj and now - contacts[q, 2] < merge_us:
                again = True
        if not again:
            if n < contacts.shape[0]:
                contacts[n, 0], contacts[n, 1], contacts[n, 2] = bi, bj, now
                contacts[n, 3] = (p[bi, 0] + p[bj, 0]) / 2
                contacts[n, 4] = (p[bi, 1] + p[bj, 1]) / 2
            n += 1
    if now < span:  # steps ran out (the rest of the span straight on)
        _advance(p, v, span - now)
    return n


@njit(cache=True)
def _advance(p: np.ndarray, v: np.ndarray, dt: float) -> None:
    """Every ball moved straight on for ``dt`` µs (``p``, ``v``: (16, 2) mm, mm/µs): the
    play runs from one collision to the next, and between them nothing else acts."""
    for i in range(16):
        p[i, 0], p[i, 1] = carry(p[i, 0], p[i, 1], v[i, 0], v[i, 1], dt)


@njit(cache=True)
def _stroke(start, seen_on, mx, my, turn, scale, span, struck, D, drive_us, p, on, contacts):
    """The layout ``start`` played for ``span`` µs after the tip gave ``struck`` the momentum
    (mx, my) turned by ``turn`` rad and scaled by ``scale``; returns the collisions."""
    v = np.zeros((16, 2))
    for b in range(16):
        p[b, 0], p[b, 1] = start[b, 0], start[b, 1]
        on[b] = start[b, 2] > 0 and seen_on[b]
    v[struck, 0] = scale * (mx * np.cos(turn) - my * np.sin(turn))
    v[struck, 1] = scale * (mx * np.sin(turn) + my * np.cos(turn))
    return play(p, on, v, D, span, contacts, struck, drive_us, MERGE_US, TOUCH_MM)


@njit(cache=True)
def fit_stroke(
    start: np.ndarray,
    seen_xy: np.ndarray,
    seen_on: np.ndarray,
    moved: np.ndarray,
    span: float,
    struck: int,
    D: float,
    drive_us: float,
    p: np.ndarray,
    contacts: np.ndarray,
) -> tuple[int, float]:
    """The stroke on ``struck`` whose play best gives a tracker frame: (collisions, misfit mm²).

    ``start`` (16, 3) is the layout at the tip contact (x, y, on), the frame
    ``span`` µs later shows ``seen_xy`` / ``seen_on``; the ``moved`` balls'
    displacements give the momentum (ball–ball collisions keep it). The tip
    pushing on through a frozen neighbour adds up to a stroke's worth, so the
    stroke is 0.4–1.2 of it, and the sum carries every ball's tracker noise
    (degrees off): direction and size are searched, coarse to fine. ``p``
    and ``contacts`` are left as the best stroke played them (the count may
    exceed ``len(contacts)``: see :func:`play`).
    """
    mx, my = 0.0, 0.0
    for b in range(16):
        if start[b, 2] > 0 and seen_on[b] and moved[b]:
            mx += (seen_xy[b, 0] - start[b, 0]) / span
            my += (seen_xy[b, 1] - start[b, 1]) / span
    on = np.zeros(16, np.bool_)
    best_turn, best_scale, best_e = 0.0, 0.8, np.inf
    step = FIT_STEP
    for _ in range(3):
        turn0, scale0 = best_turn, best_scale
        for a in range(-4, 5):
            for m in range(-4, 5):
                turn, scale = turn0 + a * step, scale0 + m * step * 1.25
                if scale <= 0.0:
                    continue
                _stroke(
                    start, seen_on, mx, my, turn, scale, span, struck, D, drive_us, p, on, contacts
                )
                e = 0.0
                for b in range(16):
                    if on[b]:
                        e += (p[b, 0] - seen_xy[b, 0]) ** 2 + (p[b, 1] - seen_xy[b, 1]) ** 2
                if e < best_e:
                    best_turn, best_scale, best_e = turn, scale, e
        step /= 4
    n = _stroke(
        start, seen_on, mx, my, best_turn, best_scale, span, struck, D, drive_us, p, on, contacts
    )
    return n, best_e
