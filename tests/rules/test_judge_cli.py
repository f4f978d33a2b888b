"""``firmware-host judge``: the clause tables through the command, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rules_cases.cases import CLAUSES
from rules_cases.cli import firmware_host
from rules_cases.events import verdicts

GAP = 10_000_000_000  # µs between concatenated matches, so one file stays in time order


def judge_cli(text: str):
    return firmware_host("judge", "-", stdin=text)


def jsonl(events: list[dict]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def shifted(event: dict, dt: int) -> dict:
    """``event`` ``dt`` µs later, the times in its paths included (19.2(1) reads them)."""
    out = event | {"t_us": event["t_us"] + dt}
    if "paths" in event:
        out["paths"] = {b: [[t + dt, x, y] for t, x, y in p] for b, p in event["paths"].items()}
    return out


def test_judge_reproduces_every_clause_case() -> None:
    """All free-discipline clause cases in one file, one match after another."""
    cases = [c for c in CLAUSES if c.config is None]
    events, expected = [], []
    for i, case in enumerate(cases):
        match = case.build().events
        events += [shifted(e, i * GAP) for e in match]
        expected += [(v["verdict"], v["rules"], v.get("satisfied")) for v in verdicts(match)]
    done = judge_cli(jsonl(events))
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [
        (v["verdict"], v["rules"], v.get("satisfied")) for v in got if v["kind"] == "verdict"
    ] == expected


def test_judge_reads_a_file_and_takes_the_discipline(tmp_path: Path) -> None:
    combined = next(c for c in CLAUSES if c.config is not None and c.verdict == "foul")
    path = tmp_path / "events.jsonl"
    path.write_text(jsonl(combined.build().events))
    done = firmware_host("judge", str(path), "--discipline", "combined")
    assert json.loads(done.stdout.splitlines()[-1])["rules"] == list(combined.rules)


GOOD = {"t_us": 100, "type": "boot", "shot": None, "nodes": ["hub", "rails", "pockets", "cue"]}


@pytest.mark.parametrize(
    ("name", "lines", "message"),
    [
        ("not JSON", [json.dumps(GOOD), "{not json"], "line 2: not JSON"),
        ("not an object", [json.dumps(GOOD), "[1, 2]"], "line 2: not a JSON object"),
        ("no t_us", [json.dumps(GOOD), json.dumps({"type": "cushion"})], "line 2: no 't_us'"),
        ("no type", [json.dumps({"t_us": 5})], "line 1: no 'type'"),
        (
            "a cushion without its keys",
            [json.dumps({"t_us": 5, "type": "cushion"})],
            "line 1: no 'ball', 'cushion'",
        ),
        (
            "t_us not an integer",
            [json.dumps({"t_us": "5", "type": "boot"})],
            "line 1: t_us '5' is not an integer",
        ),
        (
            "out of time order",
            [json.dumps(GOOD), "", json.dumps(GOOD | {"t_us": 99})],
            "line 3: t_us 99 is earlier",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_line_and_exit_2(
    name: str, lines: list[str], message: str
) -> None:
    done = judge_cli("\n".join(lines) + "\n")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert message in done.stderr


def test_missing_file_is_exit_2() -> None:
    done = firmware_host("judge", "/nonexistent/events.jsonl")
    assert done.returncode == 2 and "/nonexistent/events.jsonl" in done.stderr
