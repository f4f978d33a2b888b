"""What the tracker's paths show that the sensors did not say: the object ball the cue ball
passed within touching distance of, touches no sensor reported (item 20 is then not
called from their absence), and for a ``ball_moved`` (17) the ball that passed near it
or the click heard with it."""

from __future__ import annotations

import math
from itertools import combinations, pairwise
from typing import Any

from .config import RulesConfig
from .shot import (
    MOVED_SLACK_US,
    Event,
    Finding,
    Outcome,
    Point,
    Shot,
    ball_name,
    is_centre_cross,
    position_at,
    surface_gap,
)


def closest_pass(shot: Shot, config: RulesConfig) -> tuple[int, int, float] | None:
    """The object ball the cue ball's path came within touching distance of (both paths
    are drawn within ``path_tolerance_mm``), when and how close: a contact the sensors
    gave to another pair (two contacts a few ms apart, the tracker's nearest pair the
    wrong one) leaves the cue ball's path bent at that ball, so "touched no object ball"
    would be a false foul.  None if it passed none (a ball passed 5 mm off is missed)."""
    reach = 2 * config.path_tolerance_mm
    cue = shot.cue_ball
    pos = shot.positions()
    if cue is None or cue not in pos:
        return None
    best: tuple[int, int, float] | None = None
    for t, x, y in shot.path(cue):
        if t <= shot.t0:
            continue
        for ball, rest in pos.items():
            if ball == cue:
                continue
            bx, by = position_at(shot.path(ball), rest, shot.t0, t)
            gap = surface_gap((x, y), (bx, by), shot.ball_mm)
            if gap < reach and (best is None or gap < best[2]):
                best = (ball, t, max(0.0, gap))
    return best


REPORTED_US = 5_000  # a sensor event this near a touch on the paths is that touch


def unreported(shot: Shot, config: RulesConfig, after_us: int) -> list[Event]:
    """Touches the tracker's paths allow after ``after_us`` that no sensor reported: a
    ball's path within touching distance (2 x ``path_tolerance_mm``) of a cushion's nose,
    where the path turns back from it (a bounce), or two balls' paths within touching
    distance of each other where one of them bends or starts.  A soft
    touch under the sensors' threshold (seed 519: a rattle in a corner's jaws), a
    second collision merged with the first (seed 403) or a ball resting on the centre
    line that leaves it by half a millimetre (seed 369) leaves only the paths, so a foul
    called from its absence could be false.  A ball within half the path tolerance of
    the centre line at the contact that moves on is a possible crossing; a ball rolling
    up to the line is not: the fusion judges that on the tracker's frames and writes
    a crossing it cannot settle as ``certain: false`` (a ball stopping 1 mm short of
    the line did not cross it: tests/fusion/test_fusion_edges.py).  Nor is where a ball came
    to rest a possible cushion: the tracker averages a ball at rest to well under a
    millimetre (1.5 mm short of a cushion is short: tests/fusion/test_fusion_soft_cushion.py).  Each comes as an event with
    ``"unreported": true``, a cushion at most once per ball, cushion and
    ``MOVED_SLACK_US``, a contact at most once per pair and ``MOVED_SLACK_US``."""
    reach = 2 * config.path_tolerance_mm
    pos = shot.positions()
    paths = {b: [p for p in shot.path(b) if p[0] > shot.t0] for b in pos}
    told = [
        e for e in shot.events if e["type"] in ("cushion", "ball_contact") or is_centre_cross(e)
    ]
    out: list[dict[str, Any]] = []  # made here, marked unreported below

    def known(kind: str, key: object, t: int, near_us: int) -> bool:
        said = [e for e in told if e["type"] == kind and _key(e) == key]
        return any(abs(int(e["t_us"]) - t) <= near_us for e in said) or any(
            e["type"] == kind and _key(e) == key and t - e["t_us"] <= MOVED_SLACK_US for e in out
        )

    length, width, radius = shot.table.length_mm, shot.table.width_mm, shot.ball_mm / 2
    for ball, path in paths.items():
        points = [(shot.t0, *pos[ball]), *path]
        for (_, xa, ya), (t, x, y), (_, xb, yb) in zip(points, points[1:], [*points[2:], _END]):
            if t <= after_us or min(x, y, length - x, width - y) - radius >= reach:
                continue  # not after the contact, or no cushion's nose within reach (busy tables)
            c = shot.table.cushion_of(x, y)
            gap = shot.table.cushion_gap(c, x, y)
            nx, ny = _INWARD[c]
            # in and out by more than the paths' noise: a ball creeping to rest by a
            # cushion wobbles on its path by a millimetre or two, it does not bounce
            into = (x - xa) * nx + (y - ya) * ny < -reach
            bounced = into and xb is not None and (xb - x) * nx + (yb - y) * ny > reach
            # past the nose's line by more than the noise: in a pocket's jaws, where the
            # nose curves away and a touch is too soft for the rails (seed 519)
            jaws = gap < -config.path_tolerance_mm / 2
            near = t > after_us and ((bounced and gap < reach) or jaws)
            if near and not known("cushion", (ball, c), t, MOVED_SLACK_US):
                out.append({"type": "cushion", "t_us": t, "ball": ball, "cushion": c})
    centre = shot.table.centre_line_x
    for ball, path in paths.items():
        # where it was last seen before the contact (a path vertex is a tracker frame;
        # between two of them the position is only interpolated)
        x_then = next((x for t, x, _ in reversed(path) if t <= after_us), pos[ball][0])
        on_line = abs(x_then - centre) < config.path_tolerance_mm / 2
        moves_on = any(t > after_us for t, _, _ in path)
        if on_line and moves_on and not known("line_cross", ball, after_us + 1, MOVED_SLACK_US):
            out.append({"type": "line_cross", "t_us": after_us + 1, "ball": ball, "line": "centre"})
    bends = {  # a vertex the ball leaves by more than the paths' noise
        b: {
            t
            for (t, xa, ya), (_, xb, yb) in pairwise(path)
            if math.dist((xa, ya), (xb, yb)) > reach
        }
        for b, path in paths.items()
    }
    times = sorted({t for ts in bends.values() for t in ts if t > after_us})
    for t in times:
        at = {b: position_at(paths[b], pos[b], shot.t0, t) for b in pos}
        for a, b in combinations(sorted(pos), 2):
            turned = t in bends[a] or t in bends[b]  # a collision bends a path, or starts it
            near = turned and surface_gap(at[a], at[b], shot.ball_mm) < reach
            if near and not known("ball_contact", (a, b), t, REPORTED_US):
                out.append({"type": "ball_contact", "t_us": t, "balls": [a, b]})
    for e in out:
        e["unreported"] = True
    return sorted(out, key=lambda e: int(e["t_us"]))


_END = (None, None, None)  # after a path's last vertex: no way out of it
# Each cushion's nose normal, pointing into the table (0: x = 0, 1 and 2: y = 0, 3: x = L,
# 4 and 5: y = W; ICD §6)
_INWARD = ((1.0, 0.0), (0.0, 1.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0), (0.0, -1.0))


def _key(ev: Event) -> object:
    if ev["type"] == "line_cross":
        return ev.get("ball")
    if ev["type"] == "cushion":
        return (ev.get("ball"), ev.get("cushion"))
    # a ball the sensors could not name is None (EVENTS.md): after the named ones, never
    # compared with them
    return tuple(sorted(ev.get("balls") or (), key=lambda b: (b is None, b or 0)))


def moved_near(shot: Shot, config: RulesConfig, ev: Event) -> tuple[int, float] | None:
    """A ball the fusion says moved with no contact (17): the other ball whose path passed
    within touching distance of it (2 x ``path_tolerance_mm``) on a stretch run within
    ``MOVED_SLACK_US`` of when it was seen to start, and how close -- a contact no sensor
    reported (a click merged with another, seed 331) moves a ball as surely as a hand.
    The distance is taken to the path's segments, not to timed points: a path is drawn
    within its tolerance in space, but a ball slowed by collisions along one straight
    stretch is not where even timing would put it.  None if no ball came near."""
    ball, t = ev.get("ball"), int(ev["t_us"])
    pos = shot.positions()
    if ball is None or ball not in pos:
        return None
    here = pos[ball]
    best: tuple[int, float] | None = None
    for other, rest in pos.items():
        if other == ball:
            continue
        points = [(shot.t0, *rest)] + [p for p in shot.path(other) if p[0] > shot.t0]
        for (ta, xa, ya), (tb, xb, yb) in pairwise(points):
            if tb < t - MOVED_SLACK_US or ta > t + MOVED_SLACK_US:
                continue
            gap = _to_segment(here, (xa, ya), (xb, yb)) - shot.ball_mm
            if gap < 2 * config.path_tolerance_mm and (best is None or gap < best[1]):
                best = (other, max(0.0, gap))
    return best


def heard_with(shot: Shot, ev: Event) -> Event | None:
    """A contact of two other balls reported within ``REPORTED_US`` of when a ball was
    seen to start moving with no contact of its own (17): the click was most likely its
    collision, given to the wrong pair by a tracker that lost which ball is which in a
    cluster (seed 337: 12-13 reported 0.2 ms after ball 7 started, truth 12-7).  A hand
    touching a ball keeps no such time with a collision."""
    t = int(ev["t_us"])
    return next(
        (
            e
            for e in shot.events
            if e["type"] == "ball_contact"
            and ev.get("ball") not in (e.get("balls") or ())
            and abs(int(e["t_us"]) - t) <= REPORTED_US
        ),
        None,
    )


def _to_segment(p: Point, a: Point, b: Point) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    f = 0.0 if length2 == 0.0 else ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2
    f = min(1.0, max(0.0, f))
    return math.dist(p, (a[0] + f * dx, a[1] + f * dy))


def moved_findings(shot: Shot, config: RulesConfig) -> Outcome:
    """17 for each ball the fusion saw move with no contact in the shot -- unless another
    ball's path came within touching distance of it: then a contact no sensor reported
    may have moved it, and the referee decides."""
    out = Outcome()
    for ev in shot.moved:
        said = f"{ball_name(ev.get('ball'))} was touched and moved"
        near = moved_near(shot, config, ev)
        heard = heard_with(shot, ev)
        if heard is not None:
            a, b = heard["balls"]
            dt = abs(int(heard["t_us"]) - int(ev["t_us"])) / 1000
            out.open.append(
                Finding(
                    "17",
                    f"{said}, with no contact reported, but a contact of {ball_name(a)} and "
                    f"{ball_name(b)} was heard {dt:.1f} ms from its start: the sensors may "
                    "have given its collision to another pair",
                    (ev["t_us"], heard["t_us"]),
                )
            )
        elif near is None:
            out.fouls.append(Finding("17", said, (ev["t_us"],)))
        else:
            other, gap = near
            out.open.append(
                Finding(
                    "17",
                    f"{said}, with no contact reported, but {ball_name(other)} came within "
                    f"{gap:.0f} mm of it",
                    (ev["t_us"],),
                )
            )
    return out
