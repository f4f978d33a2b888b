"""The live path: any well-formed event stream is judged without an exception, one verdict per shot.

The daemon calls ``Referee.feed`` for every event it releases; a referee
that raised on an odd but well-formed stream would take the lamp down with
it.  Hypothesis writes the odd streams.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rules_cases.events import FULL, MIDDLE, MINIMUM

from rules.config import RulesConfig
from rules.referee import Referee

ball = st.one_of(st.none(), st.integers(0, 15))
xy = st.tuples(st.floats(0, 3569), st.floats(0, 1778)).map(list)
layout = st.dictionaries(st.integers(0, 15).map(str), xy, max_size=16)

BODIES = {
    "shot_start": st.fixed_dictionaries(
        {
            "cue_ball": ball,
            "balls": layout,
            "frozen": st.dictionaries(
                st.integers(0, 15).map(str), st.lists(st.integers(0, 5), max_size=2)
            ),
        }
    ),
    "cue_contact": st.fixed_dictionaries(
        {"duration_us": st.integers(0, 65535), "force_n": st.floats(0, 500)}
    ),
    "ball_contact": st.fixed_dictionaries({"balls": st.lists(ball, min_size=2, max_size=2)}),
    "cushion": st.fixed_dictionaries({"ball": ball, "cushion": st.integers(0, 5)}),
    "pocket": st.fixed_dictionaries(
        {"ball": ball, "pocket": st.integers(0, 5), "colour": st.none()}
    ),
    "line_cross": st.fixed_dictionaries(
        {
            "ball": ball,
            "line": st.sampled_from(["centre", "house"]),
            "direction": st.sampled_from(["front", "back"]),
        }
    ),
    "ball_moved": st.fixed_dictionaries({"ball": ball}),
    "shot_end": st.fixed_dictionaries(
        {
            "balls": layout,
            "certain": st.booleans(),
            "interrupted": st.booleans(),
            "paths": st.dictionaries(
                st.integers(0, 15).map(str),
                st.lists(
                    st.tuples(st.integers(0, 10**9), st.floats(0, 3569), st.floats(0, 1778)).map(
                        list
                    )
                ),
                max_size=3,
            ),
        }
    ),
    "rest": st.fixed_dictionaries({"balls": layout, "frozen": st.just({})}),
    "keypad": st.fixed_dictionaries(
        {
            "key": st.sampled_from(
                [
                    "accept",
                    "offender_continues",
                    "rerack_i_break",
                    "rerack_offender_breaks",
                    "declare_frozen",
                    "referee_foul",
                    "referee_clear",
                    "new_frame",
                ]
            ),
            "arg": st.sampled_from([0, 7, 15, 16, 17, 255]),
        }
    ),
    "node_status": st.fixed_dictionaries(
        {
            "node": st.sampled_from(["tracker", "acoustic", 4, 6]),
            "status": st.sampled_from(["online", "offline"]),
        }
    ),
}
event = st.sampled_from(sorted(BODIES)).flatmap(
    lambda kind: BODIES[kind].map(lambda body: {"type": kind, **body})
)


@settings(max_examples=100, deadline=None)
@example(  # a contact of two unnamed balls while a shot's paths are read (sorting None failed)
    nodes=FULL,
    discipline="free",
    events=[
        (0, {"type": "shot_start", "cue_ball": None, "balls": {"0": [0.0, 0.0], "1": [0.0, 0.0]},
             "frozen": {}}),
        (0, {"type": "ball_contact", "balls": [None, None]}),
        (0, {"type": "shot_end", "balls": {}, "certain": False, "interrupted": False,
             "paths": {"0": [[1, 0.0, 0.0], [1, 0.0, 5.0]]}}),
    ],
)  # fmt: skip
@given(
    nodes=st.sampled_from([FULL, MIDDLE, MINIMUM]),
    discipline=st.sampled_from(["free", "combined"]),
    events=st.lists(st.tuples(st.integers(0, 50_000), event), max_size=40),
)
def test_any_stream_is_judged_one_verdict_per_shot(nodes, discipline, events) -> None:
    referee = Referee(config=RulesConfig(discipline=discipline))
    stream = [{"t_us": 0, "type": "boot", "shot": None, "nodes": list(nodes)}]
    t, number = 0, 0
    for dt, ev in events:
        t += dt
        if ev["type"] == "shot_start":
            number += 1
        stream.append({"t_us": t, "shot": number, **ev})
    lines = [line for ev in stream for line in referee.feed(ev)] + referee.finish()
    for line in lines:
        assert line["kind"] in ("verdict", "notice")
        assert all(isinstance(r, str) for r in line["rules"])
        if line["kind"] == "verdict":
            assert line["verdict"] in ("legal", "foul", "referee")
            assert line["player"] in (1, 2)
            assert (line["verdict"] == "legal") == (line["rules"] == [])
    shots = [
        line["shot"]
        for line in lines
        if line["kind"] == "verdict" and line["shot"] is not None and not line.get("early")
    ]
    assert shots == list(range(1, number + 1))
