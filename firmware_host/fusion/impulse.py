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

from typing import NamedTuple

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
# a played collision's columns: the two balls (first < second), µs from the start, the touch point
PLAY_FIRST, PLAY_SECOND, PLAY_US, PLAY_X, PLAY_Y = range(5)


@njit(cache=True)
def collide(
    velocities: np.ndarray, first: int, second: int, apart_x: float, apart_y: float, gap: float
) -> bool:
    """Exchange the impulse of ``first`` meeting ``second``, centres (``apart_x``, ``apart_y``)
    apart (length ``gap``), in ``velocities``; False if they part."""
    closing = (
        (velocities[first, 0] - velocities[second, 0]) * apart_x
        + (velocities[first, 1] - velocities[second, 1]) * apart_y
    ) / gap
    if closing <= 1e-12:
        return False
    f = 0.5 * (1.0 + E_BALL) * closing / gap
    velocities[first, 0] -= f * apart_x
    velocities[first, 1] -= f * apart_y
    velocities[second, 0] += f * apart_x
    velocities[second, 1] += f * apart_y
    return True


@njit(cache=True)
def play(
    centres: np.ndarray,
    on_table: np.ndarray,
    velocities: np.ndarray,
    diameter: float,
    span: float,
    contacts: np.ndarray,
    struck: int,
    drive_us: float,
    merge_us: float,
    touch_mm: float,
) -> int:
    """Move the balls straight from ``centres`` at ``velocities`` (mm/µs) for ``span`` µs,
    colliding on the way (balls of ``diameter`` mm, those ``on_table``).

    The tip stays on the ``struck`` ball for ``drive_us`` (the cue's contact
    time) and, outweighing it, pushes it on through a ball it meets then: its
    speed along the stroke is restored after each such collision (item 19's
    push; without it a ball frozen to the struck one takes half the stroke).
    ``centres`` and ``velocities`` are left at the end; each collision writes ``contacts``
    (``PLAY_*``: ball, ball, µs from the start, x, y of the touch point) while it has
    room. Returns how many collisions there were (more than ``len(contacts)``:
    the rest were not written; the caller counts them); a pair's collisions
    less than ``merge_us`` apart are one (one click). Balls within ``touch_mm``
    of touching (a rack: touching, but measured to the tracker's 0.1 mm)
    collide at once if closing, the way the table's engine resolves touching
    balls: moving balls in number order, each against the others in number
    order.
    """
    sx, sy = velocities[struck, 0], velocities[struck, 1]
    speed = np.hypot(sx, sy)
    now, n = 0.0, 0
    touch = (diameter + touch_mm) ** 2 - diameter * diameter
    for _ in range(PLAY_STEPS):
        first, bi, bj = _next_collision(centres, on_table, velocities, diameter, touch, span - now)
        _advance(centres, velocities, first)
        now += first
        if bi < 0:
            break
        dx, dy = centres[bj, 0] - centres[bi, 0], centres[bj, 1] - centres[bi, 1]
        collide(velocities, bi, bj, dx, dy, np.hypot(dx, dy))
        bi, bj = min(bi, bj), max(bi, bj)
        if (bi == struck or bj == struck) and now < drive_us and speed > 0.0:
            along = (velocities[struck, 0] * sx + velocities[struck, 1] * sy) / speed
            if along < speed:
                velocities[struck, 0] += (speed - along) * sx / speed
                velocities[struck, 1] += (speed - along) * sy / speed
        n = _record_collision(contacts, n, centres, bi, bj, now, merge_us)
    if now < span:  # steps ran out (the rest of the span straight on)
        _advance(centres, velocities, span - now)
    return n


@njit(cache=True, inline="always")
def _next_collision(centres, on_table, velocities, diameter, touch, within):
    """The first collision of two balls ``within`` µs: (µs, ball, ball), or (within, -1, -1).

    Moving balls in number order, each against the others in number order;
    two closing balls whose squared gap is under ``touch`` collide at once.
    """
    first, bi, bj = within, -1, -1
    for i in range(16):
        if not on_table[i] or (velocities[i, 0] == 0.0 and velocities[i, 1] == 0.0):
            continue
        for j in range(16):
            if (
                j == i
                or not on_table[j]
                or (j < i and (velocities[j, 0] != 0.0 or velocities[j, 1] != 0.0))
            ):
                continue
            dvx, dvy = velocities[i, 0] - velocities[j, 0], velocities[i, 1] - velocities[j, 1]
            dpx, dpy = centres[i, 0] - centres[j, 0], centres[i, 1] - centres[j, 1]
            b = dpx * dvx + dpy * dvy
            c = dpx * dpx + dpy * dpy - diameter * diameter
            if b >= -MIN_CLOSING * np.sqrt(c + diameter * diameter):
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
    return first, bi, bj


@njit(cache=True, inline="always")
def _record_collision(contacts, count, centres, first, second, now, merge_us):
    """The collision of ``first`` < ``second`` at ``now`` µs into ``contacts`` (while it has
    room), unless the pair collided less than ``merge_us`` before (one click); returns the
    collisions counted."""
    for q in range(min(count, contacts.shape[0])):
        if (
            contacts[q, PLAY_FIRST] == first
            and contacts[q, PLAY_SECOND] == second
            and now - contacts[q, PLAY_US] < merge_us
        ):
            return count
    if count < contacts.shape[0]:
        contacts[count, PLAY_FIRST] = first
        contacts[count, PLAY_SECOND] = second
        contacts[count, PLAY_US] = now
        contacts[count, PLAY_X] = (centres[first, 0] + centres[second, 0]) / 2
        contacts[count, PLAY_Y] = (centres[first, 1] + centres[second, 1]) / 2
    return count + 1


@njit(cache=True)
def _advance(centres: np.ndarray, velocities: np.ndarray, dt_us: float) -> None:
    """Every ball moved straight on for ``dt_us`` (``centres``, ``velocities``: (16, 2) mm, mm/µs): the
    play runs from one collision to the next, and between them nothing else acts."""
    for i in range(16):
        centres[i, 0], centres[i, 1] = carry(
            centres[i, 0], centres[i, 1], velocities[i, 0], velocities[i, 1], dt_us
        )


class Stroke(NamedTuple):
    """A stroke tried on the struck ball: the momentum seen (mm/µs summed over the balls that
    moved), turned by ``turn`` rad and scaled by ``scale``."""

    momentum_x: float
    momentum_y: float
    turn: float
    scale: float


class Setting(NamedTuple):
    """What every stroke tried is played with: ``span_us`` long, from the ``struck`` ball,
    balls of ``diameter`` mm, the tip on it for ``drive_us``."""

    span_us: float
    struck: int
    diameter: float
    drive_us: float


@njit(cache=True)
def _stroke(start, seen_on, stroke: Stroke, setting: Setting, centres, on_table, contacts):
    """The layout ``start`` played for the setting's span after the tip gave the struck ball
    the ``stroke``; returns the collisions (``centres``, ``on_table``, ``contacts`` as
    :func:`play` leaves them)."""
    velocities = np.zeros((16, 2))
    for b in range(16):
        centres[b, 0], centres[b, 1] = start[b, 0], start[b, 1]
        on_table[b] = start[b, 2] > 0 and seen_on[b]
    mx, my, turn, scale = stroke
    struck = setting.struck
    velocities[struck, 0] = scale * (mx * np.cos(turn) - my * np.sin(turn))
    velocities[struck, 1] = scale * (mx * np.sin(turn) + my * np.cos(turn))
    return play(
        centres,
        on_table,
        velocities,
        setting.diameter,
        setting.span_us,
        contacts,
        struck,
        setting.drive_us,
        MERGE_US,
        TOUCH_MM,
    )


@njit(cache=True)
def fit_stroke(
    start: np.ndarray,
    seen_xy: np.ndarray,
    seen_on: np.ndarray,
    moved: np.ndarray,
    span: float,
    struck: int,
    diameter: float,
    drive_us: float,
    centres: np.ndarray,
    contacts: np.ndarray,
) -> tuple[int, float]:
    """The stroke on ``struck`` whose play best gives a tracker frame: (collisions, misfit mm²).

    ``start`` (16, 3) is the layout at the tip contact (x, y, on), the frame
    ``span`` µs later shows ``seen_xy`` / ``seen_on``; the ``moved`` balls'
    displacements give the momentum (ball–ball collisions keep it). The tip
    pushing on through a frozen neighbour adds up to a stroke's worth, so the
    stroke is 0.4–1.2 of it, and the sum carries every ball's tracker noise
    (degrees off): direction and size are searched, coarse to fine. ``centres``
    and ``contacts`` are left as the best stroke played them (the count may
    exceed ``len(contacts)``: see :func:`play`).
    """
    mx, my = 0.0, 0.0
    for b in range(16):
        if start[b, 2] > 0 and seen_on[b] and moved[b]:
            mx += (seen_xy[b, 0] - start[b, 0]) / span
            my += (seen_xy[b, 1] - start[b, 1]) / span
    on = np.zeros(16, np.bool_)
    setting = Setting(span, struck, diameter, drive_us)
    best_turn, best_scale, best_e = 0.0, 0.8, np.inf
    step = FIT_STEP
    for _ in range(3):
        turn0, scale0 = best_turn, best_scale
        for a in range(-4, 5):
            for m in range(-4, 5):
                turn, scale = turn0 + a * step, scale0 + m * step * 1.25
                if scale <= 0.0:
                    continue
                _stroke(start, seen_on, Stroke(mx, my, turn, scale), setting, centres, on, contacts)
                e = 0.0
                for b in range(16):
                    if on[b]:
                        e += (centres[b, 0] - seen_xy[b, 0]) ** 2 + (
                            centres[b, 1] - seen_xy[b, 1]
                        ) ** 2
                if e < best_e:
                    best_turn, best_scale, best_e = turn, scale, e
        step /= 4
    best = Stroke(mx, my, best_turn, best_scale)
    n = _stroke(start, seen_on, best, setting, centres, on, contacts)
    return n, best_e
