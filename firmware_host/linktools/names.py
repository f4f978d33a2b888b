"""Which fields take named values, and the names: the catalogue's tables, attached to fields.

The catalogue and the geometry define the names (``INDICATOR_STATES``,
``KEYPAD_KEYS``, ``CUSHION_NAMES`` ...); this says which field each belongs
to, once, for the dissector (value strings), ``send`` (``state=foul``) and
``decode --where`` (``cushion=="back"``).
"""

from __future__ import annotations

from protocol.catalogue import (
    ACK_STATUS,
    BALL_COLOURS,
    INDICATOR_STATES,
    KEYPAD_KEYS,
    LINE_DIRECTIONS,
    LOG_LEVELS,
    MESSAGES,
    NODE_NAMES,
    NODE_STATUS_CODES,
)
from protocol.geometry import CUSHION_NAMES, LINE_NAMES, POCKET_NAMES

MESSAGE_NAMES = {spec.msg_type: spec.name for spec in MESSAGES}
_INDICATOR = {v: k for k, v in INDICATOR_STATES.items()}
# (message, or "*" for the header; field) -> value -> name
VALUE_NAMES: dict[tuple[str, str], dict[int, str]] = {
    ("*", "node"): NODE_NAMES,
    ("*", "msg_type"): MESSAGE_NAMES,
    ("HEARTBEAT", "indicator"): _INDICATOR,
    ("SET_INDICATOR", "state"): _INDICATOR,
    ("CLOCK_SYNC", "peer"): NODE_NAMES,
    ("NODE_STATUS", "peer"): NODE_NAMES,
    ("NODE_STATUS", "code"): NODE_STATUS_CODES,
    ("ACK", "acked_type"): MESSAGE_NAMES,
    ("ACK", "status"): ACK_STATUS,
    ("KEYPAD", "key"): KEYPAD_KEYS,
    ("LOG", "level"): LOG_LEVELS,
    ("CUSHION_HIT", "cushion"): dict(enumerate(CUSHION_NAMES)),
    ("POCKET_DROP", "pocket"): dict(enumerate(POCKET_NAMES)),
    ("POCKET_DROP", "colour"): BALL_COLOURS,
    ("LINE_CROSS", "line"): dict(enumerate(LINE_NAMES)),
    ("LINE_CROSS", "direction"): LINE_DIRECTIONS,
}
