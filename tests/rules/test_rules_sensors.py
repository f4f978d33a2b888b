"""The same shots on the minimum, middle and full sensor sets (RULES.md's sensor table).

``referee`` exactly where the sensors present cannot decide, the full set's
verdict everywhere else.  Also: node names and lamp states agree with the
protocol catalogue, and the lamp mapping the daemon uses.
"""

from __future__ import annotations

import pytest
from rules_cases.cases import (
    NEAR,
    STRAIGHT_FOLLOW,
    after_break,
    break_pot,
    break_struck_unknown,
    break_three_cushions,
    double_hit,
    no_contact,
    pot_after_contact,
    push,
    stroke_before_stop,
    struck,
    touched_in_shot,
    touching_stroke,
    two_cushions,
)
from rules_cases.events import FULL, MIDDLE, MINIMUM, seen_by, verdicts

from protocol.catalogue import INDICATOR_STATES, NODE_NAMES
from rules.config import SENSOR_NODES
from rules.indicator import Indicator, indicator_for

FOUL_18 = ("foul", ["18"])
REF_20 = ("referee", ["19.1", "20"])  # minimum set: no first-contact time, push and result open
REF_12 = ("referee", ["12.1", "19.1"])

# name, shot, verdict per set: full, middle (+ lines, acoustic), minimum
SHOTS = [
    (
        "double hit (18): every set",
        double_hit,
        FOUL_18,
        FOUL_18,
        FOUL_18,
    ),
    (
        "push (19.1): needs a ball-contact time",
        push,
        ("foul", ["19.1"]),
        ("foul", ["19.1"]),
        REF_20,
    ),
    (
        "19.2 exception: needs the tracker",
        struck(60.0, NEAR),
        ("legal", []),
        ("referee", ["19.2"]),
        REF_20,
    ),
    (
        "20(1) pot after the first contact: needs its time",
        pot_after_contact,
        ("legal", []),
        ("legal", []),
        REF_20,
    ),
    (
        "20(2)(a): needs which ball hit which cushion",
        two_cushions,
        ("legal", []),
        ("referee", ["20"]),
        REF_20,
    ),
    (
        "no contact: decided once contacts are heard",
        no_contact,
        ("foul", ["20"]),
        ("foul", ["20"]),
        REF_20,
    ),
    (
        "12.1(1) break pot",
        break_pot,
        ("legal", []),
        ("legal", []),
        REF_12,
    ),
    (
        "12.1(2) break cushions",
        break_three_cushions,
        ("legal", []),
        ("referee", ["12.1"]),
        REF_12,
    ),
    (
        "14.2: a foul with the tracker; without, the shot's end was an estimate",
        stroke_before_stop,
        ("foul", ["14.2"]),
        ("referee", ["14.2"]),
        ("referee", ["14.2", "19.1", "20"]),
    ),
    (
        "19.2 touching, the collision reported after the tip left: needs the tracker",
        touching_stroke(STRAIGHT_FOLLOW),
        ("foul", ["19.2"]),
        ("referee", ["19.2"]),
        REF_20,
    ),
    (
        "12.1 with the struck ball unknown: ball 0 is the break's cue ball (11.2)",
        break_struck_unknown,
        ("foul", ["12.1"]),
        ("referee", ["12.1"]),
        REF_12,
    ),
    (
        "17: only the tracker sees a touch",
        touched_in_shot,
        ("foul", ["17"]),
        ("legal", []),
        REF_20,
    ),
]


@pytest.mark.parametrize(
    ("name", "build", "full", "middle", "minimum"), SHOTS, ids=[s[0] for s in SHOTS]
)
def test_sensor_sets_decide_what_rules_md_says(name, build, full, middle, minimum) -> None:
    events = build().events
    for nodes, expected in ((FULL, full), (MIDDLE, middle), (MINIMUM, minimum)):
        verdict = verdicts(seen_by(events, nodes))[-1]
        assert (verdict["verdict"], verdict["rules"]) == expected, (nodes, verdict["reason"])


def test_a_certain_foul_lists_what_stays_open() -> None:
    events = seen_by(double_hit().events, MINIMUM)
    assert verdicts(events)[-1]["open"] == ["19.1", "20"]


def test_no_boot_means_the_full_set() -> None:
    events = two_cushions().events[1:]
    assert verdicts(events)[-1]["satisfied"] == "20(2)(a)"


def test_a_node_going_offline_narrows_the_set_until_it_is_back() -> None:
    m = after_break().add("node_status", node="tracker", status="offline")
    m.shot().hit(0, 7).cushion(7, 1).cushion(7, 3).end()
    m.add("node_status", node=4, status="online")
    m.shot().hit(0, 7).cushion(7, 1).cushion(7, 3).end()
    assert [v["verdict"] for v in verdicts(m.events)[-2:]] == ["referee", "legal"]


def test_node_names_are_the_catalogues() -> None:
    assert SENSOR_NODES == tuple(NODE_NAMES[i] for i in range(len(SENSOR_NODES)))


@pytest.mark.parametrize(
    ("line", "lamp"),
    [
        ({"kind": "verdict", "verdict": "foul", "rules": ["19.1", "18"]}, Indicator("foul", 19)),
        (
            {"kind": "verdict", "verdict": "legal", "rules": [], "satisfied": "20(4)(a)"},
            Indicator("legal", 20),
        ),
        (
            {"kind": "verdict", "verdict": "legal", "rules": [], "satisfied": "12.1(2)"},
            Indicator("legal", 12),
        ),
        ({"kind": "verdict", "verdict": "referee", "rules": ["12.1"]}, Indicator("referee", 12)),
        ({"kind": "notice", "rules": ["11.3"]}, Indicator("warning", 11)),
        ({"kind": "notice", "rules": ["8"]}, Indicator("warning", 8)),
        ({"kind": "notice", "rules": ["12.2"]}, None),
    ],
)
def test_indicator_for_lines(line: dict, lamp: Indicator | None) -> None:
    got = indicator_for(line)
    assert got == lamp
    assert got is None or got.state in INDICATOR_STATES
