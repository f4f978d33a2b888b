"""The intended verdict of a shot, read off the ground truth.

Why a second referee beside ``rules/``: the virtual table must say what the
*right* answer is, from perfect knowledge (true times, true balls, the
stroke's real direction), so the engine can be measured against it.  It
applies RULES.md's interpretation to truth events; the scenario library
uses it to check that a designed shot really shows the intended situation,
and random matches take their verdicts from it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from protocol.geometry import Table

NEAR_GAP_MM = 10.0  # rules' default: "so close that a triple contact can hardly be avoided"
FOLLOW_MM = 5.0  # 19.2(2) "не прошел вперед": forward travel after the collision beyond this fails
ANGLE_TOL_DEG = 1e-6  # 19.2(1) "не менее 45 градусов": 45° (to float noise) is legal
LENGTH_TOL_MM = 1e-6
# without the stroke's angle: how far the cue ball goes before its direction is read
PATH_TOL_MM = 2.0


@dataclass
class Judgement:
    """Fouls found, items left open, and the clauses that made the shot's result legal, in
    the order they happened.  ``open``: only a shot a new stroke cut short (14.2) has any:
    its result, when no clause was completed and no foul was certain before the cut."""

    fouls: list[str] = field(default_factory=list)
    satisfied: list[str] = field(default_factory=list)
    evidence_s: list[float] = field(default_factory=list)  # times of the events it rests on
    open: list[str] = field(default_factory=list)

    def foul(self, rule: str, *times: float) -> None:
        self.fouls.append(rule)
        self.evidence_s += times

    @property
    def verdict(self) -> str:
        return "foul" if self.fouls else "referee" if self.open else "legal"

    @property
    def rules(self) -> list[str]:
        """The verdict's ``rules``: the fouls, or for ``referee`` the items left open."""
        return sorted(set(self.fouls)) if self.fouls else sorted(set(self.open))


def _xy(raw: dict[str, Any], ball: int) -> tuple[float, float] | None:
    xy = raw.get(str(ball))
    return (xy[0], xy[1]) if xy is not None else None


def judge_shot(
    events: list[dict[str, Any]],
    table: Table,
    *,
    is_break: bool,
    stroke_deg: float | None = None,
    declared: frozenset[int] = frozenset(),
    interrupted_previous: bool = False,
    cut_short: bool = False,
) -> Judgement:
    """Judge one shot from its events (``shot_start`` first, ``shot_end`` last), all of one shot.

    ``cut_short``: a new stroke ended this shot before every ball stopped (14.2);
    it is judged on its events until then, and a result not yet met is open.
    """
    out = Judgement()
    start = events[0]
    cue = start["cue_ball"]
    balls: dict[str, Any] = start["balls"]
    frozen = {int(b): set(c) for b, c in start["frozen"].items()}
    tips = [e for e in events if e["type"] == "cue_contact"]
    t0 = tips[0]["t_s"]
    result = "12.1" if is_break else "20"
    if interrupted_previous:
        out.foul("14.2", t0)
    if is_break and cue != 0:
        out.foul("11.2", t0)  # the coloured ball is always the break's cue ball
    if is_break and cue == 0 and not table.in_house(balls["0"][0]):
        out.foul("11.3", t0)
    if len(tips) > 1:
        out.foul("18", *(e["t_s"] for e in tips))
    for moved in (e for e in events if e["type"] == "ball_moved"):
        out.foul("17", moved["t_s"])
    # A stroke away from a touching ball leaves it unmoved and the physics reports no
    # contact with it (19.2's note); a stroke into one, pinned or not, is a contact.
    first = next((e for e in events if e["type"] == "ball_contact" and cue in e["balls"]), None)
    if first is None:
        _result_fails(out, result, cut_short, t0)
        return out
    target = first["balls"][1] if first["balls"][0] == cue else first["balls"][0]
    _stroke(out, tips[0], first, cue, target, events, table, stroke_deg)
    # strictly after the first contact, though a rack's contacts share its time
    after = events[events.index(first) + 1 :]
    met = (
        _break_clause(after, cue)
        if is_break
        else _item20(after, cue, target, frozen, frozenset(declared))
    )
    if met:
        out.satisfied += [clause for clause, _ in met]
        if not out.fouls:
            out.evidence_s += [first["t_s"], met[0][1]]
    else:
        _result_fails(out, result, cut_short, first["t_s"])
    return out


def _result_fails(out: Judgement, item: str, cut_short: bool, t_s: float) -> None:
    """No clause of the result met: a foul, or open on a shot cut short (14.2): its balls
    still rolled when the next stroke came, so its outcome was never played out."""
    if cut_short:
        out.open.append(item)
        out.evidence_s.append(t_s)
    else:
        out.foul(item, t_s)


def _angle_deg(ux: float, uy: float, vx: float, vy: float) -> float:
    """Angle between two unit vectors."""
    return math.degrees(math.acos(max(-1.0, min(1.0, ux * vx + uy * vy))))


def _at(path: list[list[float]], t: float) -> tuple[float, float]:
    """The position on a path polyline ``[[t_s, x, y], ...]`` at ``t``, clamped to its ends."""
    if t <= path[0][0]:
        return path[0][1], path[0][2]
    for (ta, xa, ya), (tb, xb, yb) in itertools.pairwise(path):
        if t <= tb:
            f = (t - ta) / (tb - ta) if tb > ta else 1.0
            return xa + f * (xb - xa), ya + f * (yb - ya)
    return path[-1][1], path[-1][2]


def _stroke(
    out: Judgement,
    tip: dict,
    first: dict,
    cue: int,
    target: int,
    events: list[dict],
    table: Table,
    stroke_deg: float | None,
) -> None:
    """Items 19.1 and 19.2, judged on the ball the cue ball first contacts.

    Near (gap under ``NEAR_GAP_MM``: touching or so close that a triple contact
    can hardly be avoided), 19.2 alone decides, whatever the tip contact's
    duration: legal if (1) the stroke -- the cue's real direction -- is at least
    45° off the line of centres, or (2) the cue ball, after the collision, goes
    no more than ``FOLLOW_MM`` forward along the line of centres; otherwise foul.
    Not near, the tip still on the cue ball at the contact is a push (19.1).
    """
    balls = events[0]["balls"]
    cue_xy, obj_xy = _xy(balls, cue), _xy(balls, target)
    # a ball put back on the cloth during the shot (bench/busy.py's table) was not there at the
    # stroke: not near
    dist = math.inf if cue_xy is None or obj_xy is None else math.dist(cue_xy, obj_xy)
    if dist - table.ball_mm >= NEAR_GAP_MM:
        if first["t_s"] <= tip["t_s"] + tip["duration_us"] / 1e6:
            out.foul("19.1", tip["t_s"], first["t_s"])
        return
    ux, uy = (obj_xy[0] - cue_xy[0]) / dist, (obj_xy[1] - cue_xy[1]) / dist
    path = events[-1].get("paths", {}).get(str(cue), [])
    if stroke_deg is not None:
        off = _angle_deg(
            math.cos(math.radians(stroke_deg)), math.sin(math.radians(stroke_deg)), ux, uy
        )
    else:
        off = _path_direction(path, cue_xy, ux, uy)
    if off >= 45.0 - ANGLE_TOL_DEG:
        return  # 19.2(1)
    if _forward_mm(path, events, first, cue, target, ux, uy) <= FOLLOW_MM + LENGTH_TOL_MM:
        return  # 19.2(2)
    out.foul("19.2", tip["t_s"], first["t_s"])


def _path_direction(
    path: list[list[float]], cue_xy: tuple[float, float], ux: float, uy: float
) -> float:
    """Without the stroke's angle: the cue ball's initial direction off the line of centres."""
    lead = next((p for p in path[1:] if math.dist(cue_xy, (p[1], p[2])) > PATH_TOL_MM), None)
    if lead is None:
        return 0.0
    dx, dy = lead[1] - cue_xy[0], lead[2] - cue_xy[1]
    norm = math.hypot(dx, dy)
    return _angle_deg(dx / norm, dy / norm, ux, uy)


def _forward_mm(
    path: list[list[float]],
    events: list[dict],
    first: dict,
    cue: int,
    target: int,
    ux: float,
    uy: float,
) -> float:
    """19.2(2): how far the cue ball went forward along the line of centres after the
    collision, from where it met the ball, while the stroke and that collision alone
    moved it: until its next cushion, pocket or contact with another ball (a cue ball
    drawn back to a cushion and rolling forward off it has not followed the ball)."""
    if not path:
        return 0.0
    t_c = first["t_s"]
    t_until = next(
        (
            e["t_s"]
            for e in events
            if e["t_s"] > t_c
            and (
                e["type"] in ("cushion", "pocket")
                and e["ball"] == cue
                or e["type"] == "ball_contact"
                and cue in e["balls"]
                and target not in e["balls"]
            )
        ),
        math.inf,
    )
    met = _at(path, t_c)
    points = [met, *((x, y) for t, x, y in path if t_c < t < t_until)]
    if t_until < math.inf:
        points.append(_at(path, t_until))
    return max((x - met[0]) * ux + (y - met[1]) * uy for x, y in points)


def _break_clause(after: list[dict], cue: int) -> list[tuple[str, float]]:
    """12.1: a pot; else three object balls at cushions; else two and a centre-line crossing.

    Returns the clause met (at most one) and the time it was completed.
    """
    pot = next((e["t_s"] for e in after if e["type"] == "pocket"), None)
    if pot is not None:
        return [("12.1(1)", pot)]
    cushioned: dict[int, float] = {}
    for e in after:
        if e["type"] == "cushion" and e["ball"] != cue:
            cushioned.setdefault(e["ball"], e["t_s"])
    times = sorted(cushioned.values())
    if len(times) >= 3:
        return [("12.1(2)", times[2])]
    crossed = [
        e["t_s"]
        for e in after
        if e["type"] == "line_cross" and e["line"] == "centre" and e["ball"] != cue
    ]
    if len(times) == 2 and crossed:
        return [("12.1(3)", max(times[1], crossed[0]))]
    return []


@dataclass
class _Ball:
    cushions: list[int] = field(default_factory=list)  # rebounds after the first contact, in order
    crossed: bool = False
    driven: list[tuple[int, tuple[int, ...], bool]] = field(default_factory=list)
    # contacts received: (driver, the driver's rebounds before the contact, it had crossed)


def _item20(
    after: list[dict], cue: int, target: int, frozen: dict[int, set[int]], declared: frozenset[int]
) -> list[tuple[str, float]]:
    """Item 20 (1)-(4) in the order note 1 demands, and note 2; the clauses met, in time order.

    Note 2: the cue ball meets a ball resting against a cushion (or declared to
    be) before that ball has moved -- its first contact or a later one, the text
    does not say "first" -- and that ball sends it on.  With a separate second
    contact (the truth merges contacts of a pair less than 1 ms apart, so any
    later ``ball_contact`` of the pair is one) the ordinary (2)(b)/(3)(b)/(4)(b)
    chain shows it and it is labelled note 2; in one contact only a declaration
    makes the cue ball's next cushion (other than that ball's) or crossing count.
    """
    resting_balls = set(frozen) | set(declared)
    met: set[int] = {target} & resting_balls  # note 2's balls: resting when the cue ball met them
    moved = {cue, target}  # a ball that has moved no longer rests against its cushion
    state: dict[int, _Ball] = {}
    found: list[tuple[str, float]] = []

    def ball(b: int) -> _Ball:
        return state.setdefault(b, _Ball())

    def chain(driver: int, x: int, plain: str) -> str:
        return "20 note 2" if driver in met and x == cue else plain

    def declared_on(cushion: int | None = None) -> bool:
        """The cue ball, after one contact with a declared ball, reaches a cushion that ball
        does not rest against, or crosses (``cushion`` None)."""
        return any(o in declared and cushion not in frozen.get(o, set()) for o in met)

    for ev in after:
        kind = ev["type"]
        if kind == "pocket":
            found.append(("20(1)", ev["t_s"]))
        elif kind == "cushion":
            x, c = ev["ball"], ev["cushion"]
            bx = ball(x)
            if any(c0 != c for c0 in bx.cushions):
                found.append(("20(2)(a)", ev["t_s"]))
            if bx.crossed:
                found.append(("20(3)(a)", ev["t_s"]))
            for driver, d_cush, d_crossed in bx.driven:
                if any(c0 != c for c0 in d_cush):
                    found.append((chain(driver, x, "20(2)(b)"), ev["t_s"]))
                if d_crossed:
                    found.append((chain(driver, x, "20(3)(b)"), ev["t_s"]))
            if x == cue and declared_on(c):
                found.append(("20 note 2", ev["t_s"]))
            bx.cushions.append(c)
        elif kind == "ball_contact":
            a, b = ev["balls"]
            for x, y in ((a, b), (b, a)):
                bx = ball(x)
                resting = frozen.get(y, set()) if y not in moved else set()  # still against it
                if any(c0 != c for c in resting for c0 in bx.cushions):
                    found.append(("20(2)(c)", ev["t_s"]))
                if bx.crossed and resting:
                    found.append(("20(3)(c)", ev["t_s"]))
                ball(y).driven.append((x, tuple(bx.cushions), bx.crossed))
                if x == cue and y in resting_balls and y not in moved:
                    met.add(y)
            moved.update((a, b))
        elif kind == "line_cross" and ev["line"] == "centre":
            x = ev["ball"]
            bx = ball(x)
            if bx.cushions:
                found.append(("20(4)(a)", ev["t_s"]))
            for driver, d_cush, _ in bx.driven:
                if d_cush:
                    found.append((chain(driver, x, "20(4)(b)"), ev["t_s"]))
            if x == cue and declared_on():
                found.append(("20 note 2", ev["t_s"]))
            bx.crossed = True
    return found


def judge_truth(
    truth_events: list[dict[str, Any]],
    strokes: list[dict[str, Any]],
    table: Table,
    *,
    only_last: bool = False,
) -> list[dict[str, Any]]:
    """Verdict dicts (EVENTS.md shape, ``t_s`` for ``t_us``) for the shots of a truth.

    ``strokes`` are :attr:`MatchTruth.strokes`.  A ball moved outside any
    shot is a foul of item 17 with ``shot`` null.  ``only_last``: judge the
    last stroke only (the events hold just that shot).
    """
    by_shot: dict[int, list[dict[str, Any]]] = {}
    declared: dict[int, set[int]] = {}
    pending: set[int] = set()
    touched: list[float] = []  # balls moved between shots (item 17)
    for ev in truth_events:
        if ev["type"] == "keypad" and ev["key"] == "declare_frozen":
            pending.add(ev["arg"])
        if ev["shot"] is None:
            if ev["type"] == "ball_moved":
                touched.append(ev["t_s"])
            continue
        if ev["type"] == "shot_start":
            declared[ev["shot"]], pending = _declared(pending, ev), set()
        by_shot.setdefault(ev["shot"], []).append(ev)
    out: list[dict[str, Any]] = []
    for k, rec in enumerate(strokes):
        if only_last and k < len(strokes) - 1:
            continue
        j = judge_shot(
            by_shot[rec["shot"]],
            table,
            is_break=rec["break"],
            stroke_deg=rec["angle_deg"],
            declared=frozenset(declared.get(rec["shot"], ())),
            interrupted_previous=k > 0 and strokes[k - 1]["interrupted"],
            cut_short=rec["interrupted"],
        )
        verdict: dict[str, Any] = {
            "kind": "verdict",
            "shot": rec["shot"],
            "player": rec["player"],
            "t_s": rec["t_end_s"],
            "break": rec["break"],
            "verdict": j.verdict,
            "rules": j.rules,
            "evidence_s": sorted(set(j.evidence_s)),
        }
        if j.verdict == "legal":
            verdict["satisfied"] = j.satisfied[0]
        out.append(verdict)
    for t in touched:
        out.append(
            {
                "kind": "verdict",
                "shot": None,
                "player": _to_play(out, by_shot, t),
                "t_s": t,
                "break": False,
                "verdict": "foul",
                "rules": ["17"],
                "evidence_s": [t],
            }
        )
    out.sort(key=lambda v: v["t_s"])
    return out


def _to_play(
    verdicts: list[dict[str, Any]], by_shot: dict[int, list[dict[str, Any]]], t_s: float
) -> int:
    """Whose turn it is at t_s: a legal pot keeps the table, anything else passes it."""
    done = [v for v in verdicts if v["shot"] is not None and v["t_s"] <= t_s]
    if not done:
        return 1
    last = done[-1]
    potted = any(e["type"] == "pocket" for e in by_shot[last["shot"]])
    return last["player"] if last["verdict"] == "legal" and potted else 3 - last["player"]


def _declared(pending: set[int], start: dict[str, Any]) -> set[int]:
    """DECLARE_FROZEN args as ball numbers; 255 is the ball nearest the cue ball."""
    balls = {int(b): xy for b, xy in start["balls"].items()}
    cue_xy = balls.get(start["cue_ball"])
    out = {a for a in pending if a != 255}
    if 255 in pending and cue_xy is not None:
        others = [b for b in balls if b != start["cue_ball"]]
        if others:
            out.add(min(others, key=lambda b: math.dist(balls[b], cue_xy)))
    return out
