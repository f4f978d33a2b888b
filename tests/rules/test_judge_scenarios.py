"""`firmware-host judge` on the virtual table's truth files reproduces every scenario's verdict.

The truth file (`simulate --truth`) holds the events with true hub times and
the intended verdicts; judging its events through the command line must
give those verdicts back, shot by shot.
"""

from __future__ import annotations

import json

import pytest

from firmware_host.cli.main import main
from firmware_host.virtual_table import scenarios

NAMES = sorted(name for name in scenarios.SCENARIOS if name != "random")


def final(lines: list[dict]) -> list[tuple]:
    return [
        (v["shot"], v["verdict"], tuple(v["rules"]), v.get("satisfied"))
        for v in lines
        if v.get("kind") == "verdict" and not v.get("early")
    ]


@pytest.mark.parametrize("name", NAMES)
def test_judge_reproduces_the_intended_verdicts_of(name, tmp_path, capsys):
    truth = tmp_path / "truth.jsonl"
    assert (
        main(
            [
                "simulate",
                "--scenario",
                name,
                "--capture",
                str(tmp_path / "c.bin"),
                "--truth",
                str(truth),
            ]
        )
        == 0
    )
    lines = [json.loads(line) for line in truth.read_text().splitlines()]
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in lines if "type" in e))
    capsys.readouterr()
    assert main(["judge", str(events)]) == 0
    judged = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert final(judged) == final(lines)
