"""A capture read in chunks decides exactly what it decides read whole (docs/memory.md).

``events``, ``replay`` and resume read a capture a chunk at a time so that memory
stays bounded; where the chunks end must never change an event, a verdict or the
order of ``replay --events``.  The captures are the HIL corpus's: real matches of the
virtual table, every sensor set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_host.commands.replay import TimeOrder
from firmware_host.fusion.stream import EventStream, events_from_capture, events_from_chunks
from firmware_host.pipeline import Pipeline, replay, replay_steps
from protocol.decoder import StreamDecoder

CORPUS = Path(__file__).resolve().parents[2] / "hil_tests" / "corpus"
# a break with fouls on the full sensor set, and a shot judged with the fewest sensors
CAPTURES = ("break_12_1_1.full.bin", "double_hit.minimum.bin")


def _data(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def _split(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` cut into reads of ``sizes`` bytes in turn (cycled), the rest in the last."""
    out, at = [], 0
    for size in sizes * (len(data) // max(1, sum(sizes)) + 1):
        if at >= len(data):
            break
        out.append(data[at : at + size])
        at += size
    if at < len(data):
        out.append(data[at:])
    return out


def _events(reads: list[bytes]) -> list[dict]:
    return [e for part in events_from_chunks(reads, EventStream(), StreamDecoder()) for e in part]


def _as_json(items: list[dict]) -> list[str]:
    return [json.dumps(item, sort_keys=True) for item in items]


@pytest.fixture(scope="module")
def whole() -> dict[str, list[str]]:
    return {name: _as_json(events_from_capture(_data(name))) for name in CAPTURES}


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(CAPTURES),
    sizes=st.lists(st.integers(1, 70_000), min_size=1, max_size=6),
)
def test_events_read_in_chunks_of_any_size_are_the_whole_captures(whole, name, sizes):
    assert _as_json(_events(_split(_data(name), sizes))) == whole[name]


def test_a_chunk_may_end_at_every_offset_of_a_frame(whole):
    """Two reads, the first ending at each byte of a stretch that holds several frames
    (inside a header, a payload, a CRC, at a delimiter)."""
    name = CAPTURES[0]
    data = _data(name)
    middle = len(data) // 2
    for cut in range(middle, middle + 40):
        assert _as_json(_events([data[:cut], data[cut:]])) == whole[name], cut


@settings(max_examples=8, deadline=None)
@given(
    name=st.sampled_from(CAPTURES),
    sizes=st.lists(st.integers(1, 50_000), min_size=1, max_size=5),
    press_at=st.lists(st.integers(0, 70_000), max_size=3),
)
def test_replay_read_in_pieces_of_any_size_gives_the_same_verdicts(name, sizes, press_at):
    data = _data(name)
    presses = [(at, "referee_foul", 16) for at in press_at]
    once = replay(data, pipe=Pipeline(), presses=presses)
    steps = list(replay_steps(_split(data, sizes), pipe=Pipeline(), presses=presses))
    assert _as_json([line for s in steps for line in s.lines]) == _as_json(once.lines)
    assert _as_json([e for s in steps for e in s.events]) == _as_json(once.events)


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.full.bin"))[:8])
def test_replay_events_in_time_order_as_they_come_is_the_sorted_whole(name):
    """``replay --events`` writes lines as it goes; they must be the stable sort of every
    event, then every line, by ``t_us`` (what it wrote when it kept them all)."""
    data = _data(name)
    once = replay(data)
    pipe = Pipeline()
    order = TimeOrder(pipe)
    streamed = [item for step in replay_steps([data], pipe=pipe) for item in order.add(step)]
    streamed += order.rest()
    expected = sorted(once.events + once.lines, key=lambda x: x["t_us"])
    assert _as_json(streamed) == _as_json(expected)
    assert any(item.get("kind") == "verdict" for item in streamed)
