"""Where a shot's numbered markers go, so that none hides another.

Events closer than a marker's size on the drawing share one marker, and so
do markers whose boxes would overlap wherever they are put: it names all
their numbers (``2, 55``; ``3–7, 9–32``; a longer list as its ends and its
count).  The cue ball's first contact keeps a marker of its own.  Pure
geometry in display pixels; :mod:`.plot` draws the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MARKER_PT = 8.0
MARKER_GAP_PX = 3.0  # two markers' boxes closer than this are in each other's way
MARKER_OFFSET_PT = 7.0
CLUSTER_PX = 16.0  # events this close to another's place share its marker
MARKER_CHARS = 12  # a longer list of numbers is shown as its ends and its count


@dataclass
class Group:
    """Events drawn as one marker: their numbers, and where they happened (display px)."""

    numbers: list[int]
    points: list[tuple[float, float]]
    first: bool = False  # the cue ball's first contact: a marker of its own, edged red
    side: tuple[int, int] = (1, 1)  # where the marker sits from its place: up right, ...

    @property
    def anchor(self) -> tuple[float, float]:
        xs, ys = zip(*self.points, strict=True)
        return sum(xs) / len(xs), sum(ys) / len(ys)

    @property
    def label(self) -> str:
        return number_ranges(self.numbers)

    def box(self, dpi: float) -> tuple[float, float, float, float]:
        """The marker's box in display px (from the label's length: bold digits)."""
        pt = dpi / 72.0
        h = 1.6 * MARKER_PT * pt
        w = max((0.62 * MARKER_PT * len(self.label) + MARKER_PT) * pt, h)
        x, y = self.anchor
        x += self.side[0] * MARKER_OFFSET_PT * pt
        y += self.side[1] * MARKER_OFFSET_PT * pt
        return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def number_ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3–5, 9"``; a long list as its ends and its count."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}\N{EN DASH}{r[-1]}" for r in runs)
    if len(text) <= MARKER_CHARS:
        return text
    return f"{min(numbers)}\N{HORIZONTAL ELLIPSIS}{max(numbers)} ({len(numbers)})"


def group(
    points: list[tuple[int, tuple[float, float]]], first: int | None, dpi: float
) -> list[Group]:
    """The markers for numbered places (display px), each on a side of its place where it
    is in no other's way; ``first`` (the cue ball's first contact) alone."""
    groups: list[Group] = []
    for n, (x, y) in points:
        g = Group([n], [(x, y)], first=n == first)
        if not g.first:  # one group with every group it comes near (a cluster's contacts)
            near = [
                h
                for h in groups
                if not h.first and any(math.dist(p, (x, y)) <= CLUSTER_PX for p in h.points)
            ]
            for h in near:
                g.numbers += h.numbers
                g.points += h.points
                groups.remove(h)
            g.numbers.sort()
        groups.append(g)
    return _placed(groups, dpi)


SIDES = ((1, 1), (1, -1), (-1, 1), (-1, -1))  # up right, down right, up left, down left


def _placed(groups: list[Group], dpi: float) -> list[Group]:
    """Each marker on the first side of its place where it overlaps no marker placed before
    it (the cue ball's first contact first, up left); where no side is free, it joins the
    marker in the way (never the first contact's) and the placing starts again."""
    while True:
        done: list[Group] = []
        for g in sorted(groups, key=lambda g: not g.first):
            sides = SIDES[2:] + SIDES[:2] if g.first else SIDES
            in_way: list[Group] = []  # the markers (not the first contact's) on any side
            for side in sides:
                g.side = side
                box = g.box(dpi)
                blocking = [d for d in done if _overlap(box, d.box(dpi))]
                if not blocking:
                    break
                in_way += [d for d in blocking if not d.first and d not in in_way]
            else:
                into = in_way[0] if in_way else None
                if into is not None:
                    into.numbers += g.numbers
                    into.points += g.points
                    groups.remove(g)
                    break
                g.side = sides[0]  # only the first contact is in the way: beside it
            done.append(g)
        else:
            return groups


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    gap = MARKER_GAP_PX
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap
