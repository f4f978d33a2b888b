"""The corpus' expectations on the smaller sensor sets: RULES.md's sensor table, shot by shot.

Truth lines are written by hand here (the shape ``simulate --truth`` writes),
so these tests pin down how an intended verdict becomes ``referee`` without
ever asking the rules engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from hil_tests.make_corpus import expected_verdicts

T0 = 10_000_000  # µs; each shot starts a second after the last


def shot(n: int, intended: tuple[str, list[str], str | None], *events: tuple) -> list[dict]:
    """One shot's truth: a 1 ms stroke of ball 0, then ``(dt_us, type, keys)`` events, its verdict."""
    t = T0 + n * 1_000_000
    lines: list[dict[str, Any]] = [
        {"t_us": t, "type": "shot_start", "shot": n, "cue_ball": 0},
        {"t_us": t, "type": "cue_contact", "shot": n, "ball": 0, "duration_us": 1000},
    ]
    for dt, kind, keys in events:
        lines.append({"t_us": t + dt, "type": kind, "shot": n, **keys})
    verdict, rules, satisfied = intended
    lines.append(
        {"t_us": t + 900_000, "kind": "verdict", "shot": n, "verdict": verdict, "rules": rules}
        | ({"satisfied": satisfied} if satisfied else {})
    )
    return lines


def hit(dt: int = 20_000) -> tuple:
    return (dt, "ball_contact", {"balls": [0, 7]})


def pot(dt: int = 300_000) -> tuple:
    return (dt, "pocket", {"ball": 7, "pocket": 1})


def cushion(c: int, dt: int) -> tuple:
    return (dt, "cushion", {"ball": 7, "cushion": c})


BREAK = shot(1, ("legal", [], "12.1(1)"), hit(), pot())  # the first shot after a boot
PUSH = shot(2, ("foul", ["19.1"], None), hit(500), pot())  # tip still on at the contact
EXCEPTION_19_2 = shot(2, ("legal", [], "20(1)"), hit(500), pot())  # the same overlap, no push
CUSHIONS = shot(2, ("legal", [], "20(2)(a)"), hit(), cushion(1, 200_000), cushion(3, 600_000))


def verdict(n: int | None, v: str, rules: list[str], satisfied: str | None = None) -> dict:
    return {"shot": n, "verdict": v, "rules": rules, "satisfied": satisfied}


REF_MIN = verdict(2, "referee", ["19.1", "20"])

# name, shot 2's truth, expected on full, middle, minimum
CASES = [
    ("pot after the first contact", shot(2, ("legal", [], "20(1)"), hit(), pot()),
     verdict(2, "legal", [], "20(1)"), verdict(2, "legal", [], "20(1)"), REF_MIN),
    ("pot before any contact", shot(2, ("legal", [], "20(2)(a)"), pot(10_000), hit(), cushion(1, 50_000), cushion(2, 90_000)),
     verdict(2, "legal", [], "20(2)(a)"), verdict(2, "referee", ["20"]), REF_MIN),
    ("cushions by ball: tracker only", CUSHIONS,
     verdict(2, "legal", [], "20(2)(a)"), verdict(2, "referee", ["20"]), REF_MIN),
    ("no contact at all", shot(2, ("foul", ["20"], None), cushion(1, 200_000)),
     verdict(2, "foul", ["20"]), verdict(2, "foul", ["20"]), REF_MIN),
    ("push: timed by the clicks", PUSH,
     verdict(2, "foul", ["19.1"]), verdict(2, "foul", ["19.1"]), REF_MIN),
    ("19.2 exception: tracker only", EXCEPTION_19_2,
     verdict(2, "legal", [], "20(1)"), verdict(2, "referee", ["19.2"]), REF_MIN),
    ("double hit: every set", shot(2, ("foul", ["18"], None), (5000, "cue_contact", {"ball": 0, "duration_us": 1000}), hit(), pot()),
     verdict(2, "foul", ["18"]), verdict(2, "foul", ["18"]), verdict(2, "foul", ["18"])),
    ("17 inside a shot: tracker only", shot(2, ("foul", ["17"], None), hit(), pot()),
     verdict(2, "foul", ["17"]), verdict(2, "legal", [], "20(1)"), REF_MIN),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "second", "full", "middle", "minimum"), CASES, ids=[c[0] for c in CASES]
)
def test_each_sensor_set_expects_what_rules_md_says(
    name: str, second: list[dict], full: dict, middle: dict, minimum: dict
) -> None:
    truth = [{"t_us": T0, "type": "boot", "shot": None}, *BREAK, *second]
    for sensors, want in (("full", full), ("middle", middle), ("minimum", minimum)):
        assert expected_verdicts(truth, sensors)[1] == want, sensors


@pytest.mark.parametrize(
    ("sensors", "want"),
    [
        ("full", verdict(1, "legal", [], "12.1(1)")),
        ("middle", verdict(1, "legal", [], "12.1(1)")),
        ("minimum", verdict(1, "referee", ["12.1", "19.1"])),
    ],
)
def test_without_a_tracker_the_first_shot_after_a_boot_is_judged_as_a_break(
    sensors: str, want: dict
) -> None:
    truth = [{"t_us": T0, "type": "boot", "shot": None}, *BREAK]
    assert expected_verdicts(truth, sensors) == [want]


@pytest.mark.parametrize(("sensors", "kept"), [("full", 1), ("middle", 0), ("minimum", 0)])
def test_a_touched_ball_between_shots_needs_the_tracker(sensors: str, kept: int) -> None:
    touched = {"t_us": T0, "kind": "verdict", "shot": None, "verdict": "foul", "rules": ["17"]}
    assert len(expected_verdicts([touched], sensors)) == kept
