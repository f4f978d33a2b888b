"""Decoder regressions found against an independent decoder (issue 30), each on a capture
built here: the 254-byte body whose COBS encoding ends in a full 0xFF block, and the
retransmission that arrives long after its original."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cobs import cobs

from protocol.catalogue import MAX_BODY, MAX_PAYLOAD
from protocol.decoder import StreamDecoder, decode_capture
from protocol.framing import UnknownFrame, encode_body, parse_frame
from protocol.kernels import UNKNOWN

UNKNOWN_TYPE = 0x7E


def full_block_body(size: int = MAX_BODY) -> bytes:
    """A body of ``size`` bytes (an unknown type; at 254, a 240-byte payload) with no zero
    byte anywhere, so at 254 its COBS encoding is one full block: 0xFF, the 254 bytes, and
    no trailing code byte.

    Flags bit 0 (a retransmission) keeps the flags byte non-zero; seq is searched until the
    CRC has no zero byte either.
    """
    payload = bytes(range(1, 241))[: size - 14]
    assert size < MAX_BODY or len(payload) == MAX_PAYLOAD
    for seq in range(0x0101, 0xFFFF):
        if 0 in seq.to_bytes(2, "little"):
            continue
        head = bytes([1, UNKNOWN_TYPE, 6, 1]) + seq.to_bytes(2, "little") + bytes([9, 9, 9, 9])
        body = head + payload
        body += zlib.crc32(body).to_bytes(4, "little")
        if 0 not in body:
            return body
    raise AssertionError("no seq gives a CRC without a zero byte")


def test_a_254_byte_body_ending_in_a_full_cobs_block_decodes() -> None:
    body = full_block_body()
    assert len(body) == MAX_BODY
    wire = encode_body(body)
    assert wire[0] == 0xFF and len(wire) == MAX_BODY + 2  # one full block, then the delimiter
    assert cobs.decode(wire[:-1]) == body  # the reference COBS agrees on the encoding
    reference = parse_frame(wire[:-1], 1)
    assert isinstance(reference, UnknownFrame)
    capture = b"\x00" + wire + wire[:-1] + b"\x00"  # twice: the second one ends the capture
    decoded = decode_capture(capture)
    assert decoded.stats.bad == {} and decoded.stats.unknown == 1 and decoded.stats.duplicates == 1
    first = decoded.frames[0]
    assert first["status"] == UNKNOWN and first["length"] == MAX_BODY - 4
    assert decoded.unknown == [reference]


def test_the_full_block_decodes_whatever_the_chunk_boundaries() -> None:
    """Split at every byte: the block's last byte and its delimiter may come in two reads."""
    wire = b"\x00" + encode_body(full_block_body())
    for cut in range(1, len(wire)):
        decoder = StreamDecoder()
        parts = [decoder.feed(wire[:cut]), decoder.feed(wire[cut:])]
        frames = np.concatenate([p.frames for p in parts])
        assert frames["status"].tolist() == [UNKNOWN], cut
        assert decoder.stats().bad == {}


@pytest.mark.parametrize("size", [253, 254])
def test_a_body_of_nonzero_bytes_decodes_at_each_length_near_the_limit(size: int) -> None:
    """253 bytes encode as a short last group (its zero is the delimiter); 254 as a full one."""
    body = full_block_body(size)
    decoded = decode_capture(b"\x00" + encode_body(body))
    assert decoded.stats.bad == {} and len(decoded.unknown) == 1
    assert decoded.unknown[0].payload == body[10:-4]
