"""The ICD message catalogue: the one place a wire field is defined.

Every other view of the protocol -- the encoder, both decoders, the numpy
record dtypes of the bulk path, the ``decode`` printer, ``dump`` and the
virtual table -- is derived from the ``construct`` definitions below, so a
field's name, type and offset are written exactly once (ICD.md §3-§5).

>>> spec = BY_NAME["CUSHION_HIT"]
>>> spec.payload.build({"cushion": 3, "pos_mm": 889, "amplitude": 2048}).hex()
'0379030008'
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from construct import (
    Bytes,
    Checksum,
    Construct,
    FixedSized,
    GreedyBytes,
    GreedyString,
    If,
    Int8ul,
    Int16ul,
    Int32ul,
    PrefixedArray,
    RawCopy,
    Struct,
    Switch,
    this,
)

PROTOCOL_VERSION = 1
HEADER_SIZE = 10
CRC_SIZE = 4
MIN_BODY = HEADER_SIZE + CRC_SIZE
MAX_BODY = 254
MAX_PAYLOAD = MAX_BODY - MIN_BODY  # 240
FLAG_RETRANSMISSION = 0x01
FLAG_SIGNED = 0x02  # ICD §9: the body carries sig_ctr and a tag after the payload
KEY_SIZE = 32  # SETUP_SIGNING.key
TAG_SIZE = 8  # the first 8 bytes of HMAC-SHA256
SIG_TRAILER = 4 + TAG_SIZE  # sig_ctr u32 + tag
MAX_SIGNED_PAYLOAD = MAX_PAYLOAD - SIG_TRAILER  # 228

NODE_NAMES: dict[int, str] = {
    0: "hub",
    1: "rails",
    2: "pockets",
    3: "cue",
    4: "tracker",
    5: "lines",
    6: "acoustic",
    7: "keypad",
    0x80: "host",
}
NODE_IDS: dict[str, int] = {name: node for node, name in NODE_NAMES.items()}
HOST_NODE = 0x80

Header = Struct(
    "version" / Int8ul,
    "msg_type" / Int8ul,
    "node" / Int8ul,
    "flags" / Int8ul,
    "seq" / Int16ul,
    "t_us" / Int32ul,
)

Ball = Struct(
    "ball" / Int8ul,
    "state" / Int8ul,
    "x" / Int16ul,
    "y" / Int16ul,
)


@dataclass(frozen=True)
class MessageSpec:
    """One ICD message: its type code, name, sender and payload layout.

    ``max_items`` bounds the one variable-length field a payload may end
    with (``BALL_TRACK.balls``: 16 entries, ``LOG.text``: 200 bytes); the
    ICD states these limits in prose, construct cannot express them.
    """

    msg_type: int
    name: str
    node: int | None  # the sending node the ICD names; None = any node
    payload: Construct
    doc: str
    max_items: int = 0

    @property
    def to_table(self) -> bool:
        return self.node == HOST_NODE


MESSAGES: tuple[MessageSpec, ...] = (
    MessageSpec(
        0x01,
        "HELLO",
        0,
        Struct(
            "fw_major" / Int8ul,
            "fw_minor" / Int8ul,
            "fw_patch" / Int8ul,
            "proto" / Int8ul,
            "boot_id" / Int32ul,
            "hub_serial" / Int32ul,
            "table_length_mm" / Int16ul,
            "table_width_mm" / Int16ul,
            "ball_diameter_um" / Int32ul,
            "nodes_present" / Int16ul,
        ),
        "hub boot announcement; a new boot_id resets every clock and counter",
    ),
    MessageSpec(
        0x02,
        "HEARTBEAT",
        0,
        Struct(
            "uptime_s" / Int32ul,
            "nodes_ok" / Int16ul,
            "rx_bad" / Int16ul,
            "tx_dropped" / Int16ul,
            "indicator" / Int8ul,
        ),
        "1 Hz hub health, with the lamp state now",
    ),
    MessageSpec(
        0x03,
        "CLOCK_SYNC",
        0,
        Struct("peer" / Int8ul, "peer_t_us" / Int32ul),
        "hub time a beacon left (header t_us) against the peer's time it arrived",
    ),
    MessageSpec(
        0x04,
        "ACK",
        0,
        Struct("acked_seq" / Int16ul, "acked_type" / Int8ul, "status" / Int8ul),
        "the hub applied (or refused) a host frame",
    ),
    MessageSpec(
        0x05,
        "LOG",
        None,
        Struct("level" / Int8ul, "text" / GreedyString("utf8")),
        "free text from any node (UTF-8, at most 200 bytes)",
        max_items=200,
    ),
    MessageSpec(
        0x06,
        "NODE_STATUS",
        0,
        Struct("peer" / Int8ul, "code" / Int8ul, "detail" / Int16ul),
        "a node went online, offline, saturated or lost calibration",
    ),
    MessageSpec(
        0x10,
        "CUE_CONTACT",
        3,
        Struct("duration_us" / Int16ul, "peak_force_dn" / Int16ul),
        "one tip-ball contact; t_us is its start",
    ),
    MessageSpec(
        0x11,
        "CUSHION_HIT",
        1,
        Struct("cushion" / Int8ul, "pos_mm" / Int16ul, "amplitude" / Int16ul),
        "impact onset on one of the six cushion pieces",
    ),
    MessageSpec(
        0x12,
        "POCKET_DROP",
        2,
        Struct("pocket" / Int8ul, "colour" / Int8ul, "beam_us" / Int16ul),
        "a ball broke a pocket's beam",
    ),
    MessageSpec(
        0x13,
        "BALL_TRACK",
        4,
        Struct("frame" / Int16ul, "balls" / PrefixedArray(Int8ul, Ball)),
        "overhead tracker frame: every ball on the table (0.1 mm units)",
        max_items=16,
    ),
    MessageSpec(
        0x14,
        "LINE_CROSS",
        5,
        Struct(
            "line" / Int8ul,
            "pos_mm" / Int16ul,
            "direction" / Int8ul,
            "duration_us" / Int16ul,
        ),
        "a ball centre over the centre or house line",
    ),
    MessageSpec(
        0x15,
        "BALL_CLICK",
        6,
        Struct("x_mm" / Int16ul, "y_mm" / Int16ul, "amplitude" / Int16ul),
        "ball-ball contact candidate heard under the slate",
    ),
    MessageSpec(
        0x16,
        "KEYPAD",
        7,
        Struct("key" / Int8ul, "arg" / Int8ul),
        "a referee key press",
    ),
    MessageSpec(
        0x80,
        "SET_INDICATOR",
        HOST_NODE,
        Struct("state" / Int8ul, "rule" / Int8ul, "hold_ms" / Int16ul),
        "host drives the foul lamp",
    ),
    MessageSpec(0x81, "REQUEST_HELLO", HOST_NODE, Struct(), "host asks the hub to say HELLO again"),
    MessageSpec(0x82, "PING", HOST_NODE, Struct("token" / Int32ul), "host link check"),
    MessageSpec(
        0x83,
        "SETUP_SIGNING",
        HOST_NODE,
        Struct("key" / Bytes(KEY_SIZE), "require" / Int16ul),
        "host sets the table's signing key and which nodes must sign (firmware 1.2, ICD §9)",
    ),
)

BY_TYPE: dict[int, MessageSpec] = {spec.msg_type: spec for spec in MESSAGES}
BY_NAME: dict[str, MessageSpec] = {spec.name: spec for spec in MESSAGES}

KEYPAD_KEYS: dict[int, str] = {
    1: "accept",
    2: "offender_continues",
    3: "rerack_i_break",
    4: "rerack_offender_breaks",
    5: "declare_frozen",
    6: "referee_foul",
    7: "referee_clear",
    8: "new_frame",
}
KEYPAD_CODES: dict[str, int] = {name: code for code, name in KEYPAD_KEYS.items()}
NODE_STATUS_CODES: dict[int, str] = {
    0: "online",
    1: "offline",
    2: "sensor saturated",
    3: "calibration lost",
}
INDICATOR_STATES: dict[str, int] = {
    "off": 0,
    "ready": 1,
    "legal": 2,
    "foul": 3,
    "referee": 4,
    "warning": 5,
    "fault": 6,
}
ACK_STATUS: dict[int, str] = {0: "ok", 1: "unknown type", 2: "bad argument", 3: "busy"}
LOG_LEVELS: dict[int, str] = {0: "debug", 1: "info", 2: "warning", 3: "error"}
BALL_COLOURS: dict[int, str] = {0: "white", 1: "coloured", 255: "unknown"}  # POCKET_DROP.colour
LINE_DIRECTIONS: dict[int, str] = {  # LINE_CROSS.direction
    0: "towards the front cushion",
    1: "towards the back cushion",
    2: "no crossing",
}


def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC, the frame trailer (ICD §2)."""
    return zlib.crc32(data)


# A signed frame's trailer between payload and CRC (ICD §9); not part of the message's fields.
Signature = Struct("sig_ctr" / Int32ul, "tag" / Bytes(TAG_SIZE))

# The whole frame body: header, payload sized by the caller, the signature when flags bit 1
# is set, CRC over all of it.
Body = Struct(
    "data"
    / RawCopy(
        Struct(
            "header" / Header,
            "payload"
            / FixedSized(
                lambda ctx: ctx._root._.payload_len,
                Switch(
                    this.header.msg_type, {s.msg_type: s.payload for s in MESSAGES}, GreedyBytes
                ),
            ),
            "signature" / If(this.header.flags & FLAG_SIGNED, Signature),
        )
    ),
    "crc" / Checksum(Int32ul, lambda data: crc32(data), this.data.data),
)
