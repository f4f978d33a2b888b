"""The rules engine: items 8-20 of the Russian billiards rules, from ordered events.

Pure: no clocks, files or numeric libraries.  Feed a :class:`Referee` the
ordered events of EVENTS.md; it returns verdict and notice lines in the
same contract.  See docs/rules.md for every reading of the rules' text.
"""

from .config import DISCIPLINES, MIDDLE_NODES, MINIMUM_NODES, SENSOR_NODES, RulesConfig, SensorSet
from .indicator import Indicator, indicator_for, rule_item
from .rack import RackCheck, check_rack, rack_positions, rack_slots
from .referee import MatchState, Referee, missing_keys

__all__ = [
    "DISCIPLINES",
    "MIDDLE_NODES",
    "MINIMUM_NODES",
    "SENSOR_NODES",
    "Indicator",
    "MatchState",
    "RackCheck",
    "Referee",
    "RulesConfig",
    "SensorSet",
    "check_rack",
    "indicator_for",
    "missing_keys",
    "rack_positions",
    "rack_slots",
    "rule_item",
]
