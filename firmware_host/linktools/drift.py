"""How fast one clock runs against another, and how far that figure may be off.

Both ``stats`` (a capture's windows) and ``monitor`` (the timing core's
live fit) give a drift with its uncertainty, measured the same way: the
upper envelope of ``y`` (hub minus node time, or hub minus host time)
over ``x`` (:func:`firmware_host.timing.clock_model.envelope_line`: every
sample lies under the true line, delays being positive), and the
uncertainty from how the window's two halves disagree with it.
"""

from __future__ import annotations

import numpy as np

from ..timing.clock_model import envelope_line

RESOLUTION_US = 1.0  # every clock's resolution (ICD §7)
MIN_HALF = 4  # samples in each half for the halves' slopes to mean anything


def envelope_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(value at min(x), slope) of the upper envelope of y over x (any order; samples at one
    x, e.g. frames read in one chunk, count as their highest: the envelope touches only it).
    A single x gives slope 0: no rate can be seen."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order].astype(np.float64), y[order].astype(np.float64)
    first = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    xs, ys = xs[first], np.maximum.reduceat(ys, first)
    a, b = envelope_line(xs - xs[0], ys)
    return float(a), float(b)


def slope_uncertainty(x: np.ndarray, y: np.ndarray, slope: float, floor: float = 0.0) -> float:
    """How far an envelope's ``slope`` (a fraction; ppm · 1e-6) may be from the truth: twice as
    far as the slopes of the window's two halves (each from half the samples over half the
    span) are from it, never less than ``floor`` (what the datasheet's delay spread allows:
    :func:`~firmware_host.timing.clock_model.slope_error`) or than the clocks' resolution
    allows (1 µs at each end, ICD §7).  A window too thin to halve gets the floors only.

    Measured on the virtual table (10 minutes, 30-95 s windows, against the truth at each
    window's time): the halves' spread alone covered the error in 86-100 % of windows
    (their periodic stamps can make the halves agree exactly), twice it with the
    resolution's floor in all.
    """
    order = np.argsort(x, kind="stable")
    halves = np.array_split(order, 2)
    span = float(np.ptp(x)) if len(x) else 0.0
    if min(len(h) for h in halves) < MIN_HALF:
        return halves_bound(None, slope, span, floor)
    return halves_bound([envelope_slope(x[h], y[h])[1] for h in halves], slope, span, floor)


def halves_bound(half_slopes: list[float] | None, slope: float, span: float, floor: float) -> float:
    """:func:`slope_uncertainty` from the halves' slopes (None: too thin to halve) and the
    samples' span; apart so that a streamed fit (:mod:`.envelope`) gives the same figure."""
    floor = max(floor, 2.0 * RESOLUTION_US / span if span > 0 else 0.0)
    if half_slopes is None:
        return floor
    spread = [abs(s - slope) for s in half_slopes]
    return max(2.0 * max(spread), floor)
