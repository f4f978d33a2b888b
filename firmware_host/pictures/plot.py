"""A picture of one shot: the table to scale, the paths, numbered events, the stroke in µs.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display,
no global state), so it runs in a daemon thread or on a headless board.  The
figure has three panels: the table (cushions numbered as in ICD §6, pockets,
the house and centre lines, the marks; each ball's path with the ball at the
stroke, faint, and where it stopped, solid; a numbered marker where each
contact, cushion hit, line crossing and pocket drop happened, with a legend
under the table), the list of those events, and a time strip around the
stroke on a µs scale (the tip contacts with their durations and the cue
ball's first contact, so that a push or a double hit can be seen).  The
verdict, its rule and its reason are the title.  Without a tracker the table
says that positions are unknown.

A referee reads it at a glance, so nothing may pile up or run off the
edge: markers that would overlap become one marker naming all their numbers
(a break's 30 contacts in the rack are one "3–7, 9–32"), the cue ball's first
contact keeps a marker of its own, the event list's font is sized from its
longest row and its number of rows (runs of contacts within a few
milliseconds become one row when the list would not fit otherwise), and a
ball contact says which ball hit which only when the paths show it.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Rectangle

from protocol.geometry import DEFAULT_TABLE, Table

from .event_list import event_list
from .markers import MARKER_PT, Group, group
from .shots import ShotView
from .words import ball_name, contact_words, first_cue_contact

SIZE_IN = (12.0, 8.0)
DPI = 100  # 1200 x 800 pixels
CLOTH = "#1f6b3a"
RAIL = "#5b3a1e"
COLOURED = "#e8a317"
WHITE = "#f4f4f0"
CUE_EDGE = "#d62728"
MARKER = "#ffe066"
PALETTE = ("#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
PLACED = ("ball_contact", "cushion", "line_cross", "pocket")  # events drawn on the table
TITLE_CHARS = 390
TITLE_WRAP = 130
NEAR_US = 20_000  # a first contact this soon after the stroke is drawn on the strip
VERDICT_WORDS = {"legal": "LEGAL", "foul": "FOUL", "referee": "REFEREE'S CALL"}

# Where the panels go, as fractions of the figure: the table with its legend under it on
# the left, the event list on the right, the time strip along the bottom.
TABLE_X = (0.01, 0.64)  # left, width
LIST_X = (0.665, 0.325)
PANELS_Y = (0.29, 0.90, 0.97)  # bottom, top under a title, top without one
STRIP_BOX = (0.05, 0.07, 0.93, 0.15)


SVG_TEXT = {"svg.fonttype": "none"}  # SVG text stays text: searchable, readable back by tests
# No creator, date or RDF block in an inline picture: the page around it is the document.
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


def save(fig: Figure, path: Path) -> None:
    """PNG, or SVG with its text kept as text."""
    if path.suffix.lower() == ".svg":
        path.write_text(_svg(fig), encoding="utf-8")
    else:
        fig.savefig(path, format="png")


def inline_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to put in a page (no XML declaration, no DOCTYPE)."""
    text = _svg(fig, NO_METADATA)
    return text[text.index("<svg") :]


def _svg(fig: Figure, metadata: dict[str, Any] | None = None) -> str:
    """The SVG with its spaces kept (``xml:space`` on each text: Chromium does not inherit it
    from the root): a browser would otherwise collapse the event list's runs of spaces, and
    its columns would no longer line up."""
    out = io.StringIO()
    with matplotlib.rc_context(SVG_TEXT):
        fig.savefig(out, format="svg", metadata=metadata)
    text = out.getvalue()
    return text.replace("<text ", '<text xml:space="preserve" ')


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


# -- the figure ---------------------------------------------------------------------------


def draw(view: ShotView, table: Table = DEFAULT_TABLE, *, title: bool = True) -> Figure:
    """The shot's picture; ``title=False`` where the page around it already says the verdict."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=SIZE_IN, dpi=DPI)
    FigureCanvasAgg(fig)  # a canvas to measure text with while laying out
    if title:
        # at most three lines: a break's reason can recount fifty events (the full text is the
        # verdict line's, and the event list beside the table has them all)
        said = textwrap.shorten(title_of(view), TITLE_CHARS, placeholder=" …")
        fig.suptitle(textwrap.fill(said, TITLE_WRAP), fontsize=10.5, x=0.02, ha="left")
    bottom, top = PANELS_Y[0], PANELS_Y[1 if title else 2]
    ax_table = fig.add_axes((*TABLE_X[:1], bottom, TABLE_X[1], top - bottom), anchor="N")
    ax_list = fig.add_axes((LIST_X[0], bottom, LIST_X[1], top - bottom))
    ax_time = fig.add_axes(STRIP_BOX)
    _table(ax_table, table)
    placed = [e for e in view.events if e["type"] in PLACED]
    numbers = {id(e): n for n, e in enumerate(placed, 1)}
    if view.balls:
        _paths(ax_table, view, table)
        groups = _markers(ax_table, view, placed, table)
        _legend(ax_table, view, any(len(g.numbers) > 1 for g in groups))
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
    event_list(ax_list, view, numbers)
    _time_strip(ax_time, view)
    return fig


def _table(ax: Any, table: Table) -> None:
    L, W, rail = table.length_mm, table.width_mm, 60.0
    ax.add_patch(Rectangle((-rail, -rail), L + 2 * rail, W + 2 * rail, color=RAIL, zorder=0))
    ax.add_patch(Rectangle((0, 0), L, W, color=CLOTH, zorder=1))
    for x, y in _pockets(table):
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


def _pockets(table: Table) -> tuple[tuple[float, float], ...]:
    L, W = table.length_mm, table.width_mm
    return ((0, 0), (L / 2, 0), (L, 0), (L, W), (L / 2, W), (0, W))


def _paths(ax: Any, view: ShotView, table: Table) -> None:
    r = table.ball_mm / 2
    cue = view.start.get("cue_ball")
    moved = [b for b in sorted(view.balls) if view.path(b) and b != cue]
    colour = {b: PALETTE[i % len(PALETTE)] for i, b in enumerate(moved)} | {cue: CUE_EDGE}
    for ball, (x, y) in sorted(view.balls.items()):
        face = COLOURED if ball == 0 else WHITE
        path = view.path(ball)
        if path:
            xs, ys = [x, *(p[1] for p in path)], [y, *(p[2] for p in path)]
            ax.plot(xs, ys, color=colour[ball], lw=2.2 if ball == cue else 1.3, zorder=4)
            ax.add_patch(Circle((x, y), r, fc=face, ec=colour[ball], alpha=0.35, zorder=5))
            x, y = xs[-1], ys[-1]
        edge = CUE_EDGE if ball == cue else "black"
        ax.add_patch(Circle((x, y), r, fc=face, ec=edge, lw=1.8 if ball == cue else 0.6, zorder=6))
        ax.text(
            x, y, "" if ball == 0 else str(ball), ha="center", va="center", fontsize=6, zorder=7
        )


def _legend(ax: Any, view: ShotView, grouped: bool) -> None:
    """What the drawing's marks mean, under the table."""
    cue = view.start.get("cue_ball")
    cue_face = COLOURED if cue == 0 else WHITE

    def ball(face: str, edge: str, lw: float = 0.6, alpha: float = 1.0) -> Line2D:
        return Line2D([], [], ls="", marker="o", ms=9, mfc=face, mec=edge, mew=lw, alpha=alpha)

    cue_name = "none struck" if cue is None else ball_name(cue).removeprefix("the ")
    handles = [
        (
            Line2D([], [], color=CUE_EDGE, lw=2.2, marker="o", ms=9, mfc=cue_face, mec=CUE_EDGE),
            f"the cue ball ({cue_name}): red edge, its path red",
        ),
        (ball(COLOURED, "black"), "the coloured ball"),
        (ball(WHITE, "black", alpha=0.35), "faint: where a ball stood at the stroke"),
        (ball(WHITE, "black"), "solid: where it stopped"),
        (_marker_handle(MARKER, "black"), "an event, numbered as in the list"),
        (_marker_handle(MARKER, CUE_EDGE), "the cue ball's first contact"),
    ]
    if grouped:
        handles.append((_marker_handle("#ffffff", "black"), "several events in one place"))
    ax.legend(
        [h for h, _ in handles],
        [t for _, t in handles],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=3,
        fontsize=7.5,
        frameon=False,
        handletextpad=0.4,
        columnspacing=1.2,
    )


def _marker_handle(face: str, edge: str) -> Line2D:
    return Line2D([], [], ls="", marker="o", ms=10, mfc=face, mec=edge, mew=1.0)


# -- the numbered markers -------------------------------------------------------------------


def _markers(ax: Any, view: ShotView, placed: list[dict[str, Any]], table: Table) -> list[Group]:
    """One marker per place, none in another's way (:mod:`.markers`), drawn."""
    ax.apply_aspect()  # the table's final place in the figure: display px from here on
    to_px = ax.transData.transform
    first = first_cue_contact(view)
    points, first_n = [], None
    for n, ev in enumerate(placed, 1):
        xy = _where(view, ev, table)
        if xy is not None:
            x, y = (float(v) for v in to_px(xy))
            points.append((n, (x, y)))
            first_n = n if ev is first else first_n
    groups = group(points, first_n, ax.figure.dpi)
    to_data = ax.transData.inverted().transform
    pt = ax.figure.dpi / 72.0
    for g in groups:
        single = len(g.numbers) == 1
        x0, y0, x1, y1 = g.box(ax.figure.dpi)
        ax.annotate(
            g.label,
            to_data(g.anchor),
            xytext=to_data(((x0 + x1) / 2, (y0 + y1) / 2)),
            fontsize=MARKER_PT,
            fontweight="bold",
            color="black",
            ha="center",
            va="center",
            bbox={
                "boxstyle": "circle,pad=0.2" if single else "round,pad=0.25",
                "fc": MARKER if single or g.first else "#ffffff",
                "ec": CUE_EDGE if g.first else "black",
                "lw": 1.2 if g.first else 0.5,
            },
            arrowprops=None if single else {"arrowstyle": "-", "lw": 0.6, "shrinkB": 2 * pt},
            zorder=9 if g.first else 8,
        )
    return groups


def _where(view: ShotView, ev: dict[str, Any], table: Table) -> tuple[float, float] | None:
    t = int(ev["t_us"])
    if ev["type"] == "pocket":
        return _pockets(table)[int(ev["pocket"])]
    if ev["type"] == "ball_contact":
        a, b = (view.at(x, t) if x is not None else None for x in ev["balls"])
        if a is None or b is None:
            return a or b
        return (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    ball = ev.get("ball")
    return view.at(ball, t) if ball is not None else None


# -- the time strip -------------------------------------------------------------------------


def _time_strip(ax: Any, view: ShotView) -> None:
    t0 = view.t0
    tips = [e for e in view.events if e["type"] == "cue_contact"]
    first = first_cue_contact(view)
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
        said = f"first contact: {contact_words(first, view)}, at {t:,} µs"
        if t <= right:
            ax.axvline(t, color=CUE_EDGE, lw=1.5)
            # the words on the side of the line with room for them
            left = t - (-1_000) > (right - t)
            ax.text(t, 0.2, f" {said} ", color=CUE_EDGE, fontsize=8, ha="right" if left else "left")
        else:
            said += " \N{RIGHTWARDS ARROW}"
            ax.text(right, 0.2, said, color=CUE_EDGE, fontsize=8, ha="right")
    ax.set_xlim(-1_000, right)
    ax.set_ylim(0, 2)
    ax.set_yticks([])
    ax.set_xlabel("µs from the stroke (the first tip contact)")
