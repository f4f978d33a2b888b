"""The live view as people watching a match read it: match time, shot numbers, plain verdicts."""

from __future__ import annotations

import re
import sys

import pytest
from proc_util import forked

from firmware_host.cli.liveview import LiveView, summary_text

HUB_CLOCK_US = 3_707_335_242  # a hub an hour after power-on: 61:47 on its clock


def verdict(**fields: object) -> dict:
    line = {"kind": "verdict", "t_us": HUB_CLOCK_US + 65_250_000, "shot": 4, "player": 2}
    return {**line, "rules": [], "satisfied": None, "reason": "", **fields}


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (verdict(verdict="legal"), "   1:05.250  shot 4    player 2: legal"),
        (verdict(verdict="legal", satisfied="20(1)", reason="ball 3 potted"),
         "   1:05.250  shot 4    player 2: legal, 20(1) met (ball 3 potted)"),
        (verdict(verdict="foul", rules=["18"], reason="two tips: 18"),
         "   1:05.250  shot 4    player 2: foul 18 (two tips: 18)"),
        (verdict(verdict="referee", rules=["12.1", "19.1"], **{"break": True}),
         "   1:05.250  shot 4    break, player 2: referee's call on 12.1, 19.1"),
        (verdict(verdict="foul", rules=["17"], shot=None, player=None),
         "   1:05.250            between shots: foul 17"),
        ({"kind": "notice", "t_us": HUB_CLOCK_US + 65_250_000, "shot": 4, "rules": ["14.2"],
          "reason": "struck early"}, "   1:05.250  shot 4    NOTICE 14.2 (struck early)"),
    ],
    ids=["legal-no-clause", "legal-clause", "foul", "referee-break", "between-shots", "notice"],
)  # fmt: skip
def test_a_line_reads_in_match_time_with_its_shot(line: dict, text: str) -> None:
    view = LiveView()
    assert view.event({"t_us": HUB_CLOCK_US, "type": "boot", "shot": None}).startswith(
        "   0:00.000"
    )
    assert view.line(line) == text


def test_a_hub_reboot_starts_match_time_again() -> None:
    view = LiveView()
    view.event({"t_us": HUB_CLOCK_US, "type": "boot", "shot": None})
    assert view.event({"t_us": 5_000, "type": "boot", "shot": None}).startswith("   0:00.000")
    assert view.event({"t_us": 2_005_000, "type": "shot_start", "shot": 1}) == (
        "   0:02.000  shot 1    stroke: tip on ball ?"
    )


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        ((1, 1, 1), "1 verdict, 1 event from 1 byte"),
        ((2, 0, 9), "2 verdicts, 0 events from 9 bytes"),
    ],
)
def test_the_summary_counts_in_words(counts: tuple[int, int, int], text: str) -> None:
    assert summary_text(*counts) == text


def test_the_built_in_match_ends_as_the_end_of_match_not_a_fault() -> None:
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "run", "--scenario", "double_hit"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"^   0:0\d\.\d{3}  shot 1    player 1: foul 18 \(", done.stdout, re.MULTILINE
    ), done.stdout
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith("firmware-host run: end of match: "), done.stderr
    assert "link losses 0" in summary and "lost (" not in done.stderr, done.stderr
