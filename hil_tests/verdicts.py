"""Verdicts as the corpus compares them, and the shot-by-shot table a failure prints.

Pure: no pytest, no I/O.  Both the pytest plugin and ``make_corpus`` (which
writes ``xfail`` reasons) use it, so a reason in an expectation file reads
exactly like the failure it stands for.

>>> got = [{"kind": "verdict", "shot": 1, "verdict": "foul", "rules": ["18"], "reason": "two tips"}]
>>> cmp = compare([{"shot": 1, "verdict": "legal", "rules": [], "satisfied": "20(1)"}], got)
>>> cmp.ok, cmp.first_difference()
(False, 'shot 1: expected legal 20(1), got foul 18 (two tips)')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Line = dict[str, Any]


def final_verdicts(lines: list[Line]) -> list[Line]:
    """The verdict lines that decide shots: early announcements are repeated later, so dropped."""
    return [line for line in lines if line.get("kind") == "verdict" and not line.get("early")]


def decided(line: Line) -> Line:
    """What the corpus compares of a verdict line: ``shot``, ``verdict``, ``rules``, ``satisfied``."""
    return {
        "shot": line["shot"],
        "verdict": line["verdict"],
        "rules": list(line["rules"]),
        "satisfied": line.get("satisfied"),
    }


def summary(verdict: Line | None) -> str:
    """``foul 19.1``, ``referee 12.1,19.1``, ``legal 20(1)``, or ``-`` for no verdict at all."""
    if verdict is None:
        return "-"
    if verdict["verdict"] == "legal":
        return f"legal {verdict.get('satisfied') or '?'}"
    return f"{verdict['verdict']} {','.join(verdict['rules'])}"


def _key(verdict: Line) -> tuple[str, ...]:
    return (
        verdict["verdict"],
        *verdict["rules"],
        "|",
        verdict.get("satisfied") or "",
    )


def _by_shot(verdicts: list[Line]) -> dict[str, Line]:
    """Shots by number; verdicts outside a shot (item 17, keypad calls) as ``-1``, ``-2``, ..."""
    out: dict[str, Line] = {}
    loose = 0
    for verdict in verdicts:
        if verdict["shot"] is None:
            loose += 1
            out[f"-{loose}"] = verdict
        else:
            key = str(verdict["shot"])
            while key in out:  # a second verdict for one shot is a row of its own
                key += "'"
            out[key] = verdict
    return out


@dataclass
class Row:
    shot: str
    expected: Line | None
    got: Line | None

    @property
    def ok(self) -> bool:
        if self.expected is None or self.got is None:
            return self.expected is self.got
        return _key(self.expected) == _key(self.got)

    @property
    def label(self) -> str:
        return f"shot {self.shot}" if not self.shot.startswith("-") else "outside a shot"


@dataclass
class Comparison:
    rows: list[Row]

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    @property
    def failures(self) -> list[Row]:
        return [row for row in self.rows if not row.ok]

    def first_difference(self) -> str:
        """One line naming the first shot that differs (an ``xfail`` reason)."""
        row = self.failures[0]
        reason = f" ({row.got['reason']})" if row.got and row.got.get("reason") else ""
        return f"{row.label}: expected {summary(row.expected)}, got {summary(row.got)}{reason}"

    def table(self) -> str:
        """Every shot, expected beside got, a ``!!`` on the ones that differ, and the reasons."""
        head = ("", "shot", "expected", "got", "reason given")
        body = [
            (
                "  " if row.ok else "!!",
                row.shot if not row.shot.startswith("-") else "-",
                summary(row.expected),
                summary(row.got),
                (row.got or {}).get("reason", ""),
            )
            for row in self.rows
        ]
        widths = [max(len(r[i]) for r in (head, *body)) for i in range(4)]
        return "\n".join(
            " ".join(cell.ljust(w) for cell, w in zip(r[:4], widths, strict=True)) + " " + r[4]
            for r in (head, *body)
        ).rstrip()


def compare(expected: list[Line], got_lines: list[Line]) -> Comparison:
    """Expected verdicts (``shot``, ``verdict``, ``rules``, ``satisfied``) against a replay's lines."""
    want, got = _by_shot(expected), _by_shot(final_verdicts(got_lines))
    keys = list(want) + [k for k in got if k not in want]
    return Comparison([Row(k, want.get(k), got.get(k)) for k in keys])
