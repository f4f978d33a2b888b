"""Score ordered events against a ground truth (the virtual table's truth file).

Used by the end-to-end tests and ``bench/fusion.py``: which truth events
were found (same type, within a time tolerance), whether their ball was
right, and whether events more than 1 ms apart kept their order.  A cushion
touch the fusion derived from the tracker (``"source": "tracker"``, too soft
for the rails) is timed by a fit over frames, not by a sensor's stamp: it
pairs within ``DERIVED_TOLERANCE_US`` and is left out of the order figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

Event = dict[str, Any]

TOLERANCE_US = {
    "cushion": 1000,
    "pocket": 1000,
    "line_cross": 2000,
    "ball_contact": 5000,
    "cue_contact": 1000,
    "shot_start": 1000,
}
ATTRIBUTED = ("cushion", "pocket", "line_cross", "ball_contact")
DERIVED_TOLERANCE_US = 50_000  # a touch timed by the tracker's frames (docs/timing.md)


def derived(e: Event) -> bool:
    """Ours, derived from the tracker's frames rather than stamped by a sensor."""
    return e.get("source") == "tracker"


def on_our_clock(truth: list[Event], ours: list[Event]) -> list[Event]:
    """Truth times are per hub boot; ours run on across a reboot (docs/timing.md): shift each boot."""
    ob = [e["t_us"] for e in ours if e["type"] == "boot"]
    tb = [e["t_us"] for e in truth if e.get("type") == "boot"]
    out, k = [], -1
    for e in truth:
        k += e.get("type") == "boot"
        shift = ob[max(k, 0)] - tb[max(k, 0)] if ob and tb and k < len(ob) else 0
        out.append({**e, "t_us": e["t_us"] + shift})
    return out


def key(e: Event) -> Any:
    """What attribution is judged on: the ball, or the pair for a contact, or the struck ball."""
    if e["type"] == "ball_contact":
        return tuple(sorted(-1 if b is None else b for b in e["balls"]))
    if e["type"] == "shot_start":
        return e.get("cue_ball")
    if e["type"] == "cue_contact":
        return None  # EVENTS.md gives the tip contact no ball (the shot_start does)
    return e.get("ball")


def pair_up(ours: list[Event], truth: list[Event], kind: str) -> list[tuple[Event, Event]]:
    """Truth events of one kind with ours nearest in time, one to one: same balls first, then any."""
    mine = [e for e in ours if e["type"] == kind]
    times = np.array([e["t_us"] for e in mine], float)
    tol = np.array([DERIVED_TOLERANCE_US if derived(e) else TOLERANCE_US[kind] for e in mine])
    used = np.zeros(len(mine), bool)
    todo = [e for e in truth if e.get("type") == kind]
    pairs = []
    for same_balls in (True, False):
        left = []
        for e in todo:
            d = np.where(used, np.inf, np.abs(times - e["t_us"])) if len(mine) else np.zeros(0)
            near = [c for c in np.flatnonzero(d <= tol) if not same_balls or key(mine[c]) == key(e)]
            if near:
                c = min(near, key=lambda c: d[c])
                used[c] = True
                pairs.append((e, mine[c]))
            else:
                left.append(e)
        todo = left
    return pairs


@dataclass
class Score:
    kind: str
    truth: int
    found: int
    right: int
    extra: int = 0  # ours that match no truth event: each claims balls that did nothing then
    derived: int = (
        0  # of the found, derived from the tracker (cushion touches too soft for the rails)
    )

    def __str__(self) -> str:
        rate = f"{self.right / self.found:.2%}" if self.found else "-"
        return (
            f"{self.kind:12s} truth {self.truth:5d} found {self.found:5d} ball right {self.right:5d} ({rate})"
            f", extra {self.extra}"
            + (f" (found from the tracker: {self.derived})" if self.derived else "")
        )


def score(
    ours: list[Event], truth: list[Event]
) -> tuple[list[Score], float, float, list[tuple[Event, Event]]]:
    """Per-kind scores; order agreement for pairs > 1 ms apart and for closer ones; the disagreeing pairs."""
    truth = on_our_clock(truth, ours)
    scores, matched = [], []
    for kind in (*TOLERANCE_US,):
        pairs = pair_up(ours, truth, kind)
        n_truth = sum(e.get("type") == kind for e in truth)
        n_ours = sum(e["type"] == kind for e in ours)
        right = sum(key(t) == key(o) for t, o in pairs)
        n_derived = sum(derived(o) for _, o in pairs)
        scores.append(Score(kind, n_truth, len(pairs), right, n_ours - len(pairs), n_derived))
        matched += [(t, o) for t, o in pairs if not derived(o)]  # order: stamped events only
    t_true = np.array([t["t_us"] for t, _ in matched], float)
    t_ours = np.array([o["t_us"] for _, o in matched], float)
    far_agree = far_n = close_agree = close_n = 0
    bad: list[tuple[Event, Event]] = []
    for i in range(len(matched)):  # row by row: an hour has thousands of events
        gap = np.abs(t_true[i] - t_true)
        agree = np.sign(t_true[i] - t_true) == np.sign(t_ours[i] - t_ours)
        far, close = gap > 1000, (gap > 0) & (gap <= 1000)
        far_n += far.sum()
        far_agree += (agree & far).sum()
        close_n += close.sum()
        close_agree += (agree & close).sum()
        bad += [(matched[i][0], matched[j][0]) for j in np.flatnonzero(far & ~agree)[:1]]
    return (
        scores,
        far_agree / far_n if far_n else 1.0,
        close_agree / close_n if close_n else 1.0,
        bad,
    )
