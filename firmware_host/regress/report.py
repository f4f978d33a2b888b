"""The run's summary, and the HTML report of every changed shot, before and after.

The summary counts the changes by kind, false-foul candidates first
(:data:`~.compare.KINDS`).  The report is one self-contained file like
``firmware-host report``'s (its style, inline SVG pictures drawn by
:mod:`firmware_host.pictures.plot`, nothing fetched): for each changed shot
the baseline's verdict and this run's side by side, each with its picture
where there are events to draw it from.  A baseline of stored
expectations has verdicts only: its side says so in words.  The pictures
are drawn on the cluster, a task per changed shot.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from typing import Any

from .compare import KINDS, line_of

Row = dict[str, Any]
EXTRA_STYLE = """
.change .sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.kind { font-weight: 600; } .new-foul { color: #b00020; }
table.counts td:first-child { text-align: right; }
@media (max-width: 900px) { .change .sides { grid-template-columns: 1fr; } }
"""


def order(rows: list[Row]) -> list[Row]:
    """Changes in the order a person should read them: by kind, then recording and shot."""
    return sorted(
        rows, key=lambda r: (KINDS.index(r["change"]), r["recording"], r["shot"] or 0, r["key"])
    )


def summary(
    done: dict[str, dict[str, Any]],
    kinds: Counter[str],
    shots: int,
    failed: dict[str, str],
    against: str,
) -> dict[str, Any]:
    """The figures of a run (``summary.json``), from the batch footers and the change counts."""
    table_s = sum(c.get("table_s", 0.0) for c in done.values())
    cpu_s = sum(c.get("cpu_s", 0.0) for c in done.values())
    return {
        "baseline": against,
        "recordings": len(done),
        "parts": sum(c.get("parts", 0) for c in done.values()),
        "bytes": sum(c.get("bytes", 0) for c in done.values()),
        "table_hours": round(table_s / 3600, 4),
        "replay_cpu_s": round(cpu_s, 2),
        "table_hours_per_cpu_hour": round(table_s / cpu_s, 1) if cpu_s else None,
        "without_baseline": sorted(n for n, c in done.items() if not c.get("baseline")),
        "shots": shots,
        "changed": sum(kinds.values()),
        "changes": {k: kinds[k] for k in KINDS if kinds[k]},
        "failed": failed,
    }


def summary_text(s: dict[str, Any]) -> str:
    head = (
        f"{s['recordings']} recordings ({s['parts']} parts, {s['bytes'] / 1e6:.1f} MB, "
        f"{s['table_hours']:.2f} table-hours) against {s['baseline']}"
    )
    lines = [
        head,
        f"{s['shots']} shots compared, {s['changed']} changed",
        *(f"  {n:6d}  {k}" for k, n in s["changes"].items()),
    ]
    if s["without_baseline"]:
        lines.append(f"{len(s['without_baseline'])} recordings had no baseline (not compared)")
    if s["table_hours_per_cpu_hour"]:
        lines.append(
            f"replay: {s['table_hours_per_cpu_hour']:.0f} table-hours per CPU-hour of the workers"
        )
    for name, why in s["failed"].items():
        lines.append(f"FAILED {name}: {why}")
    return "\n".join(lines) + "\n"


def _side(title: str, line: dict[str, Any] | None, events: str | None) -> str:
    from ..pictures.plot import VERDICT_WORDS, draw, inline_svg
    from ..pictures.shots import shots_of

    if line is None:
        return (
            f"<div class=side><h3>{title}</h3><p class=verdict>no verdict for this shot</p></div>"
        )
    rule = line["satisfied"] if line["verdict"] == "legal" else ", ".join(line["rules"])
    words = VERDICT_WORDS.get(line["verdict"], line["verdict"])
    head = (
        f"<div class=side><h3>{title}</h3><p class='verdict {html.escape(line['verdict'])}'>"
        f"{words} {html.escape(rule or '')} — {html.escape(line.get('reason') or '')}</p>"
    )
    if not events:
        return head + "<p>No events stored with this verdict: nothing to draw.</p></div>"
    views = shots_of(json.loads(events), [line])
    if line["shot"] not in views:
        return head + "<p>The shot's start is not among its events: nothing to draw.</p></div>"
    return head + f"<div class=picture>{inline_svg(draw(views[line['shot']]))}</div></div>"


def change_html(row: Row, number: int) -> str:
    """One changed shot as a section: the baseline's side, then this run's (a cluster task)."""
    shot = f"shot {row['shot']}" if row["shot"] is not None else "outside a shot"
    css = " new-foul" if row["change"] == KINDS[0] else ""
    before = line_of(row, "baseline_")
    after = line_of(row)
    return (
        f"<section class=change id=change-{number} data-recording='{html.escape(row['recording'])}'"
        f" data-key='{html.escape(row['key'])}'><h2>{html.escape(row['recording'])}, {shot}</h2>"
        f"<p class='kind{css}'>{html.escape(row['change'])}</p><div class=sides>"
        f"{_side('Baseline', before, row.get('baseline_events'))}"
        f"{_side('This run', after, row.get('events'))}</div></section>"
    )


def page(s: dict[str, Any], sections: list[str]) -> str:
    from ..pictures.report import STYLE

    counts = "".join(
        f"<tr><td>{n}</td><td>{html.escape(k)}</td></tr>" for k, n in s["changes"].items()
    )
    failed = "".join(
        f"<li>{html.escape(name)}: {html.escape(why)}</li>" for name, why in s["failed"].items()
    )
    title = f"Verdict regression against {html.escape(s['baseline'])}"
    return (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>{title}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body>"
        f"<h1>{title}</h1><p>{s['recordings']} recordings, {s['table_hours']:.2f} table-hours, "
        f"{s['shots']} shots compared: <b>{s['changed']} changed</b>.</p>"
        f"<table class=counts>{counts}</table>"
        f"{f'<h2>Failed</h2><ul>{failed}</ul>' if failed else ''}"
        f"{''.join(sections)}</body></html>"
    )
