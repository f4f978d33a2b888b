"""The corpus' expectations on the smaller sensor sets: RULES.md's sensor table, shot by shot.

Truth lines are written by hand here (the shape ``simulate --truth`` writes),
so these tests pin down how an intended verdict becomes ``referee`` without
ever asking the rules engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from hil_tests.make_corpus import expected_verdicts

T0 = 10_000_000  # µs
GAP = 10_000_000  # µs from one stroke to the next: past any quiet-period end estimate


def shot(n: int, intended: tuple[str, list[str], str | None], *events: tuple) -> list[dict]:
    """One shot's truth: a 1 ms stroke of ball 0, then ``(dt_us, type, keys)`` events, its verdict."""
    t = T0 + n * GAP
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


def placed(lines: list[dict], gap_mm: float) -> list[dict]:
    """The shot with the truth's positions: ball 7 ``gap_mm`` from the cue ball."""
    balls = {"0": [1000.0, 800.0], "7": [1000.0 + 68.0 + gap_mm, 800.0]}
    return [line | {"balls": balls} if line.get("type") == "shot_start" else line for line in lines]


# struck before the last ball of the shot before had stopped
EARLY = shot(2, ("foul", ["14.2"], None), hit(), cushion(1, 200_000))
NEAR_19_2 = placed(shot(2, ("legal", [], "20(1)"), hit(4000), pot()), 4.7)  # 19.2(1) excused it
FAR = placed(shot(2, ("legal", [], "20(1)"), hit(4000), pot()), 30.0)
FAR_LATE = placed(shot(2, ("legal", [], "20(1)"), hit(6000), pot()), 30.0)


def verdict(n: int | None, v: str, rules: list[str], satisfied: str | None = None) -> dict:
    return {"shot": n, "verdict": v, "rules": rules, "satisfied": satisfied}


REF_MIN = verdict(2, "referee", ["19.1", "20"])

# name, shot 2's truth, expected on full, middle, minimum
CASES = [
    ("pot after the first contact", shot(2, ("legal", [], "20(1)"), hit(), pot()),
     verdict(2, "legal", [], "20(1)"), verdict(2, "legal", [], "20(1)"), REF_MIN),
    ("a pot after the shot's first quiet period: the middle set's shot has ended",
     shot(2, ("legal", [], "20(1)"), hit(), pot(20_000 + 4_100_000)),
     verdict(2, "legal", [], "20(1)"), verdict(2, "referee", ["20"]), REF_MIN),
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
    ("14.2: the end of a shot is an estimate below the full set", EARLY,
     verdict(2, "foul", ["14.2"]), verdict(2, "referee", ["14.2", "20"]),
     verdict(2, "referee", ["14.2", "19.1", "20"])),
    ("14.2 beside a certain foul", shot(2, ("foul", ["14.2", "18"], None), (5000, "cue_contact", {"ball": 0, "duration_us": 1000}), hit(), pot()),
     verdict(2, "foul", ["14.2", "18"]), verdict(2, "foul", ["18"]), verdict(2, "foul", ["18"])),
    ("19.2: a near first contact, the tip long gone", NEAR_19_2,
     verdict(2, "legal", [], "20(1)"), verdict(2, "referee", ["19.2"]), REF_MIN),
    ("the same timing, the ball far: not 19.2, but only the tracker can tell", FAR,
     verdict(2, "legal", [], "20(1)"), verdict(2, "referee", ["19.2"]), REF_MIN),
    ("not 19.2: the ball far, met after the middle set's near-contact time", FAR_LATE,
     verdict(2, "legal", [], "20(1)"), verdict(2, "legal", [], "20(1)"), REF_MIN),
    ("cut short before any clause: open on every set", shot(2, ("referee", ["20"], None), hit()),
     verdict(2, "referee", ["20"]), verdict(2, "referee", ["20"]), REF_MIN),
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


# the cue ball alone, to cushion 1
NO_CONTACT = shot(2, ("foul", ["20"], None), cushion(1, 200_000))


@pytest.mark.parametrize(
    ("click_after_us", "want"),
    [
        (None, verdict(2, "foul", ["20"])),
        (2_000_000, verdict(2, "referee", ["20"])),  # within the quiet period after cushion 1
        (4_100_000, verdict(2, "referee", ["20"])),  # ... which runs 4 s from the last activity
        (4_300_000, verdict(2, "foul", ["20"])),  # after the middle set ended the shot
        (-500_000, verdict(2, "foul", ["20"])),  # before the stroke
    ],
)
def test_a_false_click_leaves_no_contact_open_on_the_middle_set(
    click_after_us: int | None, want: dict
) -> None:
    """A false click (ICD §7: about one a minute) heard while the middle set still counts the
    shot as running: nothing without a tracker tells it from a contact (seed 563, shot 20)."""
    truth = [{"t_us": T0, "type": "boot", "shot": None}, *BREAK, *NO_CONTACT]
    stroke = T0 + 2 * GAP
    clicks = [] if click_after_us is None else [stroke + click_after_us]
    assert expected_verdicts(truth, "middle", clicks)[1] == want
    assert expected_verdicts(truth, "full", clicks)[1] == verdict(2, "foul", ["20"])
    assert expected_verdicts(truth, "minimum", clicks)[1] == REF_MIN


@pytest.mark.parametrize(
    ("clicks_after_break_us", "want_middle"),
    [
        ((), verdict(2, "legal", [], "20(1)")),
        # 4.0 s: within the estimate (pot + 4 s), which now runs to 8.0 s; 7.5 s: to 11.5 s
        ((4_000_000, 7_500_000), verdict(2, "referee", ["14.2"])),
        ((4_000_000,), verdict(2, "legal", [], "20(1)")),  # its estimate ends before the stroke
        ((5_500_000, 7_500_000), verdict(2, "legal", [], "20(1)")),  # the break had ended
    ],
)
def test_a_false_click_in_the_pause_makes_the_next_stroke_early_to_the_middle_set(
    clicks_after_break_us: tuple[int, ...], want_middle: dict
) -> None:
    """The break's last activity is its pot, 0.3 s after its stroke; the next stroke comes
    10 s after that stroke.  A false click heard in the pause is activity to a set without
    a tracker: until 4 s after it, the balls may still be rolling for all it knows."""
    second = shot(2, ("legal", [], "20(1)"), hit(), pot())
    truth = [{"t_us": T0, "type": "boot", "shot": None}, *BREAK, *second]
    clicks = [T0 + GAP + dt for dt in clicks_after_break_us]
    assert expected_verdicts(truth, "middle", clicks)[1] == want_middle
    assert expected_verdicts(truth, "full", clicks)[1] == verdict(2, "legal", [], "20(1)")


def test_a_stroke_within_the_quiet_period_is_early_to_both_smaller_sets() -> None:
    """Shot 2 struck 3 s after the break's pot: the truth saw every ball stop, the rails,
    pockets, lines and clicks cannot tell, so 14.2 is open below the full set."""
    second = shot(2, ("legal", [], "20(1)"), hit(), pot())
    soon = [line | {"t_us": line["t_us"] - GAP + 3_300_000} for line in second]
    truth = [{"t_us": T0, "type": "boot", "shot": None}, *BREAK, *soon]
    assert expected_verdicts(truth, "full")[1] == verdict(2, "legal", [], "20(1)")
    assert expected_verdicts(truth, "middle")[1] == verdict(2, "referee", ["14.2"])
    assert expected_verdicts(truth, "minimum")[1] == verdict(2, "referee", ["14.2", "19.1", "20"])
