"""What the foul lamp shows for a verdict or notice (SET_INDICATOR, ICD §5).

State names are the keys of ``protocol.catalogue.INDICATOR_STATES``; the
rule is the item number behind the line (``"19.1"`` → 19), 0 for none.

>>> indicator_for({"kind": "verdict", "verdict": "foul", "rules": ["19.1", "18"]})
Indicator(state='foul', rule=19)
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple


class Indicator(NamedTuple):
    state: str  # "legal", "foul", "referee" or "warning"
    rule: int


def rule_item(rule: str) -> int:
    """The item number of a rule or clause: "12.1(2)" → 12, "20 note 2" → 20."""
    match = re.match(r"\d+", rule or "")
    return int(match.group()) if match else 0


WARNINGS = ("8", "11.3")


def indicator_for(line: dict[str, Any]) -> Indicator | None:
    """The lamp for an engine line, or None when the line should not change it.

    A verdict lights legal / foul / referee with its first rule (a legal shot:
    the item it satisfied); a notice about the rack (8) or the coloured ball
    outside the house (11.3) lights the warning; other notices leave it.
    """
    rules = line.get("rules") or []
    if line.get("kind") == "verdict":
        first = rules[0] if rules else line.get("satisfied") or ""
        return Indicator(line["verdict"], rule_item(first))
    warned = [r for r in rules if r in WARNINGS]
    return Indicator("warning", rule_item(warned[0])) if warned else None
