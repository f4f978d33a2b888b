"""A shot's events in a referee's words, for the picture's list and the match report.

EVENTS.md's ``ball_contact.balls`` is an unordered pair (the fusion writes
the lower number first), so "a hit b" is said only when the tracker's paths
show a rolling and b at rest, or for the cue ball's first contact (the tip
had just set it moving); both rolling "collided", neither known (a frozen
cluster, no tracker) "touched".  The cue ball is "the cue ball": the
picture's legend says which ball it is.
"""

from __future__ import annotations

from typing import Any

from .shots import ShotView

# A ball that moved within this long before a contact was already moving (its path's
# vertices are tracker frames: 120 Hz is 8.3 ms apart, and a struck ball's path starts at the
# frame before the contact).
MOVING_BEFORE_US = 15_000
MOVED_MM = 1.0


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
    ball = ball_name(ev.get("ball"), cue)
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
        return f"{ball_name(a, cue)} hit {ball_name(b, cue)}"
    if moving[b] and not moving[a]:
        return f"{ball_name(b, cue)} hit {ball_name(a, cue)}"
    said = "collided" if moving[a] and moving[b] else "touched"
    return f"{ball_name(a, cue)} and {ball_name(b, cue)} {said}"


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


def ball_name(ball: int | None, cue: int | None = None) -> str:
    """A ball as a referee names it: the cue ball as such (the legend says which it is)."""
    if ball is None:
        return "a ball"
    if ball == cue:
        return "the cue ball"
    return "the coloured ball" if ball == 0 else f"ball {ball}"
