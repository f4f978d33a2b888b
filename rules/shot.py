"""One shot's judgement: the events between ``shot_start`` and ``shot_end`` to a verdict.

Every check returns :class:`Finding` values instead of deciding alone: a
foul, an item the sensors present leave open, or the clause that made the
shot legal.  The referee folds them into one EVENTS.md verdict, so several
fouls in one shot are all listed and a foul that is certain is not hidden
behind an item the sensors could not decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from protocol.geometry import DEFAULT_TABLE, Table

from .config import RulesConfig, SensorSet

Event = dict[str, Any]
Point = tuple[float, float]
Path = tuple[int, float, float]  # t_us, x, y


@dataclass(frozen=True)
class Finding:
    """One reason behind a verdict: ``rule`` as written in the rules (or a clause)."""

    rule: str
    reason: str
    evidence: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return f"{self.reason}: {self.rule}"


MOVED_SLACK_US = 50_000  # a moving ball is first seen moving up to this long after its contact


@dataclass
class Shot:
    """What the referee collected about one shot while it ran."""

    number: int | None
    player: int
    is_break: bool
    start: Event
    events: list[Event] = field(default_factory=list)
    end: Event | None = None
    declared: set[int | None] = field(default_factory=set)  # DECLARE_FROZEN; None: nearest, unknown
    fouls: list[Finding] = field(
        default_factory=list
    )  # 14.2, 11.3, 17, keypad calls: not from the stroke
    open: list[Finding] = field(default_factory=list)  # 14.2 on an estimated end
    table: Table = DEFAULT_TABLE
    announced: set[str] = field(default_factory=set)  # rules announced early
    cut_short: bool = False  # a new tip contact came before every ball stopped (14.2)
    moved: list[Event] = field(default_factory=list)  # ball_moved in the shot: 17, at its end

    @property
    def ball_mm(self) -> float:
        return self.table.ball_mm

    @property
    def struck(self) -> int | None:
        """The ball the tracker saw the tip strike, or None."""
        return self.start.get("cue_ball")

    @property
    def cue_ball(self) -> int | None:
        """The cue ball: the ball struck; on a break the coloured ball when the tracker
        could not tell (11.2: it is always the break's cue ball)."""
        struck = self.struck
        return 0 if struck is None and self.is_break else struck

    @property
    def tips(self) -> list[Event]:
        return [e for e in self.events if e["type"] == "cue_contact"]

    @property
    def t0(self) -> int:
        """The stroke: the first tip contact (the shot's start, 14.1)."""
        tips = self.tips
        return int(tips[0]["t_us"] if tips else self.start["t_us"])

    @property
    def tip_duration(self) -> int:
        tips = self.tips
        return int(tips[0].get("duration_us", 0)) if tips else 0

    @property
    def t_us(self) -> int:
        return int((self.end or self.start)["t_us"])

    def positions(self) -> dict[int, Point]:
        return positions_of(self.start.get("balls"))

    def path(self, ball: int) -> list[Path]:
        paths = (self.end or {}).get("paths") or {}
        return [
            (int(t), float(x), float(y)) for t, x, y in paths.get(str(ball), paths.get(ball, []))
        ]


@dataclass
class Outcome:
    fouls: list[Finding] = field(default_factory=list)
    open: list[Finding] = field(default_factory=list)
    satisfied: Finding | None = None
    pocketed: list[int | None] = field(default_factory=list)  # balls legally pocketed
    notes: list[Finding] = field(default_factory=list)  # clauses that excused the stroke


def positions_of(raw: dict[str, Any] | None) -> dict[int, Point]:
    """An event's ``balls`` ({"7": [x, y]}) keyed by ball number."""
    return {int(b): (float(xy[0]), float(xy[1])) for b, xy in (raw or {}).items()}


def frozen_map(raw: dict[str, Any] | None) -> dict[int, set[int]]:
    return {int(b): {int(c) for c in cs} for b, cs in (raw or {}).items()}


def ball_name(ball: int | None) -> str:
    if ball is None:
        return "a ball"
    return "the coloured ball" if ball == 0 else f"ball {ball}"


def _ms(dt_us: int) -> str:
    return f"{dt_us / 1000:.1f} ms"


# ---------------------------------------------------------------- the first contact

ANGLE_TOL_DEG = 1e-6  # 19.2(1) "не менее 45 градусов": 44.99999999999998° is 45°
STROKE_UNDECIDED = "19.2 undecided"  # _rule_19_2: 19.2(1) within the reading's band of 45°
LENGTH_TOL_MM = 1e-6  # float noise on distances compared with a configured limit


def first_contact(
    shot: Shot, sensors: SensorSet, config: RulesConfig, away: set[int] | None = None
) -> tuple[int, Event] | None:
    """Index and event of the cue ball's first contact with an object ball.

    Note to 19.2: a stroke away from a touching ball that does not move is no
    collision with it, so such a contact (reported at the stroke) is skipped
    (``away``: :func:`played_away`, if the caller has it already).
    """
    cue = shot.cue_ball
    if away is None:
        away = played_away(shot, config) if sensors.tracker else set()
    for i, ev in enumerate(shot.events):
        if ev["type"] != "ball_contact":
            continue
        a, b = ev["balls"]
        if cue is not None and sensors.tracker:
            if cue not in (a, b):
                continue
            other = b if a == cue else a
            if other in away:
                continue
        return i, ev
    return None


def played_away(shot: Shot, config: RulesConfig) -> set[int]:
    """19.2's note ("удар по битку в сторону от соприкасающегося прицельного шара"): balls
    touching the cue ball that the stroke went *away from* (initial direction more than
    90° off the line of centres towards them) and that did not move.

    A stroke *into* a touching ball is a collision with it, even if a cushion pins
    it.  The cue ball rebounds off a pinned ball just as a stroke away from it
    would go, so for a pinned ball the path cannot tell: the contact the sensors
    report (the click of a collision) stands.
    """
    pos = shot.positions()
    cue = shot.cue_ball
    if cue not in pos:
        return set()
    out = set()
    for ball, xy in pos.items():
        if ball == cue or _gap(pos[cue], xy, shot.ball_mm) > config.frozen_gap_mm:
            continue
        if len(shot.path(ball)) >= 2 or pinned(shot, config, ball, pos[cue]) is not None:
            continue
        lead = _initial_direction(shot, config, pos[cue], xy)
        if lead is not None and lead[0] > 90.0 + ANGLE_TOL_DEG:
            out.add(ball)
    return out


# From a ball's centre towards each cushion's nose (ICD §6: 0 front, 1-2 left, 3 back, 4-5 right).
TOWARDS_CUSHION = ((-1.0, 0.0), (0.0, -1.0), (0.0, -1.0), (1.0, 0.0), (0.0, 1.0), (0.0, 1.0))


def pinned(shot: Shot, config: RulesConfig, ball: int, cue_xy: Point) -> int | None:
    """The cushion that holds ``ball`` against a stroke from ``cue_xy``: the ball rests
    against it and the line of centres points into it.  None if no cushion does."""
    xy = shot.positions()[ball]
    ux, uy = xy[0] - cue_xy[0], xy[1] - cue_xy[1]
    for c in sorted(resting_against(shot, config).get(ball, ())):
        nx, ny = TOWARDS_CUSHION[c]
        if ux * nx + uy * ny > 0.0:
            return c
    return None


def _gap(a: Point, b: Point, ball_mm: float) -> float:
    return math.dist(a, b) - ball_mm


def _unreadable(shot: Shot, config: RulesConfig, ball: int, cue_xy: Point) -> str | None:
    """Why neither the balls' momentum nor the cue ball's course can stand for the stroke
    at ``ball``, or None.  The cue ball against a cushion: the cushion pushes back during
    the stroke.  The cue ball touching a second ball: it may meet both at once, and the
    momentum splits three ways.  Both read 20 to 40° off the true stroke on either side
    of 45° in random matches (false fouls 19.2 and missed ones)."""
    cue = shot.cue_ball
    cushions = resting_against(shot, config).get(cue) if cue is not None else None
    if cushions:
        return f"it rests against cushion {min(cushions)}"
    for other, xy in sorted(shot.positions().items()):
        if other not in (cue, ball) and _gap(xy, cue_xy, shot.ball_mm) < config.near_gap_mm:
            return f"it touches {ball_name(other)} too"
    return None


def _initial_direction(
    shot: Shot, config: RulesConfig, cue_xy: Point, obj_xy: Point
) -> tuple[float, int] | None:
    """The angle (degrees) between the cue ball's initial direction and the line of
    centres towards ``obj_xy``, and the time of the path vertex it was read at.

    The cue's own axis is not sensed: the cue ball's path from its first point to
    the first vertex farther than ``path_tolerance_mm`` stands for it.  None
    without a path.
    """
    path = shot.path(shot.cue_ball) if shot.cue_ball is not None else []
    if len(path) < 2:
        return None
    start = (path[0][1], path[0][2])
    lead = next(
        (p for p in path[1:] if math.dist(start, (p[1], p[2])) > config.path_tolerance_mm), path[-1]
    )
    dx, dy = lead[1] - start[0], lead[2] - start[1]
    norm = math.hypot(dx, dy)
    dist = math.dist(cue_xy, obj_xy)
    if norm == 0.0 or dist == 0.0:
        return None
    ux, uy = (obj_xy[0] - cue_xy[0]) / dist, (obj_xy[1] - cue_xy[1]) / dist
    cos = max(-1.0, min(1.0, (dx * ux + dy * uy) / norm))
    return math.degrees(math.acos(cos)), lead[0]


def _stroke_direction(
    shot: Shot, config: RulesConfig, index: int, ball: int, cue_xy: Point, obj_xy: Point
) -> tuple[float, int] | None:
    """19.2(1)'s stroke: the angle (degrees) between the cue ball's course *before* it
    met ``ball`` (its first contact, ``shot.events[index]``) and the line of centres
    towards ``obj_xy``, and the time it was read at.

    A near ball is met within a few mm of travel, mostly before the tracker's
    first frame after the stroke, so the cue ball's own path shows its course
    deflected by the collision, not the stroke.  For equal balls the momentum
    before the collision is the sum of both balls' after it, so the sum of
    their displacements from their places at rest (``shot_start``), read on
    the paths ``stroke_window_us`` after the contact, lies along the stroke.
    Each ball is counted from when it could start to move (the cue ball from
    the stroke, the others from their contact), the travel up to the contact
    included.  A ball the two touch within the window joins the sum (the
    momentum is shared with it); the window ends early at a cushion or a pocket
    of any of them, a ball of unknown place or number, or another tip contact.

    None -- the caller falls back to :func:`_initial_direction` -- where the
    momentum of the balls is not the stroke's: ``ball`` pinned by a cushion, no
    ball but the cue ball moving, the cue ball at a cushion or another ball
    before the contact, no window left, or too little travel to read a
    direction.  The tip still on the cue ball (a push) needs no exception: the
    cue drives along its own axis.
    """
    cue = shot.cue_ball
    pos = shot.positions()
    if cue is None or cue not in pos or pinned(shot, config, ball, cue_xy) is not None:
        return None
    t0 = shot.t0
    for ev in shot.events[:index]:
        if ev["t_us"] < t0:
            continue
        if (ev["type"] in ("cushion", "pocket") and ev.get("ball") in (cue, None)) or (
            ev["type"] == "ball_contact" and (cue in ev["balls"] or None in ev["balls"])
        ):
            return None  # the cue ball did not run straight from the stroke to the contact
    t_c = int(shot.events[index]["t_us"])
    starts: dict[int, int] = {cue: t0, ball: t_c}
    t_read = t_c + config.stroke_window_us
    for ev in shot.events[index + 1 :]:
        t = int(ev["t_us"])
        if t > t_read:
            break
        kind = ev["type"]
        if kind == "ball_contact":
            a, b = ev["balls"]
            ours = [x for x in (a, b) if x in starts]
            if len(ours) == 2 or (not ours and None not in (a, b)):
                continue  # the same collision again, or two other balls
            other = b if a in starts else a
            if not ours or other is None or other not in pos:
                t_read = t  # a ball of unknown number or place may share the momentum
                break
            starts[other] = t
        elif kind in ("cushion", "pocket") and (ev.get("ball") in starts or ev.get("ball") is None):
            t_read = t
            break
        elif kind == "cue_contact" and t > t0:
            t_read = t  # the tip again (18): a second push along the cue
            break
    if t_read <= t_c or all(len(shot.path(b)) < 2 for b in starts if b != cue):
        return None  # no window, or no ball took any momentum from the cue ball
    sx = sy = 0.0
    for b, t_b in starts.items():
        x, y = position_at(shot.path(b), pos[b], t_b, t_read)
        sx, sy = sx + x - pos[b][0], sy + y - pos[b][1]
    norm = math.hypot(sx, sy)
    dist = math.dist(cue_xy, obj_xy)
    if norm <= config.path_tolerance_mm or dist == 0.0:
        return None
    ux, uy = (obj_xy[0] - cue_xy[0]) / dist, (obj_xy[1] - cue_xy[1]) / dist
    cos = max(-1.0, min(1.0, (sx * ux + sy * uy) / norm))
    return math.degrees(math.acos(cos)), t_read


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
            gap = _gap((x, y), (bx, by), shot.ball_mm)
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
    told = [e for e in shot.events if e["type"] in ("cushion", "ball_contact") or _is_centre(e)]
    out: list[Event] = []

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
            near = turned and _gap(at[a], at[b], shot.ball_mm) < reach
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
    return tuple(sorted(ev.get("balls") or ()))


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


def position_at(path: list[Path], rest: Point, t_start: int, t: int) -> Point:
    """Where a ball at rest at ``rest`` until ``t_start`` was at ``t``, on its path
    (straight, evenly timed between vertices; its last vertex once past it)."""
    points = [(t_start, rest[0], rest[1])] + [p for p in path if p[0] > t_start]
    for (ta, xa, ya), (tb, xb, yb) in pairwise(points):
        if t <= tb:
            f = (t - ta) / (tb - ta) if tb > ta else 1.0
            return xa + f * (xb - xa), ya + f * (yb - ya)
    return points[-1][1], points[-1][2]


def _shown(value: float, limit: float, below: bool) -> str:
    """``value`` rounded to the fewest decimals (at least one) that keep it on its side
    of ``limit``, so a reason never prints "45.0°" beside a foul for 44.99°."""
    for digits in range(1, 10):
        text = f"{value:.{digits}f}"
        if (float(text) < limit) if below else (float(text) > limit):
            return text
    return repr(value)


# ---------------------------------------------------------------- the stroke: 15, 11.2, 18, 19


def stroke_findings(shot: Shot, sensors: SensorSet, config: RulesConfig) -> Outcome:
    out = Outcome()
    cue = shot.cue_ball
    if shot.is_break and cue != 0:
        out.fouls.append(
            Finding(
                "11.2",
                f"the break was played with {ball_name(cue)}, not the coloured ball",
                (shot.t0,),
            )
        )
    elif not shot.is_break and config.discipline == "combined":
        if cue is None:
            out.open.append(
                Finding("15", "no sensor tells which ball the tip struck (combined pyramid)")
            )
        elif cue != 0:
            out.fouls.append(
                Finding("15", f"the tip struck {ball_name(cue)}, not the coloured ball", (shot.t0,))
            )
    tips = shot.tips
    if len(tips) > 1:
        gap = tips[1]["t_us"] - tips[0]["t_us"]
        out.fouls.append(
            Finding(
                "18",
                f"the tip touched the cue ball {len(tips)} times, again {_ms(gap)} after the stroke",
                tuple(t["t_us"] for t in tips),
            )
        )
    _push(shot, sensors, config, out)
    return out


def early_fouls(shot: Shot, sensors: SensorSet, config: RulesConfig) -> list[Finding]:
    """Stroke fouls certain before the balls stop: a double hit, a push (EVENTS.md allows
    announcing them early).  A push is announced only when no ball was near the cue
    ball, so nothing the paths show at the end can make it a 19.2 case instead."""
    pos = shot.positions()
    cue = shot.cue_ball
    near = cue in pos and any(
        b != cue and _gap(pos[cue], xy, shot.ball_mm) < config.near_gap_mm for b, xy in pos.items()
    )
    return [
        f
        for f in stroke_findings(shot, sensors, config).fouls
        if f.rule == "18" or (f.rule == "19.1" and not near)
    ]


def _push(shot: Shot, sensors: SensorSet, config: RulesConfig, out: Outcome) -> None:
    """19.1 and 19.2.  When the cue ball touches or nearly touches the ball it first
    contacts, 19.2 alone decides, whatever the tip contact's duration and whatever
    time the contact sensors report; otherwise the tip still on the cue ball at
    that contact is a push."""
    if not sensors.contact_times:
        out.open.append(
            Finding("19.1", "without a ball-contact time nobody can tell a push", (shot.t0,))
        )
        return
    first = first_contact(shot, sensors, config)
    if first is None:
        return
    t0, t_c = shot.t0, int(first[1]["t_us"])
    overlap = t_c <= t0 + shot.tip_duration
    cue = shot.cue_ball
    pos = shot.positions()
    if not sensors.tracker or cue not in pos:
        # No positions: how soon the contact came is the only handle on "near".
        if t_c - t0 <= config.near_contact_us:
            out.open.append(
                Finding(
                    "19.2",
                    f"the cue ball met a ball {_ms(t_c - t0)} after the stroke; only the "
                    "tracker can tell whether they were touching",
                    (t0, t_c),
                )
            )
        elif overlap:
            out.fouls.append(_push_foul(shot, t_c))
        return
    a, b = first[1]["balls"]
    hit = b if a == cue else a
    obj_xy = pos.get(hit) if hit is not None else None
    if obj_xy is None or _gap(pos[cue], obj_xy, shot.ball_mm) >= config.near_gap_mm:
        if overlap:
            out.fouls.append(_push_foul(shot, t_c))
        return
    finding = _rule_19_2(shot, first[0], hit, pos[cue], obj_xy, config)
    if finding is None:
        out.open.append(
            Finding(
                "19.2", f"no path of the cue ball to judge the stroke at {ball_name(hit)}", (t0,)
            )
        )
    elif finding.rule == STROKE_UNDECIDED:
        out.open.append(Finding("19.2", f"{finding.reason}: the referee decides", finding.evidence))
    elif finding.rule == "19.2":
        out.fouls.append(finding)
    else:
        out.notes.append(finding)


def _followed(shot: Shot, index: int, ball: int) -> list[Point]:
    """Where the cue ball went while the stroke and its collision with ``ball`` (the
    first contact, ``shot.events[index]``) alone moved it: its path from its place at
    rest until its next cushion, pocket or contact with another ball (or one of unknown
    number), the position then included.  «не прошел вперед (вслед за прицельным
    шаром)»: a cue ball sent back by a cushion and rolling on past the line of centres
    is not following the ball (seed 434: a false foul 19.2, read 242 mm forward)."""
    cue = shot.cue_ball
    assert cue is not None
    rest = shot.positions()[cue]
    t_until = next(
        (
            int(e["t_us"])
            for e in shot.events[index + 1 :]
            if (e["type"] in ("cushion", "pocket") and e.get("ball") in (cue, None))
            or (e["type"] == "ball_contact" and cue in e["balls"] and ball not in e["balls"])
            or (e["type"] == "ball_contact" and None in e["balls"])
        ),
        None,
    )
    path = shot.path(cue)
    points = [rest, *((x, y) for t, x, y in path if t_until is None or t < t_until)]
    if t_until is not None:
        points.append(position_at(path, rest, shot.t0, t_until))
    return points


def _push_foul(shot: Shot, t_c: int) -> Finding:
    return Finding(
        "19.1",
        f"tip still on the cue ball {_ms(shot.t0 + shot.tip_duration - t_c)} after it hit a ball",
        (shot.t0, t_c),
    )


def _rule_19_2(
    shot: Shot, index: int, ball: int, cue_xy: Point, obj_xy: Point, config: RulesConfig
) -> Finding | None:
    """19.2 for a cue ball touching or nearly touching ``ball``, its first contact.

    (1) "под углом не менее 45 градусов": the stroke at least 45° off the line of
    centres (exactly 45° is legal), read by :func:`_stroke_direction` from both
    balls' travel just after the collision (``index``: the contact in
    ``shot.events``), or where that cannot be read, from the cue ball's initial
    direction (:func:`_initial_direction`; more than 90° off is the cue ball
    coming back off the ball, drawn or off a ball a cushion pins, which tells
    nothing of the stroke's angle); (2) "не прошел вперед": after the
    collision the cue ball goes no farther forward along the line of centres than
    the tracker's uncertainty (``follow_tolerance_mm``), counted from where it
    meets the ball (its starting gap).  A finding on ``"19.2(1)"`` or ``"19.2(2)"``
    excuses the stroke; one on ``"19.2"`` is the foul; None without a path.
    """
    unreadable = _unreadable(shot, config, ball, cue_xy)
    lead = None if unreadable else _stroke_direction(shot, config, index, ball, cue_xy, obj_xy)
    band = config.stroke_angle_band_deg
    below, above = band, band  # where the reading may lie on either side of 45°
    reading = f"within the reading's {band:g}° of 45°"
    if unreadable:
        # no reading of the stroke is sound: only 19.2(2) may decide, and only to clear it
        lead = _initial_direction(shot, config, cue_xy, obj_xy)
        below = above = 180.0
        reading = f"but {unreadable}: the stroke cannot be read"
    elif lead is None:
        # the cue ball's own course, deflected by the collision: it may clear the stroke
        # (at least 45° off) but never convict it -- under 45° it is the referee's
        lead = _initial_direction(shot, config, cue_xy, obj_xy)
        below, above = 45.0, 0.0
        reading = "read from its course after the collision, which cannot show the stroke"
    if lead is None:
        return None
    angle, t_lead = lead
    gap = _gap(cue_xy, obj_xy, shot.ball_mm)
    near = (
        f"touching {ball_name(ball)}"
        if gap <= config.frozen_gap_mm
        else f"{gap:.0f} mm from {ball_name(ball)}"
    )
    evidence = (shot.t0, t_lead)
    if unreadable:
        head = f"the cue ball, {near}, left at {angle:.1f}° off the line of centres, {reading}"
    elif angle > 90.0 + ANGLE_TOL_DEG:
        # It came back off the ball (drawn back, or off a ball a cushion pins): its
        # path shows the rebound, not the stroke, so only (2) can be read.
        cushion = pinned(shot, config, ball, cue_xy)
        held = f" (pinned against cushion {cushion})" if cushion is not None else ""
        head = f"the cue ball, {near}{held}, came back off it"
    elif 45.0 - below < angle < 45.0 + above:
        head = f"the cue ball, {near}, was played {angle:.1f}° off the line of centres, {reading}"
    elif angle >= 45.0 - ANGLE_TOL_DEG:
        return Finding(
            "19.2(1)",
            f"the cue ball, {near}, was played {angle:.1f}° off the line of centres, not under 45°",
            evidence,
        )
    else:
        head = (
            f"the cue ball, {near}, was played {_shown(angle, 45.0, below=True)}° off the "
            "line of centres (under 45°: not 19.2(1))"
        )
    dist = math.dist(cue_xy, obj_xy)
    ux, uy = (obj_xy[0] - cue_xy[0]) / dist, (obj_xy[1] - cue_xy[1]) / dist
    reach = max(
        (x - cue_xy[0]) * ux + (y - cue_xy[1]) * uy for x, y in _followed(shot, index, ball)
    )
    forward = max(0.0, reach - max(0.0, gap))
    tol = config.follow_tolerance_mm
    if forward <= tol + LENGTH_TOL_MM:
        return Finding(
            "19.2(2)",
            f"{head} and went {forward:.1f} mm forward after the collision, within {tol:g} mm",
            evidence,
        )
    # read on paths drawn within path_tolerance_mm: a reading that close over the limit
    # may be one under it (seed 434: 6.0 mm read, the table's own under 5)
    near_limit = forward <= tol + config.path_tolerance_mm
    if near_limit and "referee" not in head:
        head += f" (within the paths' {config.path_tolerance_mm:g} mm of the limit: the referee)"
    return Finding(
        STROKE_UNDECIDED if 45.0 - below < angle < 45.0 + above or near_limit else "19.2",
        f"{head} and went {_shown(forward, tol, below=False)} mm "
        f"forward after the collision (over {tol:g} mm: not 19.2(2))",
        evidence,
    )


# ---------------------------------------------------------------- the result: 12.1 and 20


def result_findings(shot: Shot, sensors: SensorSet, config: RulesConfig) -> Outcome:
    """12.1 or item 20 over the shot's events.

    14.2: a shot a new stroke cut short is judged on its events until then; a
    clause already completed makes it legal, but a result foul is not certain
    yet (the balls still rolled), so it is left to the referee.
    """
    out = _result(shot, sensors, config)
    if shot.cut_short and out.satisfied is None:
        out.open += [
            Finding(f.rule, f"{f.reason}, before the next stroke cut the shot short", f.evidence)
            for f in out.fouls
        ]
        out.fouls = []
    return out


def _result(shot: Shot, sensors: SensorSet, config: RulesConfig) -> Outcome:
    item = "12.1" if shot.is_break else "20"
    out = Outcome()
    if not sensors.contact_times:
        # Counted as if legal until the referee rules: the turn then follows the pots.
        out.pocketed = [e.get("ball") for e in shot.events if e["type"] == "pocket"]
        out.open.append(
            Finding(item, "without a ball-contact time the result needs the referee", (shot.t0,))
        )
        return out
    away = played_away(shot, config) if sensors.tracker else set()
    first = first_contact(shot, sensors, config, away)
    if away:
        balls = ", ".join(ball_name(b) for b in sorted(away))
        out.notes.append(
            Finding(
                "19.2 note",
                f"{ball_name(shot.cue_ball)} was played away from {balls} touching it, "
                "which did not move: no collision",
                (shot.t0,),
            )
        )
    if first is None:
        cue = "the cue ball" if shot.cue_ball is None else ball_name(shot.cue_ball)
        passed = None if away or not sensors.tracker else closest_pass(shot, config)
        if passed is not None:
            ball, t, gap = passed
            out.open.append(
                Finding(
                    item,
                    f"no sensor names a contact of {cue}, yet its path came within {gap:.0f} mm "
                    f"of {ball_name(ball)}",
                    (shot.t0, t),
                )
            )
            return out
        why = f" (played away from touching {balls}: 19.2 note)" if away else ""
        out.fouls.append(Finding(item, f"{cue} touched no object ball{why}", (shot.t0,)))
        return out
    i0, ev0 = first
    after = shot.events[i0 + 1 :]
    out.pocketed = [e.get("ball") for e in after if e["type"] == "pocket"]
    if not sensors.tracker:
        pot = next((e for e in after if e["type"] == "pocket"), None)
        if pot is not None:
            out.satisfied = _pot(item, ev0, pot)
        else:
            out.open.append(
                Finding(item, "which ball hit which cushion needs the tracker", (ev0["t_us"],))
            )
        return out
    scan = _BreakScan(shot, ev0) if shot.is_break else _Item20Scan(shot, ev0, config)
    for ev in after:
        if ev["type"] == "pocket":
            out.satisfied = _pot(item, ev0, ev)
        elif not (ev["type"] in ("cushion", "ball_contact") or _is_centre(ev)):
            continue
        # certain: false -- a crossing neither the curtain nor the tracker settles (fusion)
        elif ev.get("ball", 0) is None or None in ev.get("balls", ()) or ev.get("certain") is False:
            scan.unknown.append(ev)
        else:
            out.satisfied = scan.feed(ev)
        if out.satisfied is not None:
            return out
    out.satisfied = scan.best()
    if out.satisfied is not None:
        return out
    if scan.unknown:
        out.open.append(
            Finding(item, _unsettled(scan.unknown), tuple(e["t_us"] for e in scan.unknown))
        )
    else:
        failure = scan.failure()
        allowed = _allowed_by_paths(shot, config, ev0, after)
        if allowed is None:
            out.fouls.append(failure)
        else:
            clause, extra = allowed
            said = "; ".join(f"{_describe(e)} at {_ms(e['t_us'] - shot.t0)}" for e in extra)
            out.open.append(
                Finding(
                    item,
                    f"{failure.reason}, unless {said}: the tracker's paths allow it and no "
                    f"sensor reported it, and {clause.rule} would then hold",
                    (*failure.evidence, *(e["t_us"] for e in extra)),
                )
            )
    return out


def _allowed_by_paths(
    shot: Shot, config: RulesConfig, contact: Event, after: list[Event]
) -> tuple[Finding, list[Event]] | None:
    """The clause that unreported touches (:func:`unreported`) would complete, and those
    of them it needs; None if none would: then the foul stands."""
    extra = unreported(shot, config, int(contact["t_us"]))
    if not extra:
        return None
    scan = _BreakScan(shot, contact) if shot.is_break else _Item20Scan(shot, contact, config)
    told = [e for e in after if e["type"] in ("cushion", "ball_contact") or _is_centre(e)]
    found = None
    for ev in sorted(told + extra, key=lambda e: int(e["t_us"])):
        found = scan.feed(ev)
        if found is not None:
            break
    found = found or scan.best()
    if found is None:
        return None
    needed = [e for e in extra if e["t_us"] in found.evidence] or extra
    return found, needed


def _unsettled(unknown: list[Event]) -> str:
    """Why item 20 is left open: events the fusion wrote but could not settle (a foul
    called from their absence could be false)."""
    if not all(e.get("certain") is False for e in unknown):
        return "the tracker lost which ball some events belong to"
    what: list[str] = []
    for e in unknown:
        if e["type"] == "cushion":
            said = (
                f"a touch of cushion {e['cushion']} by {ball_name(e['ball'])} at a pocket's "
                "mouth that the tracker cannot settle"
            )
        else:
            said = "a crossing of the centre line neither the curtain nor the tracker can settle"
        if said not in what:
            what.append(said)
    return "; ".join(what)


def _pot(item: str, contact: Event, pot: Event) -> Finding:
    return Finding(
        f"{item}(1)",
        f"{ball_name(pot.get('ball'))} was pocketed in pocket {pot['pocket']} after the first contact",
        (contact["t_us"], pot["t_us"]),
    )


class _Scan:
    """Shared bookkeeping of the events after the first contact."""

    def __init__(self, shot: Shot, contact: Event) -> None:
        self.shot = shot
        self.contact = contact
        self.unknown: list[Event] = []
        self.seen: list[str] = []

    def note(self, ev: Event) -> None:
        said = _describe(ev)
        if said:
            self.seen.append(said)

    def best(self) -> Finding | None:
        """A clause that holds once every event is read (item 20 stops at the first)."""
        return None

    def history(self) -> str:
        """What happened, as a referee recounts it: what came before the first contact
        does not count (note 1), so it is told apart."""
        a, b = self.contact["balls"]
        if b == self.shot.cue_ball:  # the pair is unordered; the cue ball is the one moving
            a, b = b, a
        head = f"after {ball_name(a)} hit {ball_name(b)}"
        told = f"{head}, {', '.join(self.seen)}" if self.seen else f"{head} nothing followed"
        before = []
        for ev in self.shot.events:
            if ev is self.contact:
                break
            before.append(_describe(ev))
        early = ", ".join(filter(None, before))
        return f"before the first contact {early}; {told}" if early else told


def _describe(ev: Event) -> str | None:
    if ev["type"] == "cushion":
        return f"{ball_name(ev['ball'])} hit cushion {ev['cushion']}"
    if ev["type"] == "ball_contact":  # an unordered pair: which one moved is not known here
        a, b = ev["balls"]
        return f"{ball_name(a)} and {ball_name(b)} touched"
    if _is_centre(ev):
        return f"{ball_name(ev['ball'])} crossed the centre line"
    return None


def _is_centre(ev: Event) -> bool:
    return ev["type"] == "line_cross" and ev.get("line") == "centre"


class _BreakScan(_Scan):
    """12.1 (2) and (3): distinct object balls at cushions, an object ball over the centre line.

    12.1 sets no order among its conditions, so the whole shot is read and the
    first condition of the text that holds is named (a pot is found by the caller).
    """

    def __init__(self, shot: Shot, contact: Event) -> None:
        super().__init__(shot, contact)
        self.cushioned: dict[int, int] = {}
        self.crossed: Event | None = None

    def feed(self, ev: Event) -> Finding | None:
        self.note(ev)
        cue = self.shot.cue_ball
        if ev["type"] == "cushion" and ev["ball"] != cue:
            self.cushioned.setdefault(ev["ball"], ev["t_us"])
        elif _is_centre(ev) and ev["ball"] != cue and self.crossed is None:
            self.crossed = ev
        return None

    def best(self) -> Finding | None:
        """(2) before (3); each names the first balls that met it."""
        needed = 3 if len(self.cushioned) >= 3 else 2
        firsts = list(self.cushioned.items())[:needed]
        balls = ", ".join(str(b) for b, _ in firsts)
        times = (self.contact["t_us"], *(t for _, t in firsts))
        if len(self.cushioned) >= 3:
            return Finding("12.1(2)", f"object balls {balls} touched cushions", times)
        if len(self.cushioned) >= 2 and self.crossed is not None:
            return Finding(
                "12.1(3)",
                f"object balls {balls} touched cushions and {ball_name(self.crossed['ball'])} "
                "crossed the centre line",
                (*times, self.crossed["t_us"]),
            )
        return None

    def failure(self) -> Finding:
        return Finding(
            "12.1",
            f"{self.history()}: no pot, too few object balls at cushions",
            (self.contact["t_us"],),
        )


@dataclass
class _Note2:
    """Note 2: the cue ball met ``ball`` resting against ``cushions`` at ``first``."""

    ball: int
    cushions: set[int]
    first: int
    second: int | None = None  # a second, separate collision of the same pair


@dataclass
class _Drive:
    driver: int
    cushions: dict[int, int]  # the driver's cushions before the contact -> t_us
    crossed: int | None  # when the driver crossed the centre line before the contact
    t_us: int


class _Item20Scan(_Scan):
    """Item 20 (2)-(4) and note 2, in the order note 1 demands: each clause's
    first part must come before its second, and both after the first contact."""

    def __init__(self, shot: Shot, contact: Event, config: RulesConfig) -> None:
        super().__init__(shot, contact)
        self.cushions: dict[int, dict[int, int]] = {}
        self.crossed: dict[int, int] = {}
        self.drives: dict[int, list[_Drive]] = {}
        self.resting = resting_against(shot, config)
        a, b = contact["balls"]
        self.cue = shot.cue_ball if shot.cue_ball is not None else a
        # Note 2: each ball resting against a cushion that the cue ball met, first or later.
        self.note2: dict[int, _Note2] = {}
        self.moved: set[int | None] = {shot.cue_ball}
        self._meets_resting(b if a == self.cue else a, int(contact["t_us"]))
        self.moved |= {a, b}
        self.note2_miss: Finding | None = None

    def feed(self, ev: Event) -> Finding | None:
        self.note(ev)
        t = ev["t_us"]
        if ev["type"] == "cushion":
            return self._cushion(ev["ball"], ev["cushion"], t)
        if _is_centre(ev):
            return self._cross(ev["ball"], t)
        if ev["type"] == "ball_contact":
            a, b = ev["balls"]
            return self._contact(a, b, t)
        return None

    def _cushion(self, x: int, c: int, t: int) -> Finding | None:
        """Note 2 first: the cue ball sent on by the ball it hit is that clause, not (2)(b)."""
        if x == self.cue:
            found = self._note2(f"to cushion {c}", t, c)
            if found is not None:
                return found
        return self._cushion_clause(x, c, t)

    def _cushion_clause(self, x: int, c: int, t: int) -> Finding | None:
        mine = self.cushions.setdefault(x, {})
        found = None
        other = _other(mine, c)
        if other is not None:
            found = Finding(
                "20(2)(a)", f"{ball_name(x)} hit cushion {other} then cushion {c}", (mine[other], t)
            )
        elif x in self.crossed:
            found = Finding(
                "20(3)(a)",
                f"{ball_name(x)} crossed the centre line then hit cushion {c}",
                (self.crossed[x], t),
            )
        for drive in self.drives.get(x, ()):
            if found:
                break
            other = _other(drive.cushions, c)
            if other is not None:
                found = Finding(
                    "20(2)(b)",
                    f"{ball_name(drive.driver)} hit cushion {other} then drove {ball_name(x)} to cushion {c}",
                    (drive.cushions[other], drive.t_us, t),
                )
            elif drive.crossed is not None:
                found = Finding(
                    "20(3)(b)",
                    f"{ball_name(drive.driver)} crossed the centre line then drove {ball_name(x)} to cushion {c}",
                    (drive.crossed, drive.t_us, t),
                )
        mine.setdefault(c, t)
        return found

    def _cross(self, x: int, t: int) -> Finding | None:
        if x == self.cue:
            found = self._note2("across the centre line", t)
            if found is not None:
                return found
        found = None
        mine = self.cushions.get(x, {})
        if mine:
            c = next(iter(mine))
            found = Finding(
                "20(4)(a)",
                f"{ball_name(x)} hit cushion {c} then crossed the centre line",
                (mine[c], t),
            )
        for drive in self.drives.get(x, ()):
            if found is None and drive.cushions:
                c = next(iter(drive.cushions))
                found = Finding(
                    "20(4)(b)",
                    f"{ball_name(drive.driver)} hit cushion {c} then rolled {ball_name(x)} across the centre line",
                    (drive.cushions[c], drive.t_us, t),
                )
        self.crossed.setdefault(x, t)
        return found

    def _contact(self, a: int, b: int, t: int) -> Finding | None:
        found = None
        for d, y in ((a, b), (b, a)):
            rest = self.resting.get(y) if y not in self.moved else None
            mine = self.cushions.get(d, {})
            if found is None and rest:
                c1 = next((c for c in mine if rest - {c}), None)
                if c1 is not None:
                    c2 = min(rest - {c1})
                    found = Finding(
                        "20(2)(c)",
                        f"{ball_name(d)} hit cushion {c1} then {ball_name(y)} resting against cushion {c2}",
                        (mine[c1], t),
                    )
                elif d in self.crossed:
                    found = Finding(
                        "20(3)(c)",
                        f"{ball_name(d)} crossed the centre line then hit {ball_name(y)} "
                        f"resting against cushion {min(rest)}",
                        (self.crossed[d], t),
                    )
            self.drives.setdefault(y, []).append(_Drive(d, dict(mine), self.crossed.get(d), t))
        if self.cue in (a, b):
            self._meets_resting(b if a == self.cue else a, t)
        self.moved |= {a, b}
        return found

    def _meets_resting(self, y: int | None, t: int) -> None:
        """The cue ball meets y: a first collision with a ball resting against a cushion
        (note 2), or a second, separate one ("два отдельных соударения"): a contact of
        the same pair at the same t_us is the same collision told twice."""
        seen = self.note2.get(y)  # type: ignore[arg-type]
        if seen is not None:
            if seen.second is None and t != seen.first:
                seen.second = t
        elif y in self.resting and y not in self.moved:
            self.note2[y] = _Note2(y, self.resting[y], t)

    def _note2(self, where: str, t: int, cushion: int | None = None) -> Finding | None:
        """The cue ball reached a cushion (other than the one the ball it met rests
        against) or crossed the centre line, after meeting a resting ball."""
        for met in self.note2.values():
            if cushion in met.cushions:
                continue
            target = met.ball
            head = (
                f"{ball_name(self.cue)} hit {ball_name(target)} resting against cushion "
                f"{min(met.cushions)} and was sent back {where}"
            )
            if met.second is not None:
                return Finding(
                    "20 note 2",
                    f"{head} with two separate collisions",
                    (met.first, met.second, t),
                )
            if target in self.shot.declared or None in self.shot.declared:
                return Finding(
                    "20 note 2", f"{head}, declared frozen before the shot", (met.first, t)
                )
            if self.note2_miss is None:
                self.note2_miss = Finding(
                    "20",
                    f"{head} in a single collision and {ball_name(target)} was not declared frozen",
                    (met.first, t),
                )
        return None

    def failure(self) -> Finding:
        if self.note2_miss is not None:
            return self.note2_miss
        return Finding(
            "20", f"{self.history()} — not in an order item 20 accepts", (self.contact["t_us"],)
        )


def _other(cushions: dict[int, int], c: int) -> int | None:
    return next((k for k in cushions if k != c), None)


def resting_against(shot: Shot, config: RulesConfig) -> dict[int, set[int]]:
    """Balls resting against cushions at the shot's start: reported frozen, within
    ``frozen_gap_mm`` of a nose by the tracker's positions, or declared (DECLARE_FROZEN)
    and within ``near_gap_mm`` of the nearest nose: the declaration settles what the
    tracker cannot resolve, not a ball plainly clear of every cushion."""
    out = frozen_map(shot.start.get("frozen"))
    table = shot.table
    for ball, (x, y) in shot.positions().items():
        nearest = table.cushion_of(x, y)
        gap = table.cushion_gap(nearest, x, y)
        limit = config.near_gap_mm if ball in shot.declared else config.frozen_gap_mm
        if gap <= limit:
            out.setdefault(ball, set()).add(nearest)
    return {b: cs for b, cs in out.items() if cs}
