"""How events and verdicts read on a terminal, for people watching a match."""

from __future__ import annotations

from typing import Any

BALL = {0: "coloured"}


def _ball(b: Any) -> str:
    return "?" if b is None else BALL.get(b, str(b))


def _clock(t_us: int) -> str:
    s = t_us / 1e6
    return f"{int(s // 60):4d}:{s % 60:06.3f}"


def event_text(event: dict[str, Any]) -> str:
    kind = event["type"]
    detail = {
        "shot_start": lambda e: f"shot {e['shot']}: tip on ball {_ball(e.get('cue_ball'))}",
        "cue_contact": lambda e: f"tip contact {e['duration_us']} µs, {e['force_n']:.0f} N",
        "ball_contact": lambda e: "ball {} hits ball {}".format(*map(_ball, e["balls"])),
        "cushion": lambda e: f"ball {_ball(e.get('ball'))} → cushion {e['cushion']}",
        "pocket": lambda e: f"ball {_ball(e.get('ball'))} pocketed ({e['pocket']})",
        "line_cross": lambda e: f"ball {_ball(e.get('ball'))} crosses the {e['line']} line",
        "shot_end": lambda e: (
            f"shot {e['shot']} over" + ("" if e.get("certain", True) else " (estimated)")
        ),
        "keypad": lambda e: f"keypad {e['key']} {e.get('arg', '')}",
        "node_status": lambda e: f"node {e['node']} {e['status']}",
        "boot": lambda e: f"table booted, sensors: {', '.join(e.get('nodes', []))}",
    }.get(kind, lambda e: kind.replace("_", " "))
    return f"{_clock(event['t_us'])}  {detail(event)}"


def line_text(line: dict[str, Any]) -> str:
    when = _clock(line.get("t_us", 0))
    if line.get("kind") != "verdict":
        return f"{when}  NOTICE {' '.join(line.get('rules', []))}: {line.get('reason', '')}"
    who = f"shot {line['shot']}" if line.get("shot") is not None else "between shots"
    rules = " ".join(line.get("rules") or [line.get("satisfied") or ""])
    brk = " (break)" if line.get("break") else ""
    return (
        f"{when}  {who}{brk}, player {line.get('player')}: {line['verdict'].upper()} {rules} "
        f"— {line.get('reason', '')}"
    )
