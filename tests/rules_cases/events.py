"""Event lists for the rules tests, written the way a referee tells a shot.

``Match().shot().hit(0, 7).cushion(7, 1).cushion(7, 3).end()`` is a
boot, a stroke on the coloured ball, its contact with ball 7 and ball 7's
two cushions, each 10 ms after the last.  :func:`seen_by` turns the full
sensor set's events into what a smaller set would report, so one shot can
be replayed on every set.
"""

from __future__ import annotations

import copy
from typing import Any

from protocol.geometry import DEFAULT_TABLE
from rules.config import MIDDLE_NODES, MINIMUM_NODES, SENSOR_NODES, RulesConfig
from rules.rack import rack_positions
from rules.referee import Referee

FULL = SENSOR_NODES
MIDDLE = MIDDLE_NODES
MINIMUM = MINIMUM_NODES
STEP = 10_000  # µs between elementary events unless told
TABLE = DEFAULT_TABLE
L, W, D = TABLE.length_mm, TABLE.width_mm, TABLE.ball_mm

Event = dict[str, Any]


def racked(
    n: int = 15, cue_xy: tuple[float, float] = (500.0, W / 2)
) -> dict[int, tuple[float, float]]:
    """A layout: the coloured ball at ``cue_xy`` and white balls 1..n on the rack."""
    return {0: cue_xy} | {i + 1: xy for i, xy in enumerate(rack_positions(n, TABLE))}


class Match:
    """A builder of ordered events; every method appends one event and returns the builder."""

    def __init__(self, nodes: tuple[str, ...] = FULL, t_us: int = 1_000_000) -> None:
        self.t = t_us
        self.number = 0
        self.current: int | None = None
        self.events: list[Event] = [
            {
                "t_us": t_us,
                "type": "boot",
                "shot": None,
                "boot_id": 1,
                "nodes": list(nodes),
                "table": {"length_mm": L, "width_mm": W, "ball_mm": D},
            }
        ]

    def add(self, type_: str, dt: int = STEP, **keys: Any) -> Match:
        self.t += dt
        self.events.append({"t_us": self.t, "type": type_, "shot": self.current, **keys})
        return self

    def broken(self) -> Match:
        """A legal break (a pot after the first contact), so the next shot is an ordinary one."""
        return self.shot().hit(0, 1).pot(5, 2).end()

    def shot(
        self,
        cue: int | None = 0,
        balls: dict[int, tuple[float, float]] | None = None,
        frozen: dict[int, list[int]] | None = None,
        duration_us: int = 1000,
        dt: int = 1_000_000,
    ) -> Match:
        self.number += 1
        self.current = self.number
        self.add(
            "shot_start",
            dt,
            cue_ball=cue,
            balls={str(b): list(xy) for b, xy in (balls or {}).items()},
            frozen={str(b): cs for b, cs in (frozen or {}).items()},
        )
        return self.add("cue_contact", 0, duration_us=duration_us, force_n=20.0)

    def tip(self, duration_us: int = 1000, dt: int = 5000) -> Match:
        return self.add("cue_contact", dt, duration_us=duration_us, force_n=5.0)

    def hit(self, a: int, b: int, dt: int = STEP) -> Match:
        return self.add("ball_contact", dt, balls=[a, b])

    def cushion(self, ball: int, cushion: int, dt: int = STEP) -> Match:
        return self.add("cushion", dt, ball=ball, cushion=cushion)

    def pot(self, ball: int, pocket: int, dt: int = STEP) -> Match:
        return self.add(
            "pocket", dt, ball=ball, pocket=pocket, colour="coloured" if ball == 0 else "white"
        )

    def cross(self, ball: int, line: str = "centre", dt: int = STEP) -> Match:
        return self.add("line_cross", dt, ball=ball, line=line, direction="back")

    def moved(self, ball: int, dt: int = STEP) -> Match:
        return self.add("ball_moved", dt, ball=ball)

    def key(self, key: str, arg: int = 0, dt: int = STEP) -> Match:
        return self.add("keypad", dt, key=key, arg=arg)

    def rest(self, balls: dict[int, tuple[float, float]], dt: int = 100_000) -> Match:
        return self.add("rest", dt, balls={str(b): list(xy) for b, xy in balls.items()}, frozen={})

    def end(
        self,
        paths: dict[int, list[tuple[int, float, float]]] | None = None,
        interrupted: bool = False,
        dt: int = 500_000,
        certain: bool = True,
    ) -> Match:
        self.add(
            "shot_end",
            dt,
            balls={},
            certain=certain,
            interrupted=interrupted,
            paths={str(b): [list(p) for p in pts] for b, pts in (paths or {}).items()},
        )
        self.current = None
        return self

    def since_stroke(self, dt: int) -> int:
        """The t_us ``dt`` after the current shot's stroke, for paths."""
        start = next(e for e in reversed(self.events) if e["type"] == "shot_start")
        return start["t_us"] + dt


def seen_by(events: list[Event], nodes: tuple[str, ...]) -> list[Event]:
    """The same match as a smaller sensor set reports it (RULES.md, EVENTS.md)."""
    tracker = "tracker" in nodes
    contacts = tracker or "acoustic" in nodes
    lines = tracker or "lines" in nodes
    out = []
    for ev in copy.deepcopy(events):
        kind = ev["type"]
        if kind == "boot":
            ev["nodes"] = list(nodes)
        elif tracker:
            pass
        elif (
            kind in ("rest", "ball_moved")
            or (kind == "ball_contact" and not contacts)
            or kind == "line_cross"
            and not lines
        ):
            continue
        elif kind == "shot_start":
            ev.update(cue_ball=None, balls={}, frozen={})
        elif kind == "shot_end":
            ev.update(balls={}, paths={}, certain=False)
        elif kind == "ball_contact":
            ev["balls"] = [None, None]
        elif "ball" in ev:
            ev["ball"] = None
        out.append(ev)
    return out


def judge(events: list[Event], config: RulesConfig | None = None) -> list[Event]:
    referee = Referee(config=config or RulesConfig())
    lines = [line for ev in events for line in referee.feed(ev)]
    return lines + referee.finish()


def verdicts(events: list[Event], config: RulesConfig | None = None) -> list[Event]:
    return [line for line in judge(events, config) if line["kind"] == "verdict"]


def last(match: Match, config: RulesConfig | None = None) -> Event:
    """The last verdict of a match."""
    return verdicts(match.events, config)[-1]
