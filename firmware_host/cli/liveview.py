"""How events and verdicts read on a terminal, for people watching a match.

Times are match time, from the match's first frame (the first event the
view is shown, and again after a hub reboot), not the hub's clock, which
counts from its power-on: people read "2:05" as two minutes into the match.

>>> view = LiveView()
>>> view.event({"t_us": 7_000_000, "type": "boot", "shot": None, "nodes": ["hub"]})
'   0:00.000            table booted, sensors: hub'
>>> view.line({"kind": "verdict", "t_us": 9_500_000, "shot": 1, "player": 1,
...            "verdict": "legal", "rules": [], "satisfied": None, "reason": "no foul"})
'   0:02.500  shot 1    player 1: legal (no foul)'
"""

from __future__ import annotations

from typing import Any

from .args import plural

BALL = {0: "coloured"}


def _ball(b: Any) -> str:
    return "?" if b is None else BALL.get(b, str(b))


def _clock(t_us: int) -> str:
    s = max(t_us, 0) / 1e6
    return f"{int(s // 60):4d}:{s % 60:06.3f}"


EVENT_TEXT = {
    "shot_start": lambda e: f"stroke: tip on ball {_ball(e.get('cue_ball'))}",
    "cue_contact": lambda e: f"tip contact {e['duration_us']} µs, {e['force_n']:.0f} N",
    "ball_contact": lambda e: "ball {} hits ball {}".format(*map(_ball, e["balls"])),
    "cushion": lambda e: f"ball {_ball(e.get('ball'))} → cushion {e['cushion']}",
    "pocket": lambda e: f"ball {_ball(e.get('ball'))} pocketed ({e['pocket']})",
    "line_cross": lambda e: f"ball {_ball(e.get('ball'))} crosses the {e['line']} line",
    "shot_end": lambda e: "balls at rest" + ("" if e.get("certain", True) else " (estimated)"),
    "keypad": lambda e: f"keypad {e['key']} {e.get('arg', '')}".rstrip(),
    "node_status": lambda e: f"node {e['node']} {e['status']}",
    "boot": lambda e: f"table booted, sensors: {', '.join(e.get('nodes', []))}",
}


def verdict_text(line: dict[str, Any]) -> str:
    """``foul 18``, ``referee's call on 12.1, 19.1``, ``legal, 20(1) met``, ``legal``."""
    rules = ", ".join(line.get("rules") or [])
    kind = line["verdict"]
    if kind == "legal":
        clause = line.get("satisfied")
        return f"legal, {clause} met" if clause else "legal"
    if kind == "referee":
        return f"referee's call on {rules}" if rules else "referee's call"
    return f"{kind} {rules}".rstrip()


class LiveView:
    """Events and verdict lines as text, timed from the match's first frame."""

    def __init__(self) -> None:
        self._origin_us: int | None = None

    def _head(self, t_us: int, shot: Any) -> str:
        if self._origin_us is None:
            self._origin_us = t_us
        where = f"shot {shot:<3}" if shot is not None else ""
        return f"{_clock(t_us - self._origin_us)}  {where:<8}"

    def event(self, event: dict[str, Any]) -> str:
        if event["type"] == "boot":  # a (re)boot: the hub's clock restarts, and so does the match
            self._origin_us = None
        kind = event["type"]
        detail = EVENT_TEXT.get(kind, lambda e: kind.replace("_", " "))(event)
        return f"{self._head(event['t_us'], event.get('shot'))}  {detail}"

    def line(self, line: dict[str, Any]) -> str:
        head = self._head(line.get("t_us", 0), line.get("shot"))
        reason = f" ({line['reason']})" if line.get("reason") else ""
        if line.get("kind") != "verdict":
            return f"{head}  NOTICE {' '.join(line.get('rules', []))}{reason}"
        who = [f"player {line['player']}"] if line.get("player") is not None else []
        who = ", ".join(["break"] * bool(line.get("break")) + who) or "between shots"
        return f"{head}  {who}: {verdict_text(line)}{reason}"


def summary_text(verdicts: int, events: int, nbytes: int) -> str:
    """``1 verdict, 8 events from 41867 bytes``."""
    return f"{plural(verdicts, 'verdict')}, {plural(events, 'event')} from {plural(nbytes, 'byte')}"
