"""One event catalogue (issue 26): the kernel's codes, the names it writes, the keys the
rules need and judge's checks all come from ``rules/catalogue.py``, and it is EVENTS.md's
table of event types."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from firmware_host.cli import eventcheck
from firmware_host.fusion import records
from rules import catalogue, missing_keys

EVENTS_MD = (
    Path(os.environ.get("FIRMWARE_HOST_SHARED", Path(__file__).resolve().parents[3] / "shared"))
    / "EVENTS.md"
)


def test_the_kernel_writes_the_catalogues_codes_and_names() -> None:
    assert records.EVENT_NAMES == catalogue.NAMES
    for name, code in catalogue.CODES.items():
        assert getattr(records, f"EV_{name.upper()}") == code, name
    # the order events of one hub time leave in: a shot ends before the next starts, and
    # starts before its tip contact
    assert records.EV_SHOT_END < records.EV_SHOT_START < records.EV_CUE_CONTACT


def test_the_catalogue_is_the_event_table_of_events_md() -> None:
    if not EVENTS_MD.exists():
        pytest.fail(f"{EVENTS_MD} is missing: EVENTS.md comes with ../shared")
    text = EVENTS_MD.read_text(encoding="utf-8")
    table = text[text.index("## Ordered events") : text.index("## Verdicts")]
    listed = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
    assert sorted(listed) == sorted(catalogue.NAMES)


def test_judge_checks_every_type_and_every_key_the_rules_need() -> None:
    assert set(eventcheck.SHAPES) == set(catalogue.NAMES)
    for name, keys in catalogue.NEEDED_KEYS.items():
        assert set(keys) <= set(eventcheck.SHAPES[name]), name


@pytest.mark.parametrize("name", sorted(catalogue.NEEDED_KEYS))
def test_a_line_without_a_needed_key_is_refused_by_judge_and_by_the_referee(name: str) -> None:
    needed = catalogue.NEEDED_KEYS[name]
    complete = {
        "t_us": 5,
        "type": name,
        "ball": 3,
        "balls": [0, 3],
        "cushion": 2,
        "pocket": 4,
        "line": "centre",
    }
    eventcheck.check_event(complete)  # the positive case: nothing wrong
    assert missing_keys(complete) == []
    for key in needed:
        event = {k: v for k, v in complete.items() if k != key}
        with pytest.raises(eventcheck.BadEvent, match=f"no '{key}' \\(a {name} needs it\\)"):
            eventcheck.check_event(event)
        assert missing_keys(event) == [key]
