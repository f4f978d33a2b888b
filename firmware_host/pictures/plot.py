"""A picture of one shot: the table to scale, the paths, numbered events, the stroke in µs.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display,
no global state), so it runs in a daemon thread or on a headless board.  The
figure has three panels: the table (cushions numbered as in ICD §6, pockets,
the house and centre lines, the marks; each ball's path with the ball at the
stroke, faint, and where it stopped, solid; a numbered marker where each
contact, cushion hit, line crossing and pocket drop happened), the list of
those events, and a time strip around the stroke on a µs scale (the tip
contacts with their durations and the cue ball's first contact, so that a
push or a double hit can be seen).  The verdict, its rule and its reason are
the title.  Without a tracker the table says that positions are unknown.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

from protocol.geometry import DEFAULT_TABLE, Table

from .shots import ShotView

SIZE_IN = (12.0, 8.0)
DPI = 100  # 1200 x 800 pixels
CLOTH = "#1f6b3a"
RAIL = "#5b3a1e"
COLOURED = "#e8a317"
WHITE = "#f4f4f0"
PALETTE = ("#d62728", "#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
PLACED = ("ball_contact", "cushion", "line_cross", "pocket")  # events drawn on the table
TITLE_CHARS = 390
NEAR_US = 20_000  # a first contact this soon after the stroke is drawn on the strip
VERDICT_WORDS = {"legal": "LEGAL", "foul": "FOUL", "referee": "REFEREE'S CALL"}


SVG_TEXT = {"svg.fonttype": "none"}  # SVG text stays text: searchable, readable back by tests
# No creator, date or RDF block in an inline picture: the page around it is the document.
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


def save(fig: Figure, path: Path) -> None:
    """PNG, or SVG with its text kept as text."""
    with matplotlib.rc_context(SVG_TEXT):
        fig.savefig(path, format=path.suffix.lower().lstrip("."))


def inline_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to put in a page (no XML declaration, no DOCTYPE)."""
    out = io.StringIO()
    with matplotlib.rc_context(SVG_TEXT):
        fig.savefig(out, format="svg", metadata=NO_METADATA)
    text = out.getvalue()
    return text[text.index("<svg") :]


def title_of(view: ShotView) -> str:
    """The verdict, its rule and its reason, as the picture's title says them."""
    head = f"Shot {view.number}"
    v = view.verdict
    if v is None:
        return f"{head}: no verdict"
    player = f" (player {v['player']})" if v.get("player") else ""
    rule = v.get("satisfied") if v["verdict"] == "legal" else ", ".join(v.get("rules") or ())
    words = VERDICT_WORDS.get(v["verdict"], v["verdict"])
    return f"{head}{player}: {words} {rule or ''}".rstrip() + f" \N{EM DASH} {v.get('reason', '')}"


def describe(ev: dict[str, Any], t0: int) -> str:
    """One event in words, with its time from the stroke."""
    ms = f"{(int(ev['t_us']) - t0) / 1000:8.1f} ms"
    kind = ev["type"]
    if kind == "cue_contact":
        return f"{ms}  tip on the cue ball {ev.get('duration_us', 0) / 1000:.2f} ms"
    if kind == "ball_contact":
        a, b = ev["balls"]
        return f"{ms}  {_ball(a)} hit {_ball(b)}"
    if kind == "cushion":
        return f"{ms}  {_ball(ev.get('ball'))} hit cushion {ev['cushion']}"
    if kind == "line_cross":
        return f"{ms}  {_ball(ev.get('ball'))} crossed the {ev.get('line')} line"
    if kind == "pocket":
        return f"{ms}  {_ball(ev.get('ball'))} into pocket {ev['pocket']}"
    return f"{ms}  {kind.replace('_', ' ')}"


def _name(ball: int | None) -> str:
    return "?" if ball is None else ("coloured" if ball == 0 else str(ball))


def _ball(ball: int | None) -> str:
    if ball is None:
        return "a ball"
    return "the coloured ball" if ball == 0 else f"ball {ball}"


def draw(view: ShotView, table: Table = DEFAULT_TABLE) -> Figure:
    fig = Figure(figsize=SIZE_IN, dpi=DPI)
    grid = fig.add_gridspec(2, 2, height_ratios=(3.6, 1.0), width_ratios=(3.2, 1.2))
    ax_table = fig.add_subplot(grid[0, 0])
    ax_list = fig.add_subplot(grid[0, 1])
    ax_time = fig.add_subplot(grid[1, :])
    # at most three lines: a break's reason can recount fifty events (the full text is the
    # verdict line's, and the event list beside the table has them all)
    title = textwrap.shorten(title_of(view), TITLE_CHARS, placeholder=" …")
    fig.suptitle(textwrap.fill(title, 130), fontsize=10.5, x=0.02, ha="left")
    _table(ax_table, table)
    placed = [e for e in view.events if e["type"] in PLACED]
    if view.balls:
        _paths(ax_table, view, table)
        _markers(ax_table, view, placed, table)
    else:
        ax_table.text(
            table.length_mm / 2,
            table.width_mm / 2,
            "ball positions unknown (no tracker)",
            ha="center",
            va="center",
            color="white",
            fontsize=13,
        )
    _event_list(ax_list, view, placed)
    _time_strip(ax_time, view)
    fig.subplots_adjust(left=0.04, right=0.98, top=0.90, bottom=0.08, hspace=0.3, wspace=0.05)
    return fig


def _table(ax: Any, table: Table) -> None:
    L, W, rail = table.length_mm, table.width_mm, 60.0
    ax.add_patch(Rectangle((-rail, -rail), L + 2 * rail, W + 2 * rail, color=RAIL, zorder=0))
    ax.add_patch(Rectangle((0, 0), L, W, color=CLOTH, zorder=1))
    for x, y in ((0, 0), (L / 2, 0), (L, 0), (L, W), (L / 2, W), (0, W)):
        ax.add_patch(Circle((x, y), table.corner_mm * 0.75, color="black", zorder=2))
    ax.axvline(table.house_line_x, color="white", lw=0.8, alpha=0.7, zorder=2)
    ax.axvline(table.centre_line_x, color="white", lw=0.8, ls="--", alpha=0.7, zorder=2)
    for x in (table.house_line_x, table.centre_line_x, 3 * L / 4):
        ax.plot([x], [W / 2], marker="o", ms=3, color="white", zorder=2)
    labels = {0: (-rail / 2, W / 2), 1: (L / 4, -rail / 2), 2: (3 * L / 4, -rail / 2)}
    labels |= {3: (L + rail / 2, W / 2), 4: (3 * L / 4, W + rail / 2), 5: (L / 4, W + rail / 2)}
    for cushion, (x, y) in labels.items():
        ax.text(x, y, str(cushion), color="white", ha="center", va="center", fontsize=8, zorder=3)
    ax.set_xlim(-rail * 1.5, L + rail * 1.5)
    ax.set_ylim(-rail * 1.5, W + rail * 1.5)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)


def _paths(ax: Any, view: ShotView, table: Table) -> None:
    r = table.ball_mm / 2
    cue = view.start.get("cue_ball")
    moved = [b for b in sorted(view.balls) if view.path(b)]
    colour = {b: PALETTE[i % len(PALETTE)] for i, b in enumerate(moved)}
    for ball, (x, y) in sorted(view.balls.items()):
        face = COLOURED if ball == 0 else WHITE
        path = view.path(ball)
        if path:
            xs, ys = [x, *(p[1] for p in path)], [y, *(p[2] for p in path)]
            ax.plot(xs, ys, color=colour[ball], lw=2.2 if ball == cue else 1.3, zorder=4)
            ax.add_patch(Circle((x, y), r, fc=face, ec=colour[ball], alpha=0.35, zorder=5))
            x, y = xs[-1], ys[-1]
        edge = "red" if ball == cue else "black"
        ax.add_patch(Circle((x, y), r, fc=face, ec=edge, lw=1.5 if ball == cue else 0.6, zorder=6))
        ax.text(
            x, y, "" if ball == 0 else str(ball), ha="center", va="center", fontsize=6, zorder=7
        )


def _where(view: ShotView, ev: dict[str, Any], table: Table) -> tuple[float, float] | None:
    t = int(ev["t_us"])
    if ev["type"] == "pocket":
        p = int(ev["pocket"])
        L, W = table.length_mm, table.width_mm
        return ((0, 0), (L / 2, 0), (L, 0), (L, W), (L / 2, W), (0, W))[p]
    if ev["type"] == "ball_contact":
        a, b = (view.at(x, t) if x is not None else None for x in ev["balls"])
        if a is None or b is None:
            return a or b
        return (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    ball = ev.get("ball")
    return view.at(ball, t) if ball is not None else None


def _markers(ax: Any, view: ShotView, placed: list[dict[str, Any]], table: Table) -> None:
    for n, ev in enumerate(placed, 1):
        xy = _where(view, ev, table)
        if xy is None:
            continue
        ax.annotate(
            str(n),
            xy,
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=8,
            fontweight="bold",
            color="black",
            bbox={"boxstyle": "circle,pad=0.2", "fc": "#ffe066", "ec": "black", "lw": 0.5},
            zorder=8,
        )


def _event_list(ax: Any, view: ShotView, placed: list[dict[str, Any]]) -> None:
    ax.axis("off")
    numbered = {id(e): n for n, e in enumerate(placed, 1)}
    rows = [
        f"{numbered[id(e)]:>2}" + describe(e, view.t0)
        if id(e) in numbered
        else "  " + describe(e, view.t0)
        for e in view.events
    ]
    shown = rows[:40] + ([f"   … {len(rows) - 40} more"] if len(rows) > 40 else [])
    ax.text(0.0, 1.0, "\n".join(shown), va="top", ha="left", family="monospace", fontsize=7)


def _time_strip(ax: Any, view: ShotView) -> None:
    t0 = view.t0
    tips = [e for e in view.events if e["type"] == "cue_contact"]
    cue = view.start.get("cue_ball")
    first = next(
        (
            e
            for e in view.events
            if e["type"] == "ball_contact" and (cue is None or cue in e["balls"])
        ),
        None,
    )
    ends = [int(e["t_us"]) - t0 + int(e.get("duration_us", 0)) for e in tips]
    if first is not None and int(first["t_us"]) - t0 < NEAR_US:
        ends.append(int(first["t_us"]) - t0)  # near enough to matter for 19.1 and 19.2
    right = max([5_000, *(t + 2_000 for t in ends)])
    for e in tips:
        start = int(e["t_us"]) - t0
        ax.barh(1, int(e.get("duration_us", 0)), left=start, height=0.5, color="#1f77b4")
        ax.text(start, 1.35, f"tip {e.get('duration_us', 0) / 1000:.2f} ms", fontsize=8)
    if first is not None:
        t = int(first["t_us"]) - t0
        a, b = first["balls"]
        said = f"first contact {_name(a)}-{_name(b)} at {t:,} µs"
        if t <= right:
            ax.axvline(t, color="#d62728", lw=1.5)
            ax.text(t, 0.2, f"{said} ", color="#d62728", fontsize=8, ha="right")
        else:
            said += " \N{RIGHTWARDS ARROW}"
            ax.text(right, 0.2, said, color="#d62728", fontsize=8, ha="right")
    ax.set_xlim(-1_000, right)
    ax.set_ylim(0, 2)
    ax.set_yticks([])
    ax.set_xlabel("µs from the stroke (the first tip contact)")
