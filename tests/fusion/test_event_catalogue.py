"""One event catalogue (issue 26): the kernel's codes, the names it writes and the record
slots it fills, the keys the rules need, the rules' TypedDicts and judge's checks all come
from ``rules/catalogue.py``, and it is EVENTS.md's table of event types."""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path

import numpy as np
import pytest

from firmware_host.cli import eventcheck
from firmware_host.fusion import dicts, records
from firmware_host.timing.timeline import INFERRED_BOOT
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


def _events_md_keys() -> dict[str, set[str]]:
    """EVENTS.md's table of event types: each type's extra keys, the backquoted names in its
    row that are no other event type and no common key (a shot_end's row mentions the
    shot_start that follows at the same ``t_us``; a cushion's key is ``cushion``)."""
    text = EVENTS_MD.read_text(encoding="utf-8")
    table = text[text.index("## Ordered events") : text.index("## Verdicts")]
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", table, re.MULTILINE)
    keys = {}
    for name, extra in rows:
        others = {*catalogue.COMMON_KEYS, *catalogue.NAMES} - {name}
        keys[name] = set(re.findall(r"`(\w+)`", extra)) - others
    return keys


def test_each_typeddict_holds_the_catalogues_keys_and_events_mds() -> None:
    """The TypedDicts the rules read are the catalogue: the same keys, and those EVENTS.md
    names are the keys judge checks; the others (the format may gain keys) go unchecked."""
    listed = _events_md_keys()
    assert sorted(listed) == sorted(catalogue.NAMES)
    for typed in catalogue.EVENT_TYPES:
        keys = set(typed.__annotations__) - set(catalogue.COMMON_KEYS)
        (name,) = typing.get_args(typing.get_args(typed.__annotations__["type"])[0])
        assert typed.__name__ == "".join(w.title() for w in name.split("_")) + "Event"
        assert keys == {k.name for k in catalogue.KEYS[name]}, name
        checked = {k.name for k in catalogue.KEYS[name] if k.check is not None}
        assert checked == listed[name], name
        assert set(eventcheck.SHAPES[name]) == checked, name
        assert typed.__required_keys__ - set(catalogue.COMMON_KEYS) == set(  # type: ignore[attr-defined]
            catalogue.NEEDED_KEYS.get(name, ())
        )
    assert set(typing.get_args(catalogue.Event)) == set(catalogue.EVENT_TYPES)


def test_every_slot_and_converter_the_catalogue_names_exists() -> None:
    for name, keys in catalogue.KEYS.items():
        for key in keys:
            if isinstance(key.fill, catalogue.Built):
                assert key.fill.what in dicts.BUILD, (name, key.name)
            else:
                assert set(key.fill.slots) <= set(records.SLOTS), (name, key.name)
                assert key.fill.via in dicts.CONVERT, (name, key.name)


@pytest.mark.parametrize("code", range(len(catalogue.NAMES)))
def test_to_dict_writes_the_catalogues_keys_in_its_order(code: int) -> None:
    """A record of each type, every value slot set (the optional keys written): its line
    carries the common keys, then exactly the catalogue's keys in the catalogue's order."""
    rec = np.zeros(records.N_OUT, np.int64)
    rec[records.O_TYPE] = code
    rec[[records.O_BALL, records.O_A, records.O_B, records.O_C, records.O_D]] = 1
    rec[records.O_E] = 68_000
    rec[records.O_SNAP] = -1
    name = catalogue.NAMES[code]
    if name == "boot":
        rec[records.O_A] = INFERRED_BOOT  # "inferred" is written only then
    line = dicts.to_dict(rec, np.zeros((0, 16, 3)), np.zeros((0, 16), np.int64), np.zeros((0, 4)))
    assert list(line) == [*catalogue.COMMON_KEYS, *(k.name for k in catalogue.KEYS[name])]
    assert line["type"] == name
