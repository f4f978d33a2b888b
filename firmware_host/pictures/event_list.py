"""The list of a shot's events beside its picture, sized to fit its panel.

Every event in words (:mod:`.words`) with its time from the stroke, the
placed ones under their marker's number.  The largest font (up to
``LIST_PT[0]``) at which the rows fit the panel, measured on the canvas;
when they would need less than ``LIST_PT[1]``, runs of ball contacts within
``RUN_US`` become one row each, and a row still too wide wraps under its
words.  Nothing runs off the picture.
"""

from __future__ import annotations

import textwrap
from typing import Any

from .shots import ShotView
from .words import describe, first_cue_contact

LIST_PT = (8.0, 5.5)  # the list's largest and smallest font (points)
LINE_SPACING = 1.2  # matplotlib's default, in font sizes
FILL = 0.96  # of the list's width: room for a browser's monospace a little wider than ours
RUN_US = 5_000  # consecutive ball contacts this close are one row of a list that is too long


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


def event_list(ax: Any, view: ShotView, numbers: dict[int, int]) -> None:
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
