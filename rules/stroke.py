"""The stroke: 15 and 11.2 (which ball the tip struck), 18 (a double hit), 19.1 (a push)
and 19.2 (a cue ball touching or nearly touching the ball it meets first: the stroke's
angle off the line of centres, read from the balls' momentum after the collision, and
how far the cue ball followed).  Each check returns :class:`~.shot.Finding` values."""

from __future__ import annotations

import math

from .config import RulesConfig, SensorSet
from .shot import (
    Event,
    Finding,
    Outcome,
    Point,
    Shot,
    ball_name,
    ms_text,
    position_at,
    resting_against,
    surface_gap,
)

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
        if ball == cue or surface_gap(pos[cue], xy, shot.ball_mm) > config.frozen_gap_mm:
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
        if other not in (cue, ball) and surface_gap(xy, cue_xy, shot.ball_mm) < config.near_gap_mm:
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


def _shown(value: float, limit: float, below: bool) -> str:
    """``value`` rounded to the fewest decimals (at least one) that keep it on its side
    of ``limit``, so a reason never prints "45.0°" beside a foul for 44.99°."""
    for digits in range(1, 10):
        text = f"{value:.{digits}f}"
        if (float(text) < limit) if below else (float(text) > limit):
            return text
    return repr(value)


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
                f"the tip touched the cue ball {len(tips)} times, again {ms_text(gap)} after the stroke",
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
        b != cue
        and surface_gap(pos[cue], xy, shot.ball_mm) < config.near_gap_mm + config.near_gap_band_mm
        for b, xy in pos.items()
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
                    f"the cue ball met a ball {ms_text(t_c - t0)} after the stroke; only the "
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
    far = Outcome(fouls=[_push_foul(shot, t_c)] if overlap else [])
    gap = math.inf if obj_xy is None else surface_gap(pos[cue], obj_xy, shot.ball_mm)
    if hit is None or obj_xy is None or gap >= config.near_gap_mm + config.near_gap_band_mm:
        _take(out, far)
        return
    near = _as_near(shot, first[0], hit, pos[cue], obj_xy, config)
    if gap < config.near_gap_mm - config.near_gap_band_mm:
        _take(out, near)
        return
    # within the reading's band of near_gap_mm: near or not, decided where both agree
    if not near.open and _rules(near.fouls) == _rules(far.fouls):
        _take(out, near if gap < config.near_gap_mm else far)
        return
    side = (
        f"the cue ball {gap:.1f} mm from {ball_name(hit)}, within the tracker's "
        f"{config.near_gap_band_mm:g} mm of the {config.near_gap_mm:g} mm that makes 19.2's case"
    )
    for taken, given in (("if near", near.fouls + near.open), ("if not", far.fouls)):
        out.open += [Finding(f.rule, f"{side}; {taken}: {f.reason}", f.evidence) for f in given]


def _rules(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def _take(out: Outcome, part: Outcome) -> None:
    """One reading's findings into the shot's."""
    out.fouls += part.fouls
    out.open += part.open
    out.notes += part.notes


def _as_near(
    shot: Shot, index: int, hit: int, cue_xy: Point, obj_xy: Point, config: RulesConfig
) -> Outcome:
    """19.2's findings for a cue ball near ``hit``, its first contact (``shot.events[index]``)."""
    out = Outcome()
    finding = _rule_19_2(shot, index, hit, cue_xy, obj_xy, config)
    if finding is None:
        out.open.append(
            Finding(
                "19.2",
                f"no path of the cue ball to judge the stroke at {ball_name(hit)}",
                (shot.t0,),
            )
        )
    elif finding.rule == STROKE_UNDECIDED:
        out.open.append(Finding("19.2", f"{finding.reason}: the referee decides", finding.evidence))
    elif finding.rule == "19.2":
        out.fouls.append(finding)
    else:
        out.notes.append(finding)
    return out


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
        f"tip still on the cue ball {ms_text(shot.t0 + shot.tip_duration - t_c)} after it hit a ball",
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
    gap = surface_gap(cue_xy, obj_xy, shot.ball_mm)
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
