"""The table's wire protocol (ICD version 1): catalogue, framing, decoders."""

from .catalogue import BY_NAME, BY_TYPE, MESSAGES, NODE_IDS, NODE_NAMES, MessageSpec
from .framing import BadFrame, Message, UnknownFrame, build_body, encode_frame, parse_frame

__all__ = [
    "BY_NAME",
    "BY_TYPE",
    "MESSAGES",
    "NODE_IDS",
    "NODE_NAMES",
    "BadFrame",
    "Message",
    "MessageSpec",
    "UnknownFrame",
    "build_body",
    "encode_frame",
    "parse_frame",
]
