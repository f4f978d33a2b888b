"""A match as one physical history, and its ground truth as a :class:`MatchTruth`.

Why a timeline: racking, placing the coloured ball, shots, a ball nudged
between shots and a keypad press all happen on one table in one true time,
and the sensor model needs the whole of it.  :class:`Timeline` drives the
event engine (:mod:`.physics`) through those steps and then turns the
engine's elementary events and trajectory segments into EVENTS.md event
dicts (``t_s`` true seconds, see :mod:`.truth`) and a vectorised sampler.

Decisions the spec leaves open (docs/virtual-table-physics.md):

* contacts of the same pair of balls less than ``MERGE_S`` apart are one
  ``ball_contact`` (a triple contact with a cushion rings as one click);
* ``paths`` carry true seconds: ``[t_s, x_mm, y_mm]``; the sensor model maps
  them to hub microseconds like every other ``t_s``;
* ``shot_start.frozen`` and ``rest.frozen`` use the rules' default gap,
  1.5 mm, so truth and engine agree on which ball rests against a cushion.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.catalogue import KEYPAD_CODES
from protocol.geometry import DEFAULT_TABLE, Table

from .physics import (
    DEFAULT_CONFIG,
    EV_BALL,
    EV_CUSHION,
    EV_IMPULSE,
    EV_POCKET,
    G_MM_S2,
    Impulse,
    PhysicsConfig,
    Table2D,
)
from .physics_verdicts import judge_truth
from .truth import MOVING, N_BALLS, MatchTruth

MERGE_S = 0.001
FROZEN_GAP_MM = 1.5
PATH_CHORD_MM = 0.5  # largest gap between a curved path and its polyline

# order of events that share a time: a ball stops, then the shot ends, then the next starts
_ORDER = {
    "_ball_stop": 0,
    "shot_end": 1,
    "shot_start": 2,
    "cue_contact": 3,
    "_ball_start": 4,
    "ball_moved": 4,
}


@dataclass(frozen=True)
class Shot:
    """A stroke as the player makes it.

    ``angle_deg``: direction of the cue, 0 along +x (towards the back
    cushion), 90 along +y.  ``top``: spin given by hitting above or below
    centre, as the ratio of the ball's rolling speed to its speed (0 a stun
    from a centre hit, 1 natural roll, negative a draw).  ``side_rad_s``:
    spin about the vertical.  ``double_hit_ms``: a second tip contact that
    long after the first, adding ``double_hit_mps`` along the cue (item 18).
    ``follow_through``: the cue goes on through the ball (a push drives a
    ball met during the contact); False is a stab that stops at the ball.
    """

    ball: int
    angle_deg: float
    speed_mps: float
    contact_ms: float = 1.5
    top: float = 0.0
    side_rad_s: float = 0.0
    double_hit_ms: float | None = None
    double_hit_mps: float = 0.3
    follow_through: bool = True

    @property
    def direction(self) -> np.ndarray:
        a = math.radians(self.angle_deg)
        return np.array([math.cos(a), math.sin(a)])

    def impulses(self, t_s: float) -> list[Impulse]:
        u = self.direction
        v = u * self.speed_mps * 1000
        first = Impulse(
            t_s,
            self.ball,
            tuple(v),
            tuple(v * self.top),
            self.side_rad_s,
            True,
            self.contact_ms / 1000,
            drive=self.follow_through,
        )
        if self.double_hit_ms is None:
            return [first]
        dv = u * self.double_hit_mps * 1000
        return [
            first,
            Impulse(
                t_s + self.double_hit_ms / 1000,
                self.ball,
                tuple(dv),
                (0.0, 0.0),
                0.0,
                True,
                self.contact_ms / 1000,
                add=True,
            ),
        ]


@dataclass
class _ShotRecord:
    number: int
    t_start: float
    shot: Shot
    player: int
    is_break: bool
    t_end: float | None = None
    interrupted: bool = False

    def as_dict(self) -> dict[str, Any]:
        s = self.shot
        return {
            "shot": self.number,
            "player": self.player,
            "break": self.is_break,
            "ball": s.ball,
            "angle_deg": s.angle_deg,
            "speed_mps": s.speed_mps,
            "contact_ms": s.contact_ms,
            "top": s.top,
            "side_rad_s": s.side_rad_s,
            "double_hit_ms": s.double_hit_ms,
            "follow_through": s.follow_through,
            "t_start_s": self.t_start,
            "t_end_s": self.t_end,
            "interrupted": self.interrupted,
        }


@dataclass
class Timeline:
    """Build a match step by step; :meth:`truth` gives its :class:`MatchTruth`."""

    table: Table = DEFAULT_TABLE
    config: PhysicsConfig = field(default_factory=PhysicsConfig)
    name: str = ""

    def __post_init__(self) -> None:
        self.sim = Table2D(self.table, self.config)
        self.marks: list[dict[str, Any]] = [self._table_event()]
        self.shots: list[_ShotRecord] = []
        self.notices: list[dict[str, Any]] = []
        self.nudges: list[tuple[float, int]] = []

    @property
    def t(self) -> float:
        return self.sim.t

    def _table_event(self) -> dict[str, Any]:
        tb = self.table
        return {
            "type": "boot",
            "t_s": 0.0,
            "shot": None,
            "table": {"length_mm": tb.length_mm, "width_mm": tb.width_mm, "ball_mm": tb.ball_mm},
        }

    # ------------------------------------------------------------ steps
    def wait(self, seconds: float) -> None:
        """Let time pass (the balls keep rolling if they were)."""
        self.sim.run_until(self.t + seconds)

    def place(self, balls: dict[int, tuple[float, float]], every_s: float = 0.0) -> None:
        """Put balls on the table by hand (racking, the coloured ball), one every ``every_s``."""
        for ball, xy in balls.items():
            self.sim.place(self.t + every_s, ball, xy)

    def rack(self, n: int = 15, *, first_ball: int = 1, every_s: float = 0.3) -> None:
        """Rack n white balls (item 8; an incomplete pyramid when n < 15)."""
        self.place(rack_balls(self.table, n, first_ball), every_s)

    def remove(self, ball: int) -> None:
        self.sim.remove(self.t, ball)

    def rest(self) -> None:
        """The table is at rest after balls were moved outside a shot: a ``rest`` event."""
        self.sim.run_until()
        self.marks.append({"type": "rest", "t_s": self.t, "shot": None, **self._layout(self.t)})

    def keypad(self, key: str, arg: int = 0) -> None:
        if key not in KEYPAD_CODES:
            raise ValueError(f"unknown key {key!r}, one of {sorted(KEYPAD_CODES)}")
        self.marks.append({"type": "keypad", "t_s": self.t, "shot": None, "key": key, "arg": arg})

    def strike(self, shot: Shot, *, player: int = 1, is_break: bool = False) -> int:
        """A tip contact now: a new shot (ending any still running: item 14.2)."""
        if self.shots and self.shots[-1].t_end is None:
            self.shots[-1].t_end = self.t
            self.shots[-1].interrupted = True
        rec = _ShotRecord(len(self.shots) + 1, self.t, shot, player, is_break)
        self.shots.append(rec)
        for imp in shot.impulses(self.t):
            self.sim.apply(imp)
        return rec.number

    def settle(self) -> None:
        """Run until every ball stops; that ends the running shot."""
        self.sim.run_until()
        if self.shots and self.shots[-1].t_end is None:
            self.shots[-1].t_end = self.t

    def shot(
        self, shot: Shot, *, pause_s: float = 0.0, player: int = 1, is_break: bool = False
    ) -> int:
        """Wait, strike and play the shot out."""
        self.wait(pause_s)
        number = self.strike(shot, player=player, is_break=is_break)
        self.settle()
        return number

    def nudge(self, ball: int, angle_deg: float, speed_mps: float) -> None:
        """A sleeve or a hand moves a ball: no tip, no ball caused it (item 17)."""
        u = Shot(ball, angle_deg, speed_mps).direction * speed_mps * 1000
        self.nudges.append((self.t, ball))
        self.sim.apply(Impulse(self.t, ball, tuple(u), tuple(u), 0.0, cue=False))

    def notice(self, rules: list[str], reason: str) -> None:
        """A notice the referee should give now (EVENTS.md), e.g. 11.3's warning."""
        self.notices.append({"kind": "notice", "t_s": self.t, "rules": rules, "reason": reason})

    # ------------------------------------------------------------ the truth
    def sampler(self) -> Sampler:
        return Sampler.of(self.sim.segments.rows)

    def _layout(self, t: float, sampler: Sampler | None = None) -> dict[str, Any]:
        """``balls`` and ``frozen`` at time t, as shot_start and rest write them."""
        xy, _, present = (sampler or self.sampler())(np.array([t]))
        balls, frozen = {}, {}
        for b in np.flatnonzero(present[0]):
            x, y = xy[0, b]
            balls[str(b)] = [round(float(x), 1), round(float(y), 1)]
            touching = [
                c
                for c in range(6)
                if self.table.cushion_gap(c, x, y) <= FROZEN_GAP_MM and self.table.on_piece(c, x)
            ]
            if touching:
                frozen[str(b)] = touching
        return {"balls": balls, "frozen": frozen}

    def truth(self, *, tail_s: float = 2.0) -> MatchTruth:
        """Everything that happened so far, as the sensor model's input.

        The verdicts are the ones :func:`judge_truth` reads off the truth
        (the intended ones), with the notices the timeline was given.
        """
        self.settle()
        sampler = self.sampler()
        events = self._derive(sampler)
        duration = max(self.t, max((e["t_s"] for e in events), default=0.0)) + tail_s
        strokes = [r.as_dict() for r in self.shots]
        verdicts = sorted(
            self.notices + judge_truth(events, strokes, self.table), key=lambda v: v["t_s"]
        )
        return MatchTruth(self.table, duration, events, sampler, verdicts, self.name, strokes)

    def _derive(self, sampler: Sampler, t_lo: float = -math.inf) -> list[dict[str, Any]]:
        """EVENTS.md dicts of everything from t_lo on (sampler windowed to match)."""
        events = [m for m in self.marks if m["t_s"] >= t_lo]
        events += [e for e in self._physics_events() if e["t_s"] >= t_lo]
        events += start_stop_events(sampler)
        events += line_events(sampler, self.table)
        events += self._shot_events(sampler, t_lo)
        events.sort(key=lambda e: (e["t_s"], _ORDER.get(e["type"], 5)))
        self._number(events)
        return events

    def judge_last(self) -> dict[str, Any]:
        """The verdict of the shot just played (a random match needs it to know whose turn it is)."""
        rec = self.shots[-1]
        sampler = Sampler.of(self.sim.segments.rows, rec.t_start)
        events = [e for e in self._derive(sampler, rec.t_start) if e["shot"] == rec.number]
        previous = [r.as_dict() for r in self.shots[-2:-1]]
        return judge_truth(events, [*previous, rec.as_dict()], self.table, only_last=True)[-1]

    def _physics_events(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        last_contact: dict[tuple[int, int], float] = {}
        mass = self.config.mass_kg
        for ev in self.sim.events:
            base = {"t_s": ev.t_s, "shot": None}
            if ev.kind == EV_IMPULSE:
                imp = ev.impulse
                assert imp is not None
                if imp.cue:
                    force = (
                        mass * ev.speed_mps / imp.duration_s
                        if not imp.add
                        else mass * float(np.hypot(*imp.v)) / 1000 / imp.duration_s
                    )
                    out.append(
                        {
                            **base,
                            "type": "cue_contact",
                            "ball": ev.ball,
                            "duration_us": round(imp.duration_s * 1e6),
                            "force_n": round(force, 1),
                        }
                    )
                else:
                    out.append({**base, "type": "ball_moved", "ball": ev.ball})
            elif ev.kind == EV_BALL:
                pair = (min(ev.ball, ev.other), max(ev.ball, ev.other))
                previous = last_contact.get(pair)
                last_contact[pair] = ev.t_s
                if previous is not None and ev.t_s - previous < MERGE_S:
                    continue
                out.append(
                    {
                        **base,
                        "type": "ball_contact",
                        "balls": [ev.ball, ev.other],
                        "speed_mps": ev.speed_mps,
                    }
                )
            elif ev.kind == EV_CUSHION:
                out.append(
                    {
                        **base,
                        "type": "cushion",
                        "ball": ev.ball,
                        "cushion": ev.other,
                        "speed_mps": ev.speed_mps,
                    }
                )
            elif ev.kind == EV_POCKET:
                out.append(
                    {
                        **base,
                        "type": "pocket",
                        "ball": ev.ball,
                        "pocket": ev.other,
                        "colour": "coloured" if ev.ball == 0 else "white",
                        "speed_mps": ev.speed_mps,
                    }
                )
        return out

    def _shot_events(self, sampler: Sampler, t_lo: float = -math.inf) -> list[dict[str, Any]]:
        out = []
        for rec in self.shots:
            if rec.t_start < t_lo:
                continue
            assert rec.t_end is not None
            # the layout before the stroke: just before the tip contact
            before = self._layout(math.nextafter(rec.t_start, -math.inf), sampler)
            out.append(
                {
                    "type": "shot_start",
                    "t_s": rec.t_start,
                    "shot": rec.number,
                    "cue_ball": rec.shot.ball,
                    **before,
                }
            )
            after = self._layout(rec.t_end, sampler)
            out.append(
                {
                    "type": "shot_end",
                    "t_s": rec.t_end,
                    "shot": rec.number,
                    "balls": after["balls"],
                    "paths": sampler.paths(rec.t_start, rec.t_end),
                    "interrupted": rec.interrupted,
                    "certain": True,
                }
            )
        return out

    def _number(self, events: list[dict[str, Any]]) -> None:
        """Give every event inside a shot that shot's number; at a 14.2 boundary the new shot wins."""
        starts = [r.t_start for r in self.shots]
        for ev in events:
            if ev["type"] in ("shot_start", "shot_end"):
                continue
            k = bisect.bisect_right(starts, ev["t_s"]) - 1
            end = self.shots[k].t_end if k >= 0 else None
            ev["shot"] = self.shots[k].number if end is not None and ev["t_s"] <= end else None


def rack_balls(table: Table, n: int, first_ball: int = 1) -> dict[int, tuple[float, float]]:
    """Ball number -> place of an n-ball rack (item 8), from the rules' rack."""
    from rules.rack import rack_positions

    return {first_ball + k: xy for k, xy in enumerate(rack_positions(n, table))}


# ---------------------------------------------------------------- sampling and derived events


@dataclass
class Sampler:
    """Positions, states and presence of all balls at any true times (vectorised over t)."""

    t0: list[np.ndarray]  # per ball, segment start times
    rows: list[np.ndarray]  # per ball, (k, 9) segment rows

    @classmethod
    def of(cls, rows: list[list[tuple[float, ...]]], t_lo: float = -math.inf) -> Sampler:
        """From the engine's segment rows; with t_lo only the rows that matter from t_lo on."""
        arrays = []
        for r in rows:
            k = len(r)
            while k > 0 and r[k - 1][0] >= t_lo:
                k -= 1
            arrays.append(np.array(r[max(k - 1, 0) :], dtype=np.float64).reshape(-1, 9))
        return cls([a[:, 0].copy() for a in arrays], arrays)

    def __call__(self, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.asarray(t_s, dtype=np.float64).reshape(-1)
        n = t.shape[0]
        xy = np.zeros((n, N_BALLS, 2))
        state = np.zeros((n, N_BALLS), dtype=np.uint8)
        present = np.zeros((n, N_BALLS), dtype=bool)
        for b in range(N_BALLS):
            if not len(self.t0[b]):
                continue
            idx = np.searchsorted(self.t0[b], t, side="right") - 1
            ok = idx >= 0
            seg = self.rows[b][np.maximum(idx, 0)]
            dt = (t - seg[:, 0])[:, None]
            pos = seg[:, 1:3] + seg[:, 3:5] * dt + 0.5 * seg[:, 5:7] * dt * dt
            xy[:, b] = np.where(ok[:, None], pos, 0.0)
            present[:, b] = ok & (seg[:, 8] > 0)
            state[:, b] = np.where(present[:, b], seg[:, 7], 0).astype(np.uint8)
        return xy, state, present

    def paths(self, t_start: float, t_end: float) -> dict[str, list[list[float]]]:
        """Each ball that moved in [t_start, t_end] as a polyline [t_s, x, y], curves split finely."""
        out: dict[str, list[list[float]]] = {}
        for b in range(N_BALLS):
            rows = self.rows[b]
            if not len(rows):
                continue
            inside = np.flatnonzero((rows[:, 0] >= t_start) & (rows[:, 0] <= t_end))
            lead = np.searchsorted(self.t0[b], t_start, side="right") - 1
            idx = sorted(set(inside.tolist()) | ({int(lead)} if lead >= 0 else set()))
            if not any(rows[i, 7] != 0 for i in idx):
                continue
            pieces = []
            for k, i in enumerate(idx):
                seg = rows[i]
                t1 = rows[idx[k + 1], 0] if k + 1 < len(idx) else t_end
                t = _vertices(seg, max(seg[0], t_start), t1)
                dt = (t - seg[0])[:, None]
                pieces.append(
                    np.column_stack([t, seg[1:3] + seg[3:5] * dt + 0.5 * seg[5:7] * dt * dt])
                )
                if seg[8] == 0:
                    break
            pts = np.concatenate(pieces)
            keep = np.concatenate([[True], np.diff(pts[:, 0]) > 0])
            pts = pts[keep]
            out[str(b)] = np.column_stack([pts[:, 0].round(6), pts[:, 1:].round(1)]).tolist()
        return out


def _vertices(seg: np.ndarray, t0: float, t1: float) -> np.ndarray:
    """Times that keep the polyline of a parabolic piece within PATH_CHORD_MM of it.

    The chord test sees only curvature; a ball that slows to a turn along its own
    line (a drawn cue ball creeping forward off a ball, then coming back) has none,
    so the time of its slowest speed, where it turns, is always a vertex too.
    """
    vx, vy, ax, ay = seg[3], seg[4], seg[5], seg[6]
    speed = math.hypot(vx, vy)
    a_perp = abs(vx * ay - vy * ax) / speed if speed > 0 else 0.0
    span = max(t1 - t0, 0.0)
    n = max(1, math.ceil(span * math.sqrt(a_perp / (8 * PATH_CHORD_MM)))) if a_perp > 0 else 1
    times = t0 + span * np.arange(n + 1) / n
    a2 = ax * ax + ay * ay
    if a2 > 0.0:
        turn = seg[0] - (vx * ax + vy * ay) / a2
        if t0 < turn < t1:
            times = np.sort(np.append(times, turn))
    return times


def start_stop_events(sampler: Sampler) -> list[dict[str, Any]]:
    """``_ball_start``/``_ball_stop`` where a ball's motion (translation or spin) begins or ends."""
    out = []
    for b in range(N_BALLS):
        rows = sampler.rows[b]
        moving = (rows[:, 7] != 0) & (rows[:, 8] > 0)
        was = False
        for t, now in zip(rows[:, 0], moving, strict=True):
            if now != was:
                out.append(
                    {
                        "type": "_ball_start" if now else "_ball_stop",
                        "t_s": float(t),
                        "shot": None,
                        "ball": b,
                    }
                )
                was = bool(now)
    return out


def _crossings(seg: np.ndarray, t1: float, x_line: float) -> list[float]:
    """Times in (t0, t1] at which a piece's x reaches x_line."""
    a, v, x0 = 0.5 * seg[5], seg[3], seg[1] - x_line
    span = t1 - seg[0]
    if a == 0.0:
        roots = [-x0 / v] if v != 0.0 else []
    else:
        disc = v * v - 4 * a * x0
        if disc < 0:
            return []
        sq = math.sqrt(disc)
        roots = sorted(((-v - sq) / (2 * a), (-v + sq) / (2 * a)))
    return [seg[0] + r for r in roots if 0.0 < r <= span]


def line_events(sampler: Sampler, table: Table) -> list[dict[str, Any]]:
    """Centre and house line crossings, and curtain visits that turned back (``_line_touch``).

    A crossing is the centre passing the line (item 9); a touch is the ball
    body entering the curtain (centre within a radius) and leaving on the
    side it came from.
    """
    out: list[dict[str, Any]] = []
    r = table.ball_mm / 2
    for line, x_line in (("centre", table.centre_line_x), ("house", table.house_line_x)):
        for b in range(N_BALLS):
            rows = sampler.rows[b]
            entered_from: str | None = None
            crossed = False
            for k in range(len(rows)):
                seg = rows[k]
                if seg[8] == 0 or seg[7] != MOVING:
                    continue
                t1 = rows[k + 1, 0] if k + 1 < len(rows) else seg[0]
                hits = sorted(
                    (t, lvl) for lvl in (-r, 0.0, r) for t in _crossings(seg, t1, x_line + lvl)
                )
                for t, lvl in hits:
                    t = float(t)
                    dt = t - seg[0]
                    vx = seg[3] + seg[5] * dt
                    side_after = "back" if vx > 0 else "front"
                    if lvl == 0.0:
                        out.append(
                            {
                                "type": "line_cross",
                                "t_s": t,
                                "shot": None,
                                "ball": b,
                                "line": line,
                                "direction": side_after,
                            }
                        )
                        crossed = True
                    elif (lvl < 0) == (vx > 0):  # entering the curtain
                        entered_from, crossed = ("front" if lvl < 0 else "back"), False
                    else:  # leaving it
                        if (
                            entered_from is not None
                            and not crossed
                            and entered_from == ("front" if lvl < 0 else "back")
                        ):
                            out.append(
                                {
                                    "type": "_line_touch",
                                    "t_s": t,
                                    "shot": None,
                                    "ball": b,
                                    "line": line,
                                    "side": entered_from,
                                }
                            )
                        entered_from = None
    return out


def rolling_distance_mm(speed_mps: float, config: PhysicsConfig = DEFAULT_CONFIG) -> float:
    """How far a rolling ball goes before it stops: v^2 / (2 mu g)."""
    v = speed_mps * 1000
    return v * v / (2 * config.mu_roll * G_MM_S2)
