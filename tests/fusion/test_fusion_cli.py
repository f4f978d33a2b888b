"""``firmware-host events CAPTURE``: JSON Lines of ordered events; unusable input is one line, exit 2."""

from __future__ import annotations

import io
import json
import sys

import pytest

from firmware_host.cli.main import main
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.hub import HubConfig, build_wire


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> str:
    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(sensors="full", seed=2))
    path = tmp_path_factory.mktemp("cap") / "double_hit.bin"
    path.write_bytes(b"".join(wire.chunks))
    return str(path)


def test_events_are_json_lines_in_hub_time_order(capture, capsys):
    assert main(["events", capture]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0]["type"] == "boot"
    assert [e["t_us"] for e in events] == sorted(e["t_us"] for e in events)
    assert [e["type"] for e in events if e["type"] in ("shot_start", "cue_contact", "shot_end")] == [
        "shot_start", "cue_contact", "cue_contact", "shot_end",
    ]  # fmt: skip


def test_stdin_gives_the_same_events(capture, capsys, monkeypatch):
    assert main(["events", capture]) == 0
    from_file = capsys.readouterr().out
    with open(capture, "rb") as f:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(f.read())))
    assert main(["events", "-"]) == 0
    assert capsys.readouterr().out == from_file


@pytest.mark.parametrize(
    ("content", "args", "says"),
    [
        (None, ["events", "/nonexistent/x.bin"], "/nonexistent/x.bin"),
        (b"\x01\x02garbage without one good frame\x00" * 10, ["events", "{path}"], "not a capture"),
        (None, ["events", "{path}", "--frozen-gap", "-1"], "--frozen-gap"),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(content, args, says, tmp_path, capsys):
    path = tmp_path / "in.bin"
    path.write_bytes(content or b"")
    assert main([a.format(path=path) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
