"""Which fields take named values, and the names: the catalogue's tables, attached to fields.

The catalogue defines the names (``INDICATOR_STATES``, ``KEYPAD_KEYS`` ...);
this says which field each belongs to, once, for the dissector (value
strings) and ``send`` (``state=foul``).
"""

from __future__ import annotations

from protocol.catalogue import (
    ACK_STATUS,
    INDICATOR_STATES,
    KEYPAD_KEYS,
    MESSAGES,
    NODE_NAMES,
    NODE_STATUS_CODES,
)

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
}
