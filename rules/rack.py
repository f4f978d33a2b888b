"""Item 8: where the white balls go before a break, full or incomplete pyramid.

The triangle always sits the same way (ICD §6): apex on the back mark, row
k at x = 3L/4 + k·d·√3/2, its k + 1 slots at y = W/2 + (j - k/2)·d.  An
incomplete pyramid of N balls fills whole rows from the apex; the base
(last, partly filled) row is filled from the middle outwards, and when its
count cannot be symmetric about y = W/2 the apex ball moves into the base
(note to 8.2).  The triangle does not move: the apex place stays empty.

>>> [row for row, _ in rack_slots(5)]
[1, 1, 2, 2, 2]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from protocol.geometry import Table

MAX_BALLS = 15


def rack_slots(n: int) -> list[tuple[int, int]]:
    """The (row, j) slots of an n-ball rack, apex first, each row left to right."""
    if not 1 <= n <= MAX_BALLS:
        raise ValueError(f"a rack holds 1 to {MAX_BALLS} balls, not {n}")
    rows = math.ceil((math.sqrt(8 * n + 1) - 1) / 2)  # smallest r with r(r+1)/2 >= n
    full = rows * (rows - 1) // 2
    base = n - full
    apex_moved = rows > 1 and base % 2 != rows % 2
    if apex_moved:
        base += 1
    first = (rows - base) // 2
    slots = [(k, j) for k in range(rows - 1) for j in range(k + 1)]
    if apex_moved:
        slots.remove((0, 0))
    return slots + [(rows - 1, j) for j in range(first, first + base)]


def rack_positions(n: int, table: Table) -> list[tuple[float, float]]:
    """The centres (x, y) in mm of an n-ball rack on ``table``, apex first."""
    d = table.ball_mm
    apex_x, mid_y = table.back_mark
    return [(apex_x + k * d * math.sqrt(3) / 2, mid_y + (j - k / 2) * d) for k, j in rack_slots(n)]


@dataclass(frozen=True)
class RackCheck:
    """How a layout compares with the rack: misplaced balls and their distance to a place."""

    expected: int
    found: int
    misplaced: tuple[tuple[int, float], ...]  # (ball, mm to the nearest free place)

    @property
    def ok(self) -> bool:
        return self.expected == self.found and not self.misplaced

    @property
    def looks_racked(self) -> bool:
        """Most balls sit on rack places: the layout is a rack, if a sloppy one."""
        return self.found > 0 and len(self.misplaced) <= self.found // 5

    def describe(self) -> str:
        rack = f" in a {self.found}-ball rack" if self.found < MAX_BALLS else ""
        parts = [f"ball {ball} is {gap:.0f} mm off its place{rack}" for ball, gap in self.misplaced]
        if self.found != self.expected:
            parts.append(f"{self.found} white balls on the table, the rack needs {self.expected}")
        return "; ".join(parts)


def check_rack(
    balls: dict[int, tuple[float, float]], expected: int | None, table: Table, tolerance_mm: float
) -> RackCheck:
    """Match the white balls at rest to the places of a rack of their own count.

    ``expected``: the count the rack must have, or None when any count will do
    (a correctly set incomplete pyramid is no misplacement: the note to 8.2).
    Places go to balls nearest-pair first; with places a ball apart and a
    tolerance well under half a ball this is the unique sensible matching.
    """
    whites = {b: xy for b, xy in balls.items() if b != 0}
    if expected is None:
        expected = len(whites)
    if not whites or len(whites) > MAX_BALLS:
        return RackCheck(expected, len(whites), tuple((b, math.inf) for b in sorted(whites)))
    places = rack_positions(len(whites), table)
    pairs = sorted(
        (math.dist(xy, place), ball, i)
        for ball, xy in whites.items()
        for i, place in enumerate(places)
    )
    taken: set[int] = set()
    gap: dict[int, float] = {}
    for dist, ball, i in pairs:
        if ball not in gap and i not in taken:
            gap[ball] = dist
            taken.add(i)
    misplaced = tuple((b, gap[b]) for b in sorted(gap) if gap[b] > tolerance_mm)
    return RackCheck(expected, len(whites), misplaced)
