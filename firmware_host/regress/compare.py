"""A recording's verdicts against its baseline's: one row per shot, with the kind of change.

The shots are matched as the HIL corpus matches them
(:func:`hil_tests.verdicts.compare`): by shot number, a second final
verdict for one shot as a row of its own, verdicts outside a shot in
order; compared on verdict, rules (in order) and the clause.  The kinds
put a foul the baseline did not call first: on a club's table that is the
change that costs a player a shot, so every one is a false-foul candidate
to look at before an upgrade.

>>> kind({"verdict": "legal", "rules": []}, {"verdict": "foul", "rules": ["19.1"]})
'new foul (false-foul candidate)'
"""

from __future__ import annotations

from typing import Any

from hil_tests.verdicts import compare

Line = dict[str, Any]

NEW_FOUL = "new foul (false-foul candidate)"
#: Every kind of change, in the order the summary and the report list them
KINDS = (
    NEW_FOUL,
    "foul no longer called",
    "now the referee's call",
    "now decided by the sensors",
    "other rules or clause",
    "shot only in the baseline",
    "shot only in this run",
)


def kind(before: Line | None, after: Line | None) -> str:
    """The kind of a change from ``before`` (the baseline) to ``after`` (this run)."""
    if before is None:
        return KINDS[6]
    if after is None:
        return KINDS[5]
    was, now = before["verdict"], after["verdict"]
    if now == "foul" and was != "foul":
        return NEW_FOUL
    if was == "foul" and now != "foul":
        return KINDS[1]
    if now == "referee" and was != "referee":
        return KINDS[2]
    if was == "referee" and now != "referee":
        return KINDS[3]
    return KINDS[4]


def rows_of(
    recording: str,
    lines: list[tuple[str, Line]],
    shots: dict[int, str],
    baseline: list[Line] | None,
    baseline_shots: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """The Parquet rows of one recording.

    ``lines``: (part, final verdict line) in stream order; ``shots``: each
    shot's events as a JSON array (written as they are).  ``baseline``: its
    verdict lines (``None``: no baseline for this recording, so nothing can
    be called a change); ``baseline_shots``: its events, where it has them.
    """
    got = [line | {"kind": "verdict", "part": part} for part, line in lines]
    rows = []
    for row in compare(baseline or [], got).rows:
        after, before = row.got, row.expected
        shot = (after or before or {}).get("shot")
        change = None if baseline is None or row.ok else kind(before, after)
        rows.append(
            {
                "recording": recording,
                "part": (after or {}).get("part"),
                "key": row.shot,
                "shot": shot,
                "t_us": (after or {}).get("t_us"),
                "player": (after or {}).get("player"),
                **_verdict("", after),
                **_verdict("baseline_", before),
                "change": change,
                "events": _events(shots, shot if after is not None else None),
                # the picture before, for a changed shot only: the rest would double the size
                "baseline_events": _events(baseline_shots or {}, shot) if change else None,
            }
        )
    return rows


def _verdict(prefix: str, line: Line | None) -> dict[str, Any]:
    line = line or {}
    return {
        f"{prefix}verdict": line.get("verdict"),
        f"{prefix}rules": list(line["rules"]) if line.get("rules") is not None else None,
        f"{prefix}clause": line.get("satisfied"),
        f"{prefix}reason": line.get("reason"),
    }


def _events(shots: dict[int, str], shot: int | None) -> str | None:
    return shots.get(shot) if shot is not None else None


def line_of(row: dict[str, Any], prefix: str = "") -> Line | None:
    """A row's verdict back as a verdict line (``prefix="baseline_"``: the baseline's)."""
    if row.get(f"{prefix}verdict") is None:
        return None
    return {
        "kind": "verdict",
        "shot": row.get("shot"),
        "player": row.get("player") if not prefix else None,
        "t_us": row.get("t_us"),
        "verdict": row[f"{prefix}verdict"],
        "rules": list(row.get(f"{prefix}rules") or []),
        "satisfied": row.get(f"{prefix}clause"),
        "reason": row.get(f"{prefix}reason") or "",
    }
