"""Items 11.2, 12.1, 14.2, 15, 17, 18, 19 and 20, one table row per clause, each beside its failing twin."""

from __future__ import annotations

import pytest
from rules_cases.cases import BREAK, ITEM_20, STROKE, Case
from rules_cases.events import last, verdicts


def check(case: Case) -> None:
    verdict = verdicts(case.build().events, case.config)[case.index]
    assert (verdict["verdict"], verdict["rules"], verdict.get("satisfied")) == (
        case.verdict,
        list(case.rules),
        case.satisfied,
    ), verdict["reason"]
    assert verdict["evidence"], "every verdict names the events it rests on"
    assert verdict["reason"].endswith(case.satisfied or case.rules[-1])
    for words in case.says:
        assert words in verdict["reason"]


@pytest.mark.parametrize("case", ITEM_20, ids=lambda c: c.name)
def test_item_20(case: Case) -> None:
    check(case)


@pytest.mark.parametrize("case", BREAK, ids=lambda c: c.name)
def test_break_12_1(case: Case) -> None:
    check(case)
    assert last(case.build())["break"] is True


@pytest.mark.parametrize("case", STROKE, ids=lambda c: c.name)
def test_stroke(case: Case) -> None:
    check(case)
