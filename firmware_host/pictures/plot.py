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
(a break's 26 contacts in the rack are one "3–28"), the cue ball's first
contact keeps a marker of its own, the event list's font is sized from its
longest row and its number of rows (runs of contacts within a few
milliseconds become one row when the list would not fit otherwise), and a
ball contact says which ball hit which only when the paths show it.
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Rectangle

from protocol.geometry import DEFAULT_TABLE, Table

from .shots import ShotView

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
LIST_PT = (8.0, 5.5)  # the list's largest and smallest font (points)
LINE_SPACING = 1.2  # matplotlib's default, in font sizes
FILL = 0.96  # of the list's width: room for a browser's monospace a little wider than ours
MARKER_PT = 8.0
MARKER_GAP_PX = 3.0  # two markers' boxes closer than this are merged into one
MARKER_OFFSET_PT = 7.0
CLUSTER_PX = 16.0  # events this close to another's place share its marker
MARKER_CHARS = 12  # a longer list of numbers is shown as its ends and its count
# A ball that moved within this long before a contact was already moving (its path's
# vertices are tracker frames: 120 Hz is 8.3 ms apart, and a struck ball's path starts at the
# frame before the contact).
MOVING_BEFORE_US = 15_000
MOVED_MM = 1.0
RUN_US = 5_000  # consecutive ball contacts this close are one row of a list that is too long


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


# -- the words ----------------------------------------------------------------------------


def describe(ev: dict[str, Any], view: ShotView) -> str:
    """One event in words, with its time from the stroke."""
    ms = f"{(int(ev['t_us']) - view.t0) / 1000:8.1f} ms"
    return f"{ms}  {what_happened(ev, view)}"


def what_happened(ev: dict[str, Any], view: ShotView) -> str:
    kind = ev["type"]
    cue = view.start.get("cue_ball")
    if kind == "cue_contact":
        return f"tip on the cue ball {ev.get('duration_us', 0) / 1000:.2f} ms"
    if kind == "ball_contact":
        return contact_words(ev, view)
    ball = _ball(ev.get("ball"), cue)
    if kind == "cushion":
        return f"{ball} hit cushion {ev['cushion']}"
    if kind == "line_cross":
        return f"{ball} crossed the {ev.get('line')} line"
    if kind == "pocket":
        return f"{ball} into pocket {ev['pocket']}"
    return kind.replace("_", " ")


def contact_words(ev: dict[str, Any], view: ShotView) -> str:
    """Who hit whom, as far as the shot shows it.

    EVENTS.md's ``balls`` pair is unordered (the fusion lists the lower
    number first), so "a hit b" is said only when b was at rest and a was
    moving: from the paths, and for the cue ball's first contact (the tip
    had just set it moving).  Two balls both moving
    collided; otherwise (a frozen cluster, no tracker) they touched.
    """
    cue = view.start.get("cue_ball")
    a, b = ev["balls"]
    t = int(ev["t_us"])
    moving = {x: view.moving_before(x, t, MOVING_BEFORE_US, MOVED_MM) for x in (a, b)}
    if cue in (a, b) and ev is first_cue_contact(view):
        moving[cue] = True  # the tip had just set it rolling (tracked or not)
    if moving[a] and not moving[b]:
        return f"{_ball(a, cue)} hit {_ball(b, cue)}"
    if moving[b] and not moving[a]:
        return f"{_ball(b, cue)} hit {_ball(a, cue)}"
    said = "collided" if moving[a] and moving[b] else "touched"
    return f"{_ball(a, cue)} and {_ball(b, cue)} {said}"


def first_cue_contact(view: ShotView) -> dict[str, Any] | None:
    """The cue ball's first ball contact (any first contact if the cue ball is not known)."""
    cue = view.start.get("cue_ball")
    return next(
        (
            e
            for e in view.events
            if e["type"] == "ball_contact" and (cue is None or cue in e["balls"])
        ),
        None,
    )


def _ball(ball: int | None, cue: int | None = None) -> str:
    """A ball as a referee names it: the cue ball as such (the legend says which it is)."""
    if ball is None:
        return "a ball"
    if ball == cue:
        return "the cue ball"
    return "the coloured ball" if ball == 0 else f"ball {ball}"


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
    _event_list(ax_list, view, numbers)
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

    cue_name = "none struck" if cue is None else _ball(cue).removeprefix("the ")
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


@dataclass
class Group:
    """Events drawn as one marker: their numbers, and where they happened (display px)."""

    numbers: list[int]
    points: list[tuple[float, float]]
    first: bool = False  # the cue ball's first contact: a marker of its own, edged red
    side: tuple[int, int] = (1, 1)  # where the marker sits from its place: up right, ...

    @property
    def anchor(self) -> tuple[float, float]:
        xs, ys = zip(*self.points, strict=True)
        return sum(xs) / len(xs), sum(ys) / len(ys)

    @property
    def label(self) -> str:
        return number_ranges(self.numbers)

    def box(self, dpi: float) -> tuple[float, float, float, float]:
        """The marker's box in display px (from the label's length: bold digits)."""
        pt = dpi / 72.0
        h = 1.6 * MARKER_PT * pt
        w = max((0.62 * MARKER_PT * len(self.label) + MARKER_PT) * pt, h)
        x, y = self.anchor
        x += self.side[0] * MARKER_OFFSET_PT * pt
        y += self.side[1] * MARKER_OFFSET_PT * pt
        return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def number_ranges(numbers: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3–5, 9"``; a long list as its ends and its count."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}\N{EN DASH}{r[-1]}" for r in runs)
    if len(text) <= MARKER_CHARS:
        return text
    return f"{min(numbers)}\N{HORIZONTAL ELLIPSIS}{max(numbers)} ({len(numbers)})"


def _markers(ax: Any, view: ShotView, placed: list[dict[str, Any]], table: Table) -> list[Group]:
    """One marker per place: events whose markers would overlap share one (see Group)."""
    ax.apply_aspect()  # the table's final place in the figure: display px from here on
    to_px = ax.transData.transform
    first = first_cue_contact(view)
    groups: list[Group] = []
    for n, ev in enumerate(placed, 1):
        xy = _where(view, ev, table)
        if xy is None:
            continue
        x, y = (float(v) for v in to_px(xy))
        g = Group([n], [(x, y)], first=ev is first)
        if not g.first:  # one group with every group it comes near (a cluster's contacts)
            near = [
                h
                for h in groups
                if not h.first and any(math.dist(p, (x, y)) <= CLUSTER_PX for p in h.points)
            ]
            for h in near:
                g.numbers += h.numbers
                g.points += h.points
                groups.remove(h)
            g.numbers.sort()
        groups.append(g)
    groups = _placed(groups, ax.figure.dpi)
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


SIDES = ((1, 1), (1, -1), (-1, 1), (-1, -1))  # up right, down right, up left, down left


def _placed(groups: list[Group], dpi: float) -> list[Group]:
    """Each marker on the first side of its place where it overlaps no marker placed before
    it (the cue ball's first contact first, up left); where no side is free, it joins the
    marker in the way (never the first contact's) and the placing starts again."""
    while True:
        done: list[Group] = []
        for g in sorted(groups, key=lambda g: not g.first):
            sides = SIDES[2:] + SIDES[:2] if g.first else SIDES
            for side in sides:
                g.side = side
                box = g.box(dpi)
                blocking = [d for d in done if _overlap(box, d.box(dpi))]
                if not blocking:
                    break
            else:
                into = next((d for d in blocking if not d.first), None)
                if into is not None:
                    into.numbers += g.numbers
                    into.points += g.points
                    groups.remove(g)
                    break
                g.side = sides[0]  # only the first contact is in the way: beside it
            done.append(g)
        else:
            return groups


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    gap = MARKER_GAP_PX
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


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


# -- the event list -------------------------------------------------------------------------


def list_rows(view: ShotView, numbers: dict[int, int], max_rows: int) -> list[str]:
    """The event list's rows: every event, or, when they would not fit in ``max_rows``,
    runs of ball contacts within ``RUN_US`` of each other as one row each."""
    rows = [(numbers.get(id(e)), e) for e in view.events]
    if len(rows) > max_rows:
        rows = _runs_joined(rows, first_cue_contact(view))
    text = []
    for number, item in rows:
        if isinstance(item, list):  # a run of contacts
            span_us = int(item[-1]["t_us"]) - int(item[0]["t_us"])
            span = f"{span_us} µs" if span_us < 1000 else f"{span_us / 1000:.1f} ms"
            label = f"{number[0]}\N{EN DASH}{number[1]}"
            ms = f"{(int(item[0]['t_us']) - view.t0) / 1000:8.1f} ms"
            text.append(f"{label:>5}{ms}  {len(item)} ball contacts within {span}")
        else:
            text.append(f"{'' if number is None else number:>5}" + describe(item, view))
    if len(text) > max_rows:
        text = text[: max_rows - 1] + [
            f"      \N{HORIZONTAL ELLIPSIS} {len(text) - max_rows + 1} more"
        ]
    return text


def _runs_joined(
    rows: list[tuple[int | None, dict[str, Any]]], first: dict[str, Any] | None
) -> list[tuple[Any, Any]]:
    """Runs of three or more ball contacts, each within ``RUN_US`` of the last, as one row
    (the cue ball's first contact keeps its own)."""
    out: list[tuple[Any, Any]] = []
    run: list[tuple[int | None, dict[str, Any]]] = []

    def close() -> None:
        if len(run) >= 3:
            out.append(((run[0][0], run[-1][0]), [e for _, e in run]))
        else:
            out.extend(run)
        run.clear()

    for number, ev in rows:
        joins = (
            ev["type"] == "ball_contact"
            and ev is not first
            and run
            and int(ev["t_us"]) - int(run[-1][1]["t_us"]) <= RUN_US
        )
        if not joins:
            close()
        if ev["type"] == "ball_contact" and ev is not first and number is not None:
            run.append((number, ev))
        else:
            out.append((number, ev))
    close()
    return out


def _event_list(ax: Any, view: ShotView, numbers: dict[int, int]) -> None:
    """The list, in the largest font (up to LIST_PT[0]) at which its rows fit the panel, as
    measured on the canvas; below LIST_PT[1] the long rows wrap instead."""
    ax.axis("off")
    room = ax.get_window_extent()
    px = ax.figure.dpi / 72.0
    biggest, smallest = LIST_PT
    max_rows = max(int(room.height / (LINE_SPACING * smallest * px)), 1)
    rows = list_rows(view, numbers, max_rows)
    text = ax.text(0.0, 1.0, "", va="top", ha="left", family="monospace")
    size = _fit(text, rows, room, biggest)
    if size < smallest:
        per_char = _extent(text, rows, smallest).width / max(len(r) for r in rows)
        width = max(int(room.width * FILL / per_char), 30)
        rows = [w for r in rows for w in textwrap.wrap(r, width, subsequent_indent=" " * 18)]
        _fit(text, rows[:max_rows], room, smallest)


def _extent(text: Any, rows: list[str], size: float) -> Any:
    text.set_text("\n".join(rows))
    text.set_fontsize(size)
    return text.get_window_extent(text.figure.canvas.get_renderer())


def _fit(text: Any, rows: list[str], room: Any, size: float) -> float:
    """Shrink ``text`` from ``size`` until its rows fit ``room``; the size it got."""
    for _ in range(8):
        box = _extent(text, rows, size)
        scale = min(room.width * FILL / box.width, room.height / box.height)
        if scale >= 1.0:
            break
        size *= max(scale, 0.5) * 0.99
    return size


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
