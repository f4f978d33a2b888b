"""Per-frame encode and parse through the construct catalogue.

This is the readable, one-frame-at-a-time path: the host's own commands,
tests, and the reference the bulk kernel is checked against.  Captures go
through :mod:`protocol.decoder` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cobs import cobs
from construct import ChecksumError, ConstructError

from .catalogue import (
    BY_NAME,
    BY_TYPE,
    FLAG_SIGNED,
    HEADER_SIZE,
    MAX_BODY,
    MIN_BODY,
    PROTOCOL_VERSION,
    SIG_TRAILER,
    Body,
    Header,
    crc32,
)
from .layout import layout

DELIMITER = b"\x00"


@dataclass(frozen=True)
class Message:
    """A decoded frame: header fields in the sender's clock, payload fields.

    ``t_us`` is the sending node's own clock (ICD §3); mapping it to the hub's
    clock is the timing core's job, not the codec's.
    """

    name: str
    msg_type: int
    node: int
    seq: int
    t_us: int
    flags: int = 0
    fields: dict[str, Any] = field(default_factory=dict)
    offset: int = -1
    version: int = PROTOCOL_VERSION
    signature: Signature | None = None  # a signed frame's trailer (ICD §9), not a field

    @property
    def signed(self) -> bool:
        return self.signature is not None


@dataclass(frozen=True)
class Signature:
    """A signed frame's trailer (flags bit 1, ICD §9): the sender's counter and the tag."""

    sig_ctr: int
    tag: bytes


@dataclass(frozen=True)
class BadFrame:
    """A frame the receiver dropped, kept as a value (never raised)."""

    reason: str  # cobs | crc | length | version | payload length
    offset: int
    length: int  # bytes between the delimiters, as received


@dataclass(frozen=True)
class UnknownFrame:
    """A good frame of a msg_type this host does not know (forward compat)."""

    msg_type: int
    node: int
    seq: int
    t_us: int
    flags: int
    payload: bytes
    offset: int = -1


def _plain(value: Any) -> Any:
    """construct Containers/ListContainers into plain dicts and lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def build_body(
    msg: str | int,
    *,
    node: int | None = None,
    seq: int = 0,
    t_us: int = 0,
    flags: int = 0,
    version: int = PROTOCOL_VERSION,
    sign_with: tuple[bytes, int] | None = None,
    **fields: Any,
) -> bytes:
    """Header + payload (+ signature) + CRC for one message; ``node`` defaults to the ICD sender.

    ``sign_with=(key, sig_ctr)`` makes a signed frame (ICD §9): flags bit 1 set, the
    counter and the tag over the header (bit 0 cleared), the payload and the counter.
    """
    spec = BY_NAME[msg] if isinstance(msg, str) else BY_TYPE[msg]
    payload = spec.payload.build(fields)
    if sign_with is not None:
        flags |= FLAG_SIGNED
    header = {
        "version": version,
        "msg_type": spec.msg_type,
        "node": spec.node if node is None else node,
        "flags": flags,
        "seq": seq & 0xFFFF,
        "t_us": t_us & 0xFFFFFFFF,
    }
    signature = None
    if sign_with is not None:
        from .signing import tag_of

        key, sig_ctr = sign_with
        signed_part = Header.build(header) + payload
        signature = {"sig_ctr": sig_ctr, "tag": tag_of(key, signed_part, sig_ctr)}
    return Body.build(
        {"data": {"value": {"header": header, "payload": fields, "signature": signature}}},
        payload_len=len(payload),
    )


def encode_body(body: bytes) -> bytes:
    """COBS-stuff a body and close it with the delimiter (ICD §2)."""
    return cobs.encode(body) + DELIMITER


def encode_frame(msg: str | int, **kwargs: Any) -> bytes:
    """One wire frame, ready to write to the port.

    >>> encode_frame("PING", node=0x80, seq=9, t_us=12500, token=0xDEADBEEF).hex()
    '04018280020903d4300109efbeadde702e7a0100'
    """
    return encode_body(build_body(msg, **kwargs))


@dataclass(frozen=True)
class Retransmission:
    """A good frame its sender had already delivered (flags bit 0, a ``seq`` seen before):
    shown by the printer as it is on the wire, never taken twice by the pipeline."""

    frame: Message | UnknownFrame


@dataclass(frozen=True)
class Refused:
    """A good frame the signature check refused (ICD §9): ``reason`` is ``unsigned``,
    ``bad_tag`` or ``replayed``; shown by the printer, never reaching the timeline."""

    frame: Message | UnknownFrame
    reason: str


@dataclass(frozen=True)
class OverRate:
    """A good frame its node's rate limit dropped (protocol.ratelimit: the node floods the
    link): counted and shown by the printer, never reaching the timeline."""

    frame: Message | UnknownFrame


def parse_frame(encoded: bytes, offset: int = -1) -> Message | BadFrame | UnknownFrame:
    """Decode the bytes between two delimiters, checking in the ICD's order.

    COBS first, then body length, CRC, version, and the payload's length rule;
    only checked bytes reach construct.
    """
    try:
        body = cobs.decode(encoded)
    except cobs.DecodeError:
        return BadFrame("cobs", offset, len(encoded))
    return parse_body(body, offset, len(encoded))


def parse_body(body: bytes, offset: int = -1, length: int = 0) -> Message | BadFrame | UnknownFrame:
    """A frame's body (COBS undone, CRC included) through the checks after COBS;
    ``length`` is the bytes it took on the wire, for a bad frame's report."""
    if not MIN_BODY <= len(body) <= MAX_BODY:
        return BadFrame("length", offset, length)
    if crc32(body[:-4]) != int.from_bytes(body[-4:], "little"):
        return BadFrame("crc", offset, length)
    if body[0] != PROTOCOL_VERSION:
        return BadFrame("version", offset, length)
    signed = bool(body[3] & FLAG_SIGNED)
    if signed and len(body) < MIN_BODY + SIG_TRAILER:
        return BadFrame("payload length", offset, length)
    payload = body[HEADER_SIZE : -4 - SIG_TRAILER if signed else -4]
    msg_type = body[1]
    if msg_type not in BY_TYPE:
        h = Header.parse(body)
        return UnknownFrame(msg_type, h.node, h.seq, h.t_us, h.flags, bytes(payload), offset)
    if not layout(msg_type).payload_ok(payload):
        return BadFrame("payload length", offset, length)
    try:
        parsed = Body.parse(body, payload_len=len(payload)).data.value
    except (ChecksumError, ConstructError, UnicodeDecodeError):
        return BadFrame("payload length", offset, length)
    h = parsed.header
    sig = parsed.signature
    return Message(
        BY_TYPE[msg_type].name,
        msg_type,
        h.node,
        h.seq,
        h.t_us,
        h.flags,
        _plain(parsed.payload),
        offset,
        h.version,
        Signature(sig.sig_ctr, bytes(sig.tag)) if sig is not None else None,
    )
