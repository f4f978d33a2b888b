"""The referee's keys from outside the table (the page, the broker): judged as the keypad's.

A press is checked before it is queued (a bad key is the caller's error, in
words), lands on the match's timeline in ``t_us`` order, and decides exactly
what the KEYPAD frame it stands for would have decided: the same shot,
without the keypad node, judged the same.
"""

from __future__ import annotations

import pytest

from firmware_host.live.referee_token import RefereeToken
from firmware_host.pipeline import Pipeline, check_press, replay
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.scenarios import SCENARIOS
from protocol.catalogue import BY_NAME
from protocol.decoder import decode_capture
from protocol.kernels import OK


@pytest.mark.parametrize(
    "key, arg",
    [
        ("new_frame", 0),
        ("accept", 0),
        ("declare_frozen", 7),
        ("declare_frozen", 255),
        ("referee_foul", 15),
        ("referee_foul", 17),
        ("referee_clear", 0),
    ],
)
def test_a_keypad_key_with_its_arg_is_taken(key, arg):
    assert check_press(key, arg) == (key, arg)


@pytest.mark.parametrize(
    "key, arg, named",
    [
        ("NEW_FRAME", 0, "key 'NEW_FRAME'"),  # EVENTS.md's lower-case names only
        ("reset", 0, "key 'reset'"),
        ("referee_foul", 18, "item 15, 16 or 17"),  # the lamp's own fouls are the sensors'
        ("declare_frozen", 16, "ball number"),
        ("accept", 256, "arg 256"),
        ("accept", -1, "arg -1"),
        ("accept", True, "arg True"),
        ("accept", "1", "arg '1'"),
    ],
)
def test_a_bad_key_or_arg_is_refused_in_words(key, arg, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        check_press(key, arg)


def _declared_wire() -> bytes:
    """Note 2: the referee declares ball 1 frozen with the keypad node before the stroke."""
    wire = build_wire(SCENARIOS["note2_declared"](), HubConfig(sensors="full", seed=1))
    return b"".join(wire.chunks)


def _without_keypad(data: bytes) -> tuple[bytes, int, int]:
    """The capture with its one KEYPAD frame cut out; where it was, and its arg."""
    decoded = decode_capture(data)
    frames = decoded.frames
    keypad = frames[(frames["status"] == OK) & (frames["msg_type"] == BY_NAME["KEYPAD"].msg_type)]
    assert len(keypad) == 1
    start = int(keypad["offset"][0])
    end = data.index(0, start) + 1  # the frame's delimiter
    arg = int(decoded.tables["KEYPAD"]["arg"][0])
    return data[:start] + data[end:], start, arg


def _verdicts(lines: list[dict]) -> list[tuple]:
    return [
        (v["shot"], v["verdict"], tuple(v["rules"]), v.get("satisfied"))
        for v in lines
        if v.get("kind") == "verdict"
    ]


def test_a_press_decides_what_the_keypad_frame_it_replaces_decided():
    data = _declared_wire()
    by_keypad = replay(data)
    assert _verdicts(by_keypad.lines) == [(1, "legal", (), "20 note 2")]

    stripped, at, arg = _without_keypad(data)
    pipe = Pipeline()
    events, lines = [], []
    for step in (
        pipe.feed(stripped[:at]),
        pipe.press("declare_frozen", arg),
        pipe.feed(stripped[at:]),
        pipe.flush(),
    ):
        events += step.events
        lines += step.lines
    assert _verdicts(lines) == _verdicts(by_keypad.lines)
    pressed = [e for e in events if e["type"] == "keypad"]
    assert pressed == [
        {
            "t_us": pressed[0]["t_us"],
            "type": "keypad",
            "shot": None,
            "key": "declare_frozen",
            "arg": 1,
        }
    ]
    # on the timeline in order with everything else
    times = [e["t_us"] for e in events]
    assert times == sorted(times)


def test_without_the_press_the_same_shot_is_a_foul():
    stripped, _, _ = _without_keypad(_declared_wire())
    assert _verdicts(replay(stripped).lines) == [(1, "foul", ("20",), None)]


def test_new_frame_pressed_between_shots_starts_the_next_frame():
    data = _declared_wire()
    pipe = Pipeline()
    lines = pipe.feed(data).lines + pipe.press("new_frame").lines + pipe.flush().lines
    notices = [line for line in lines if line.get("rules") == ["13"]]
    assert [n["reason"] for n in notices] == ["frame 2: player 2 breaks"]
    assert pipe.referee.state.frame == 2


@pytest.mark.parametrize(
    "given, ok",
    [("table-7-secret", True), ("table-7-secreT", False), ("", False), (None, False)],
)
def test_the_token_lets_only_its_holder_press(given, ok):
    assert RefereeToken("table-7-secret").check(given) is ok


def test_a_token_made_at_start_is_new_each_time_and_long_enough():
    one, two = RefereeToken(), RefereeToken()
    assert one.generated and one.value != two.value and len(one.value) >= 16
    with pytest.raises(ValueError, match="at least 6"):
        RefereeToken("12345")


def _lines_after_an_early_press(host_ns: int | None) -> list[dict]:
    """ "New frame" pressed before the table's first frame, then the whole match read live
    (the first chunk 0.4 s after the press) or replayed (no host times)."""
    wire = build_wire(SCENARIOS["double_hit"](), HubConfig(seed=3))
    pipe = Pipeline()
    assert pipe.press("new_frame", 0, host_ns).lines == []  # no hub time yet: it waits
    lines = []
    for k, chunk in enumerate(wire.chunks):
        rx = (
            None
            if host_ns is None
            else host_ns + int((0.4 + wire.chunk_s[k] - wire.chunk_s[0]) * 1e9)
        )
        lines += pipe.feed(chunk, rx).lines
    return lines + pipe.flush().lines


@pytest.mark.parametrize("host_ns", [3_600_000_000_000, None], ids=["live", "replay"])
def test_new_frame_pressed_before_the_first_frame_keeps_the_match_clock(host_ns):
    """Issue 24: the press landed at hub time 0 while the hub's clock stood at 61 min, so the
    match clock jumped to 62:15 at the first shot."""
    lines = _lines_after_an_early_press(host_ns)
    notice = lines[0]
    assert (notice["kind"], notice["rules"]) == ("notice", ["13"])
    first_hub_us = min(line["t_us"] for line in lines[1:])
    assert 0 <= first_hub_us - notice["t_us"] < 5_000_000, (notice, first_hub_us)
    assert notice["reason"] == "frame 2: player 2 breaks"
