"""A match as one self-contained HTML file: every shot's picture, events, verdict and rule.

The report is for the referee's dispute and the club's archive: it opens
with no network (no script, no font, no stylesheet from elsewhere: the
pictures are inline SVG, the style is in the file).  It holds the match
frame by frame: each shot's picture (:mod:`.plot`), its events, its verdict
with each rule cited in English and in the Russian original
(:mod:`.rules_text`), and the match state after it; then the lamp's
timeline and the link's health.  The match state is read by feeding the
replay's events to a fresh referee, as the pipeline does, and looking at it
after each verdict.
"""

from __future__ import annotations

import copy
import html
from collections.abc import Callable
from typing import Any

from rules import Referee, RulesConfig, indicator_for

from .plot import VERDICT_WORDS, draw, inline_svg
from .rules_text import cite
from .shots import ShotView, shots_of
from .words import describe

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 1em;
       color: #222; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-top: 2px solid #1f6b3a; padding-top: .5em; }
.verdict { font-weight: 600; font-size: 1.1em; }
.legal { color: #1f6b3a; } .foul { color: #b00020; } .referee { color: #9a6700; }
.picture svg { width: 100%; height: auto; }
table { border-collapse: collapse; } td, th { padding: .15em .6em; border-bottom: 1px solid #ddd;
       text-align: left; vertical-align: top; }
.rule { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; font-size: .9em; }
.rule p { white-space: pre-line; margin: .3em 0; } pre { font-size: .85em; }
@media (max-width: 800px) { .rule { grid-template-columns: 1fr; } }
"""


def _states(events: list[dict[str, Any]], rules: RulesConfig) -> dict[int, Any]:
    """The match state after each shot's final verdict, by shot number."""
    referee = Referee(config=rules)
    after: dict[int, Any] = {}
    for ev in events:
        for line in referee.feed(ev):
            if line.get("kind") == "verdict" and line.get("shot") and not line.get("early"):
                after[line["shot"]] = copy.deepcopy(referee.state)
    return after


def _state_html(state: Any) -> str:
    if state is None:
        return ""
    pocketed = ", ".join(f"player {p}: {len(b)}" for p, b in sorted(state.pocketed.items()))
    return (
        f"<p class=state>After this shot: frame {state.frame}, player {state.to_play} to play; "
        f"balls pocketed this frame {pocketed}</p>"
    )


def _rules_html(verdict: dict[str, Any]) -> str:
    named = list(verdict.get("rules") or ())
    if verdict.get("satisfied"):
        named.append(verdict["satisfied"])
    parts = []
    for rule in dict.fromkeys(named):
        en, ru = cite(rule)
        parts.append(
            f"<div class=rule><div><b>{html.escape(rule)}</b><p>{html.escape(en)}</p></div>"
            f"<div lang=ru><b>{html.escape(rule)}</b><p>{html.escape(ru)}</p></div></div>"
        )
    return "".join(parts)


def _shot_html(view: ShotView, state: Any) -> str:
    v = view.verdict or {"verdict": "none", "reason": "no verdict"}
    rule = v.get("satisfied") if v["verdict"] == "legal" else ", ".join(v.get("rules") or ())
    words = VERDICT_WORDS.get(v["verdict"], v["verdict"])
    events = "\n".join(describe(e, view) for e in view.events)
    player = f", player {v['player']}" if v.get("player") else ""
    return (
        f"<section class=shot id=shot-{view.number}><h2>Shot {view.number}{player}</h2>"
        f"<p class='verdict {html.escape(v['verdict'])}'>{words} {html.escape(rule or '')} — "
        f"{html.escape(v.get('reason', ''))}</p>"
        # the verdict is said once, above: the picture without its title
        f"<div class=picture>{inline_svg(draw(view, title=False))}</div>"
        f"{_rules_html(v) if view.verdict else ''}"
        f"<details><summary>{len(view.events)} events</summary><pre>{html.escape(events)}</pre>"
        f"</details>{_state_html(state)}</section>"
    )


def _lamp_html(lines: list[dict[str, Any]]) -> str:
    rows = []
    for line in lines:
        lamp = indicator_for(line)
        if lamp is not None and not line.get("early"):
            shot = line.get("shot") or "—"
            rows.append(
                f"<tr><td>{line['t_us'] / 1e6:.3f} s</td><td>{shot}</td>"
                f"<td>{html.escape(lamp.state)}</td><td>{html.escape(str(lamp.rule or ''))}</td></tr>"
            )
    head = "<tr><th>hub time</th><th>shot</th><th>lamp</th><th>rule</th></tr>"
    return f"<h2>The lamp</h2><table>{head}{''.join(rows)}</table>"


def _health_html(stats: Any, losses: dict[str, int]) -> str:
    bad = ", ".join(f"{k} {v}" for k, v in stats.bad.items()) or "none"
    lost = ", ".join(f"node {k}: {v}" for k, v in stats.lost.items()) or "none"
    dropped = ", ".join(f"{k} {v}" for k, v in losses.items()) or "none"
    return (
        "<h2>The link</h2><table>"
        f"<tr><td>frames</td><td>{stats.frames}</td></tr>"
        f"<tr><td>bad frames</td><td>{html.escape(bad)}</td></tr>"
        f"<tr><td>lost frames</td><td>{html.escape(lost)}</td></tr>"
        f"<tr><td>retransmissions</td><td>{stats.duplicates}</td></tr>"
        f"<tr><td>hub reboots</td><td>{stats.reboots}</td></tr>"
        f"<tr><td>timing and fusion dropped</td><td>{html.escape(dropped)}</td></tr></table>"
    )


def report(
    name: str,
    events: list[dict[str, Any]],
    lines: list[dict[str, Any]],
    stats: Any,
    losses: dict[str, int],
    rules: RulesConfig | None = None,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> str:
    """The whole HTML page; ``progress(done, total)`` after each shot drawn."""
    shots = shots_of(events, lines)
    states = _states(events, rules or RulesConfig())
    counts: dict[str, int] = {}
    for view in shots.values():
        verdict = (view.verdict or {}).get("verdict", "none")
        counts[verdict] = counts.get(verdict, 0) + 1
    summary = ", ".join(f"{n} {VERDICT_WORDS.get(k, k).lower()}" for k, n in sorted(counts.items()))
    body = []
    for i, (number, view) in enumerate(sorted(shots.items()), 1):
        body.append(_shot_html(view, states.get(number)))
        progress(i, len(shots))
    title = f"Match report: {html.escape(name)}"
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>{title}</title><style>{STYLE}</style></head><body>"
        f"<h1>{title}</h1><p>{len(shots)} shots: {html.escape(summary)}. Rules cited in "
        f"English (working translation) and in the Russian original.</p>"
        f"{''.join(body)}{_lamp_html(lines)}{_health_html(stats, losses)}</body></html>"
    )
