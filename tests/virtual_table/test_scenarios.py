"""Every named scenario's ground truth shows the situation it is named after.

The verdicts a scenario promises are the yardstick the rules engine is
measured with, so each is checked twice: the intended verdict (this file's
table, written from the rules, not from the code) and the situation itself
read straight off the truth events (the order of contacts, cushions and
crossings; the stroke's angle; the tip's overlap with the first contact).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from firmware_host.virtual_table.match import random_match
from firmware_host.virtual_table.physics_truth import Shot
from firmware_host.virtual_table.physics_verdicts import judge_truth
from firmware_host.virtual_table.scenarios import (
    NEIGHBOUR_DEG,
    NEIGHBOUR_SPEED,
    SCENARIOS,
    Design,
    neighbours,
    one_shot,
    pot_layout,
    strokes,
)
from firmware_host.virtual_table.truth import MatchTruth
from protocol.geometry import DEFAULT_TABLE
from rules.config import SENSOR_NODES
from rules.rack import rack_positions
from rules.referee import Referee

T = DEFAULT_TABLE
D = T.ball_mm
Event = dict[str, Any]


@functools.cache
def truth_of(name: str) -> MatchTruth:
    return SCENARIOS[name]()


# ---------------------------------------------------------------- reading the truth


def shot_events(truth: MatchTruth, shot: int = 1) -> list[Event]:
    return [e for e in truth.events if e["shot"] == shot]


def start(truth: MatchTruth, shot: int = 1) -> Event:
    return next(e for e in shot_events(truth, shot) if e["type"] == "shot_start")


def first_contact_index(events: list[Event], cue: int) -> int:
    return next(
        i for i, e in enumerate(events) if e["type"] == "ball_contact" and cue in e["balls"]
    )


def after_first(truth: MatchTruth, shot: int = 1) -> list[Event]:
    events = shot_events(truth, shot)
    return events[first_contact_index(events, start(truth, shot)["cue_ball"]) + 1 :]


def before_first(truth: MatchTruth, shot: int = 1) -> list[Event]:
    events = shot_events(truth, shot)
    return events[: first_contact_index(events, start(truth, shot)["cue_ball"])]


def cushion(
    ball: int | None = None, which: Callable[[int], bool] = lambda c: True
) -> Callable[[Event], bool]:
    return lambda e: (
        e["type"] == "cushion" and (ball is None or e["ball"] == ball) and which(e["cushion"])
    )


def crosses(ball: int | None = None) -> Callable[[Event], bool]:
    return lambda e: (
        e["type"] == "line_cross" and e["line"] == "centre" and (ball is None or e["ball"] == ball)
    )


def contact(a: int, b: int) -> Callable[[Event], bool]:
    return lambda e: e["type"] == "ball_contact" and set(e["balls"]) == {a, b}


def pocket(e: Event) -> bool:
    return e["type"] == "pocket"


def in_order(events: list[Event], *steps: Callable[[Event], bool]) -> bool:
    """The steps happen in this order (other events may come between)."""
    k = 0
    for e in events:
        if k < len(steps) and steps[k](e):
            k += 1
    return k == len(steps)


def chain(
    events: list[Event],
    x: int,
    y: int,
    first: Callable[[int], Callable[[Event], bool]],
    then: Callable[[int], Callable[[Event], bool]],
) -> bool:
    return in_order(events, first(x), contact(x, y), then(y))


def object_cushioned(truth: MatchTruth) -> set[int]:
    return {e["ball"] for e in after_first(truth) if e["type"] == "cushion" and e["ball"] != 0}


def frozen_at_start(truth: MatchTruth, ball: int) -> list[int]:
    return start(truth)["frozen"].get(str(ball), [])


def line_of_centres(truth: MatchTruth) -> tuple[np.ndarray, np.ndarray, float]:
    balls = start(truth)["balls"]
    cue, obj = np.array(balls["0"]), np.array(balls["1"])
    dist = float(np.linalg.norm(obj - cue))
    return cue, (obj - cue) / dist, dist


def stroke_off_line_deg(truth: MatchTruth) -> float:
    _, u, _ = line_of_centres(truth)
    a = math.radians(truth.strokes[0]["angle_deg"])
    return math.degrees(math.acos(float(np.clip(math.cos(a) * u[0] + math.sin(a) * u[1], -1, 1))))


def initial_direction_off_line_deg(truth: MatchTruth, mm: float = 3.0) -> float:
    """The cue ball's real direction over its first few millimetres, off the line of centres."""
    cue, u, _ = line_of_centres(truth)
    t0 = start(truth)["t_s"]
    t = t0 + np.linspace(0.0, 0.05, 5001)
    xy, _, _ = truth.sample(t)
    moved = np.linalg.norm(xy[:, 0] - cue, axis=1)
    d = xy[np.argmax(moved >= mm), 0] - cue
    return math.degrees(math.acos(float(np.clip(d @ u / np.linalg.norm(d), -1, 1))))


def cue_forward_mm(truth: MatchTruth) -> float:
    """19.2(2) "не прошел вперед": how far the cue ball went along the line of centres after
    the collision, from where it met the ball (sampled finely off the exact motion)."""
    cue, u, _ = line_of_centres(truth)
    end = next(e for e in shot_events(truth) if e["type"] == "shot_end")
    t = np.linspace(first_contact_time(truth), end["t_s"], 20001)
    xy, _, present = truth.sample(t)
    along = (xy[present[:, 0], 0] - cue) @ u
    return float(along.max() - along[0])


def first_contact_time(truth: MatchTruth) -> float:
    events = shot_events(truth)
    return events[first_contact_index(events, start(truth)["cue_ball"])]["t_s"]


def tip_overlaps_first_contact(truth: MatchTruth) -> bool:
    events = shot_events(truth)
    tip = next(e for e in events if e["type"] == "cue_contact")
    first = events[first_contact_index(events, start(truth)["cue_ball"])]
    return tip["t_s"] <= first["t_s"] <= tip["t_s"] + tip["duration_us"] / 1e6


def gap_mm(truth: MatchTruth) -> float:
    _, _, dist = line_of_centres(truth)
    return dist - D


def early_shot_situation(truth: MatchTruth) -> bool:
    end1 = next(e for e in truth.events if e["type"] == "shot_end" and e["shot"] == 1)
    start2 = start(truth, 2)
    _, state, present = truth.sample(np.array([start2["t_s"] - 1e-6]))
    return end1["interrupted"] and end1["t_s"] == start2["t_s"] and bool(state[0][present[0]].any())


def nudge_situation(truth: MatchTruth) -> bool:
    moved = [e for e in truth.events if e["type"] == "ball_moved"]
    end1 = next(e for e in truth.events if e["type"] == "shot_end")
    rests = [e for e in truth.events if e["type"] == "rest" and e["t_s"] > moved[0]["t_s"]]
    return (
        len(moved) == 1
        and moved[0]["shot"] is None
        and moved[0]["t_s"] > end1["t_s"]
        and bool(rests)
    )


def declared_before_shot(truth: MatchTruth) -> bool:
    keys = [e for e in truth.events if e["type"] == "keypad" and e["key"] == "declare_frozen"]
    return bool(keys) and keys[0]["arg"] == 1 and keys[0]["t_s"] < start(truth)["t_s"]


def cue_contacts(truth: MatchTruth) -> int:
    return sum(1 for e in shot_events(truth) if contact(0, 1)(e))


def cue_goes_on(truth: MatchTruth) -> bool:
    """After the frozen ball, the cue ball reaches a cushion other than that ball's, or the centre line."""
    rest = frozen_at_start(truth, 1)
    return any(cushion(0, lambda c: c not in rest)(e) or crosses(0)(e) for e in after_first(truth))


def drives_to_cushion(truth: MatchTruth, same: bool) -> bool:
    """Some ball rebounds off a cushion, meets another, which then reaches that (or another) cushion."""

    def piece(c1: int, equal: bool) -> Callable[[int], bool]:
        return lambda c: (c == c1) == equal

    return any(
        in_order(
            after_first(truth),
            cushion(x, piece(c1, True)),
            contact(x, y),
            cushion(y, piece(c1, same)),
        )
        for x in range(16)
        for y in range(16)
        for c1 in range(6)
        if x != y
    )


def no_result(events: list[Event]) -> bool:
    return not any(e["type"] in ("cushion", "pocket") or crosses()(e) for e in events)


# ---------------------------------------------------------------- the table

LEGAL = "legal"
FOUL = "foul"

CASES: dict[str, tuple[list[tuple[Any, ...]], Callable[[MatchTruth], bool]]] = {
    "break_12_1_1": (
        [(1, LEGAL, (), "12.1(1)")],
        lambda t: t.strokes[0]["break"] and any(map(pocket, after_first(t))),
    ),
    "break_12_1_2": (
        [(1, LEGAL, (), "12.1(2)")],
        lambda t: len(object_cushioned(t)) >= 3 and not any(map(pocket, after_first(t))),
    ),
    "break_12_1_3": (
        [(1, LEGAL, (), "12.1(3)")],
        lambda t: (
            len(object_cushioned(t)) == 2
            and any(crosses()(e) and e["ball"] != 0 for e in after_first(t))
            and not any(map(pocket, after_first(t)))
        ),
    ),
    "break_illegal": (
        [(1, FOUL, ("12.1",), None)],
        lambda t: len(object_cushioned(t)) < 2 and not any(map(pocket, after_first(t))),
    ),
    "coloured_outside_11_3": (
        [(1, FOUL, ("11.3",), None)],
        lambda t: (
            not T.in_house(start(t)["balls"]["0"][0])
            and any(
                v["kind"] == "notice" and v["rules"] == ["11.3"] and v["t_s"] < start(t)["t_s"]
                for v in t.verdicts
            )
        ),
    ),
    "incomplete_rack": (
        [(1, LEGAL, (), "12.1(2)")],
        lambda t: (
            sorted(tuple(xy) for b, xy in start(t)["balls"].items() if b != "0")
            == sorted((round(x, 1), round(y, 1)) for x, y in rack_positions(10, T))
        ),
    ),
    "push": (
        [(1, FOUL, ("19.1",), None)],
        lambda t: tip_overlaps_first_contact(t) and gap_mm(t) >= 10.0,
    ),
    "push_19_2_45deg": (
        [(1, LEGAL, (), "20(1)")],
        lambda t: (
            tip_overlaps_first_contact(t)
            and gap_mm(t) < 0.5
            and stroke_off_line_deg(t) >= 45.0
            and initial_direction_off_line_deg(t) >= 45.0
        ),
    ),
    "push_19_2_45deg_fail": (
        [(1, FOUL, ("19.2",), None)],
        lambda t: (
            tip_overlaps_first_contact(t)
            and stroke_off_line_deg(t) < 45.0
            and initial_direction_off_line_deg(t) < 45.0
            and cue_forward_mm(t) > 50.0
        ),
    ),
    "push_19_2_no_follow": (
        [(1, LEGAL, (), "20(1)")],
        lambda t: (
            tip_overlaps_first_contact(t)
            and stroke_off_line_deg(t) < 1.0
            and 0.0 < cue_forward_mm(t) < 5.0  # the draw's creep, within FOLLOW_MM
        ),
    ),
    "push_19_2_no_follow_fail": (
        [(1, FOUL, ("19.2",), None)],
        lambda t: (
            tip_overlaps_first_contact(t)
            and stroke_off_line_deg(t) < 1.0
            and cue_forward_mm(t) > 50.0
        ),
    ),
    "double_hit": (
        [(1, FOUL, ("18",), None)],
        lambda t: (
            [
                round(e["t_s"] - start(t)["t_s"], 6)
                for e in shot_events(t)
                if e["type"] == "cue_contact"
            ]
            == [0.0, 0.025]
        ),
    ),
    "item20_1": ([(1, LEGAL, (), "20(1)")], lambda t: any(map(pocket, after_first(t)))),
    "item20_1_fail": ([(1, FOUL, ("20",), None)], lambda t: no_result(shot_events(t))),
    "item20_2a": (
        [(1, LEGAL, (), "20(2)(a)")],
        lambda t: in_order(
            after_first(t), cushion(1, lambda c: c == 1), cushion(1, lambda c: c != 1)
        ),
    ),
    "item20_2a_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            sum(map(cushion(), after_first(t))) == 1 and not any(map(crosses(), after_first(t)))
        ),
    ),
    "item20_2b": ([(1, LEGAL, (), "20(2)(b)")], lambda t: drives_to_cushion(t, same=False)),
    "item20_2b_fail": ([(1, FOUL, ("20",), None)], lambda t: drives_to_cushion(t, same=True)),
    "item20_2c": (
        [(1, LEGAL, (), "20(2)(c)")],
        lambda t: (
            frozen_at_start(t, 2) == [0]
            and chain(
                after_first(t),
                1,
                2,
                lambda x: cushion(x, lambda c: c == 1),
                lambda y: lambda e: True,
            )
        ),
    ),
    "item20_2c_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            frozen_at_start(t, 2) == [1]
            and chain(
                after_first(t),
                1,
                2,
                lambda x: cushion(x, lambda c: c == 1),
                lambda y: lambda e: True,
            )
        ),
    ),
    "item20_3a": (
        [(1, LEGAL, (), "20(3)(a)")],
        lambda t: in_order(after_first(t), crosses(1), cushion(1)),
    ),
    "item20_3a_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: any(map(crosses(), after_first(t))) and not any(map(cushion(), after_first(t))),
    ),
    "item20_3b": (
        [(1, LEGAL, (), "20(3)(b)")],
        lambda t: chain(after_first(t), 1, 2, crosses, cushion),
    ),
    "item20_3b_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            chain(after_first(t), 1, 2, crosses, lambda y: lambda e: True)
            and not any(map(cushion(), after_first(t)))
        ),
    ),
    "item20_3c": (
        [(1, LEGAL, (), "20(3)(c)")],
        lambda t: (
            frozen_at_start(t, 2) == [4]
            and chain(after_first(t), 1, 2, crosses, lambda y: lambda e: True)
        ),
    ),
    "item20_3c_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            frozen_at_start(t, 2) == []
            and chain(after_first(t), 1, 2, crosses, lambda y: lambda e: True)
            and not any(map(cushion(), after_first(t)))
        ),
    ),
    "item20_4a": (
        [(1, LEGAL, (), "20(4)(a)")],
        lambda t: in_order(after_first(t), cushion(1), crosses(1)),
    ),
    "item20_4a_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: any(map(cushion(), after_first(t))) and not any(map(crosses(), after_first(t))),
    ),
    "item20_4b": (
        [(1, LEGAL, (), "20(4)(b)")],
        lambda t: chain(after_first(t), 1, 2, cushion, crosses),
    ),
    "item20_4b_fail": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            chain(after_first(t), 1, 2, cushion, lambda y: lambda e: True)
            and not any(map(crosses(), after_first(t)))
        ),
    ),
    # the rebound and the crossing of 20(4)(a) both happen, but the rebound comes before the contact
    "note1_order": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            in_order(before_first(t), cushion(0))
            and in_order(shot_events(t), cushion(0), contact(0, 1), crosses(0))
        ),
    ),
    "note2_two_contacts": (
        [(1, LEGAL, (), "20 note 2")],
        lambda t: frozen_at_start(t, 1) == [1] and cue_contacts(t) >= 2 and cue_goes_on(t),
    ),
    "note2_declared": (
        [(1, LEGAL, (), "20 note 2")],
        lambda t: declared_before_shot(t) and cue_contacts(t) == 1 and cue_goes_on(t),
    ),
    "note2_neither": (
        [(1, FOUL, ("20",), None)],
        lambda t: (
            not any(e["type"] == "keypad" for e in t.events)
            and cue_contacts(t) == 1
            and frozen_at_start(t, 1) == [1]
            and cue_goes_on(t)
        ),
    ),
    "early_shot_14_2": (
        [(1, LEGAL, (), "20(1)"), (2, FOUL, ("14.2",), None)],
        early_shot_situation,
    ),
    "ball_nudged_17": ([(1, LEGAL, (), "20(2)(a)"), (None, FOUL, ("17",), None)], nudge_situation),
}


def test_every_scenario_has_a_case() -> None:
    assert set(SCENARIOS) - {"random"} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_scenario_gives_the_intended_verdicts(name: str) -> None:
    intended, _ = CASES[name]
    truth = truth_of(name)
    got = [
        (v["shot"], v["verdict"], tuple(v["rules"]), v.get("satisfied"))
        for v in truth.verdicts
        if v["kind"] == "verdict"
    ]
    assert got == intended


@pytest.mark.parametrize("name", sorted(CASES))
def test_scenario_truth_shows_the_situation(name: str) -> None:
    _, situation = CASES[name]
    assert situation(truth_of(name))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_truth_keeps_the_contract(name: str) -> None:
    """What the sensor model relies on: order, shot numbering, physics detail, JSON."""
    truth = truth_of(name)
    times = [e["t_s"] for e in truth.events]
    assert times == sorted(times)
    assert truth.duration_s > times[-1]
    json.dumps(truth.events)
    json.dumps(truth.verdicts)
    shots = [e["shot"] for e in truth.events if e["type"] == "shot_start"]
    assert shots == list(range(1, len(shots) + 1))
    assert [e["shot"] for e in truth.events if e["type"] == "shot_end"] == shots
    assert len(truth.strokes) == len(shots)
    for e in truth.events:
        assert "shot" in e
        if e["type"] in ("cushion", "pocket", "ball_contact"):
            assert e["speed_mps"] >= 0.0
        if e["type"] == "cue_contact":
            assert e["ball"] is not None and e["duration_us"] > 0 and e["force_n"] > 0
        if e["type"] in ("cue_contact", "ball_contact", "cushion", "pocket"):
            assert e["shot"] is not None
    moving: dict[int, bool] = {}
    for e in truth.events:
        if e["type"] in ("_ball_start", "_ball_stop"):
            now = e["type"] == "_ball_start"
            assert moving.get(e["ball"], False) != now
            moving[e["ball"]] = now
    assert not any(moving.values())
    # a shot ends when the last ball stops: no ball moves at its shot_end (unless interrupted)
    for end in (e for e in truth.events if e["type"] == "shot_end" and not e["interrupted"]):
        _, state, present = truth.sample(np.array([end["t_s"] + 1e-9]))
        assert not state[0][present[0]].any()
        assert end["certain"] is True and end["paths"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_verdicts_are_what_the_truth_judges(name: str) -> None:
    """The verdicts stored with a truth come back when its events alone are judged again."""
    truth = truth_of(name)
    stored = [v for v in truth.verdicts if v["kind"] == "verdict"]
    assert judge_truth(truth.events, truth.strokes, truth.table) == stored


def test_a_scenario_built_again_later_in_the_process_is_bit_for_bit_the_same() -> None:
    """A capture made from a scenario must not depend on what the process built before it.

    The second round runs in the reverse order, after arrays of odd sizes
    (other alignments for whatever numpy allocates next) and a random match,
    and every float must come back exactly.
    """
    first = {name: truth_of(name) for name in sorted(SCENARIOS)}
    padding = [np.ones(n) for n in (1, 3, 7, 13, 1001)]
    random_match(seed=3, minutes=0.5)
    for name in reversed(first):
        again = SCENARIOS[name]()
        assert (again.strokes, again.events, again.verdicts) == (
            first[name].strokes,
            first[name].events,
            first[name].verdicts,
        ), name
    assert len(padding) == 5


@pytest.mark.parametrize(
    ("speeds", "taken"),
    [
        pytest.param((1.5, 2.0), 2.0, id="edge-skipped-for-inside"),
        pytest.param((2.0, 1.5), 2.0, id="inside-taken-first"),
        pytest.param((1.5,), None, id="only-the-edge"),
    ],
)
def test_a_stroke_is_taken_only_if_its_neighbours_show_the_situation_too(
    speeds: tuple[float, ...], taken: float | None
) -> None:
    """A straight pot whose situation holds from 1.5 m/s up: 1.5 itself sits on the edge."""
    layout, line = pot_layout(250.0)
    design = Design(
        "edge",
        layout,
        one_shot(),
        strokes(0, (line,), speeds),
        [(1, "legal", (), "20(1)")],
        lambda truth: truth.strokes[0]["speed_mps"] >= 1.5,
    )
    if taken is None:
        with pytest.raises(RuntimeError, match="no candidate stroke"):
            design.build()
    else:
        assert design.build().strokes[0]["speed_mps"] == taken


def test_neighbours_turn_and_scale_the_first_stroke_of_a_candidate() -> None:
    shot = Shot(0, 10.0, 2.0, top=0.5)
    got = neighbours((shot, 1.5))
    assert sorted((n[0].angle_deg, n[0].speed_mps) for n in got) == sorted(
        [(10.0 - NEIGHBOUR_DEG, 2.0), (10.0 + NEIGHBOUR_DEG, 2.0)]
        + [(10.0, 2.0 * (1 - NEIGHBOUR_SPEED)), (10.0, 2.0 * (1 + NEIGHBOUR_SPEED))]
    )
    assert all(n[1] == 1.5 and n[0].top == 0.5 for n in got)


def test_random_match_frames_start_from_a_rack() -> None:
    truth = truth_of("random")
    breaks = [s for s in truth.strokes if s["break"]]
    assert breaks and truth.strokes[0]["break"]
    for s in breaks:
        balls = start(truth, s["shot"])["balls"]
        assert sorted(tuple(xy) for b, xy in balls.items() if b != "0") == sorted(
            (round(x, 1), round(y, 1)) for x, y in rack_positions(15, T)
        )
        assert T.in_house(balls["0"][0])
    assert [v["shot"] for v in truth.verdicts if v["kind"] == "verdict"] == [
        s["shot"] for s in truth.strokes
    ]


def perfect_sensor_lines(truth: MatchTruth) -> list[Event]:
    """The truth as a host with perfect sensors would order it: EVENTS.md lines, t_us = true us."""

    def us(t: float) -> int:
        return round(t * 1e6)

    lines = []
    for e in truth.events:
        if e["type"].startswith("_"):
            continue
        line = {k: v for k, v in e.items() if k != "t_s"} | {"t_us": us(e["t_s"])}
        if e["type"] == "boot":
            line |= {"boot_id": 1, "nodes": list(SENSOR_NODES)}
        if e["type"] == "shot_end":
            line["paths"] = {b: [[us(t), x, y] for t, x, y in pts] for b, pts in e["paths"].items()}
        lines.append(line)
    return lines


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_rules_engine_agrees_given_perfect_sensors(name: str) -> None:
    """End to end below the wire: the referee, fed the true events, reaches the intended verdicts."""
    truth = truth_of(name)
    referee = Referee()
    out = [line for event in perfect_sensor_lines(truth) for line in referee.feed(event)]
    out += referee.finish()
    final = {v["shot"]: v for v in out if v.get("kind") == "verdict"}  # an early foul is repeated
    got = [
        (v["shot"], v["verdict"], v["rules"], v.get("satisfied"), v["player"])
        for v in final.values()
    ]
    intended = [
        (v["shot"], v["verdict"], v["rules"], v.get("satisfied"), v["player"])
        for v in truth.verdicts
        if v["kind"] == "verdict"
    ]
    assert got == intended


# ---------------------------------------------------------------- the truth's referee, read by read
# Hand-made shots for physics_verdicts.judge_shot: each reading of the original text
# (docs/virtual-table-physics.md, "Intended verdicts") beside its failing twin.

CUE_XY = (1000.0, 800.0)


def hand_shot(
    gap_mm: float,
    cue_path: list[tuple[float, float, float]],
    *,
    tip_ms: float = 1.0,
    contact_ms: float = 0.0,
    later: tuple[Event, ...] = (),
    frozen: dict[str, list[int]] | None = None,
    extra_balls: dict[str, list[float]] | None = None,
) -> list[Event]:
    """Ball 0 at CUE_XY, ball 1 ``gap_mm`` beyond it along +x; the tip strikes at t = 1 s.

    ``cue_path``: the cue ball's path as ``(ms, dx, dy)`` from the stroke and its start;
    ball 1 is hit ``contact_ms`` after the stroke and then rolls along +x to a pocket
    (item 20(1)), so only the stroke decides."""
    t0 = 1.0
    obj = [CUE_XY[0] + D + gap_mm, CUE_XY[1]]
    balls = {"0": list(CUE_XY), "1": obj, **(extra_balls or {})}

    def ms(m: float) -> float:
        return t0 + m / 1e3

    events: list[Event] = [
        {"type": "shot_start", "t_s": t0, "shot": 1, "cue_ball": 0, "balls": balls,
         "frozen": frozen or {}},
        {"type": "cue_contact", "t_s": t0, "shot": 1, "ball": 0, "duration_us": tip_ms * 1e3},
        {"type": "ball_contact", "t_s": ms(contact_ms), "shot": 1, "balls": [0, 1]},
        *later,
        {"type": "pocket", "t_s": ms(900), "shot": 1, "ball": 1, "pocket": 3},
    ]  # fmt: skip
    path = [[ms(m), CUE_XY[0] + dx, CUE_XY[1] + dy] for m, dx, dy in cue_path]
    events.append(
        {"type": "shot_end", "t_s": ms(1000), "shot": 1, "interrupted": False, "certain": True,
         "paths": {"0": path, "1": [[ms(contact_ms), *obj], [ms(900), obj[0] + 900, obj[1]]]}}
    )  # fmt: skip
    return sorted(events, key=lambda e: e["t_s"])


def judged(events: list[Event], stroke_deg: float = 0.0, **kw: Any) -> tuple[str, list[str]]:
    from firmware_host.virtual_table.physics_verdicts import judge_shot

    j = judge_shot(events, T, is_break=kw.pop("is_break", False), stroke_deg=stroke_deg, **kw)
    return j.verdict, j.rules


STRAIGHT_ON = [(0, 0, 0), (5, 6, 0), (400, 300, 0)]  # follows ball 1 through
STUN = [(0, 0, 0), (2, 0, 0)]  # stops dead at the ball


@pytest.mark.parametrize(
    ("what", "events", "stroke_deg", "want"),
    [
        # 19.2 decides a near ball whatever the tip contact's duration: the contact came
        # 2 ms after a 1 ms tip contact, 4 mm away: "если расстояние ... настолько мало"
        ("near, no overlap, follows", hand_shot(4.0, STRAIGHT_ON, contact_ms=2.0), 0.0,
         ("foul", ["19.2"])),
        ("near, no overlap, stun", hand_shot(4.0, STUN, contact_ms=2.0), 0.0,
         ("legal", [])),
        ("far, overlap: a push", hand_shot(20.0, STRAIGHT_ON, contact_ms=0.5), 0.0,
         ("foul", ["19.1"])),
        ("far, no overlap", hand_shot(20.0, STRAIGHT_ON, contact_ms=5.0), 0.0,
         ("legal", [])),
        # 19.2(1) "не менее 45 градусов": the cue's own direction, 45° itself is legal
        ("45 deg exactly", hand_shot(0.0, STRAIGHT_ON), 45.0, ("legal", [])),
        ("44.9 deg", hand_shot(0.0, STRAIGHT_ON), 44.9, ("foul", ["19.2"])),
        # 19.2(2) "не прошел вперед": from where the balls met, beyond FOLLOW_MM fails
        ("4 mm on", hand_shot(0.0, [(0, 0, 0), (30, 4, 0), (300, -200, 0)]), 0.0,
         ("legal", [])),
        ("6 mm on", hand_shot(0.0, [(0, 0, 0), (30, 6, 0), (300, -200, 0)]), 0.0,
         ("foul", ["19.2"])),
        ("4 mm on after an 8 mm gap",
         hand_shot(8.0, [(0, 0, 0), (3, 8, 0), (30, 12, 0), (300, -200, 0)], contact_ms=3.0),
         0.0, ("legal", [])),
        # drawn back to the cushion behind, then rolling forward past its start: not
        # following the ball ("вслед за прицельным шаром")
        ("back off a cushion, then forward",
         hand_shot(0.0, [(0, 0, 0), (300, -500, 0), (900, 400, 0)],
                   later=({"type": "cushion", "t_s": 1.3, "shot": 1, "ball": 0, "cushion": 0},)),
         0.0, ("legal", [])),
    ],
)  # fmt: skip
def test_the_truth_reads_19_as_the_original_text(
    what: str, events: list[Event], stroke_deg: float, want: tuple[str, list[str]]
) -> None:
    assert judged(events, stroke_deg) == want, what


def test_the_truth_calls_a_white_ball_struck_on_the_break_11_2() -> None:
    events = hand_shot(30.0, STRAIGHT_ON, contact_ms=5.0)
    events[0]["cue_ball"] = 1
    for e in events:
        if e["type"] == "cue_contact":
            e["ball"] = 1
        if e["type"] == "ball_contact":
            e["balls"] = [1, 0]
    assert judged(events, 180.0, is_break=True) == ("foul", ["11.2"])


def test_the_truth_leaves_the_result_of_a_shot_cut_short_to_the_referee() -> None:
    """14.2: cut short before any clause completed: open; after one: legal; a certain foul stays."""
    no_pot = [e for e in hand_shot(30.0, STUN, contact_ms=5.0) if e["type"] != "pocket"]
    assert judged(no_pot, cut_short=True) == ("referee", ["20"])
    assert judged(no_pot) == ("foul", ["20"])
    assert judged(hand_shot(30.0, STUN, contact_ms=5.0), cut_short=True) == ("legal", [])
    pushed = [e for e in hand_shot(20.0, STRAIGHT_ON, contact_ms=0.5) if e["type"] != "pocket"]
    assert judged(pushed, cut_short=True) == ("foul", ["19.1"])


def _note2_later(declared: frozenset[int], second: bool) -> list[Event]:
    """The cue ball meets ball 1 first, then ball 2 resting against cushion 0, and is sent
    on to cushion 3; with ``second`` ball 2 comes back off its cushion and meets it again."""
    ev: list[Event] = [
        {"type": "ball_contact", "t_s": 1.2, "shot": 1, "balls": [0, 2]},
        {"type": "cushion", "t_s": 1.2001, "shot": 1, "ball": 2, "cushion": 0},
    ]
    if second:
        ev.append({"type": "ball_contact", "t_s": 1.25, "shot": 1, "balls": [2, 0]})
    ev.append({"type": "cushion", "t_s": 1.6, "shot": 1, "ball": 0, "cushion": 3})
    events = hand_shot(
        300.0,
        [(0, 0, 0), (200, 0, -300), (600, 500, -300)],
        contact_ms=100.0,
        later=tuple(ev),
        frozen={"2": [0]},
        extra_balls={"2": [CUE_XY[0], CUE_XY[1] - 400.0]},
    )
    return [e for e in events if e["type"] != "pocket"]


@pytest.mark.parametrize(
    ("declared", "second", "want"),
    [
        (frozenset(), True, ("legal", [])),
        (frozenset({2}), False, ("legal", [])),
        (frozenset(), False, ("foul", ["20"])),
    ],
)
def test_the_truth_applies_note_2_to_a_frozen_ball_met_after_another(
    declared: frozenset[int], second: bool, want: tuple[str, list[str]]
) -> None:
    """Note 2 does not say "first": «Если биток бьет по прицельному шару, стоящему вплотную к борту»."""
    from firmware_host.virtual_table.physics_verdicts import judge_shot

    events = _note2_later(declared, second)
    j = judge_shot(events, T, is_break=False, stroke_deg=0.0, declared=declared)
    assert (j.verdict, j.rules) == want
    if want[0] == "legal":
        assert j.satisfied[0] == "20 note 2"


def test_a_path_keeps_the_point_where_a_drawn_cue_ball_turns_back() -> None:
    """push_19_2_no_follow: the stab with draw creeps about 1.3 mm forward off the touching
    ball before it comes back; the path must show it (19.2(2) reads the path), not only
    its chord, which the turn leaves straight."""
    truth = truth_of("push_19_2_no_follow")
    cue, u, _ = line_of_centres(truth)
    end = next(e for e in shot_events(truth) if e["type"] == "shot_end")
    t = np.linspace(end["paths"]["0"][0][0], end["paths"]["0"][0][0] + 0.2, 4001)
    xy, _, _ = truth.sample(t)
    exact = float(((xy[:, 0] - cue) @ u).max())
    on_path = max((x - cue[0]) * u[0] + (y - cue[1]) * u[1] for _, x, y in end["paths"]["0"])
    assert 0.5 < exact < 5.0
    assert abs(on_path - exact) <= 0.1 + 1e-9  # vertices are rounded to 0.1 mm
