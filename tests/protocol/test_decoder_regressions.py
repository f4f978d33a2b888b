"""Decoder regressions found against an independent decoder (issue 30), each on a capture
built here: the 254-byte body whose COBS encoding ends in a full 0xFF block, and the
retransmission that arrives long after its original."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from cobs import cobs
from proc_util import run_cli as cli

from firmware_host.linktools.linkstats import link_stats
from protocol import kernels as k
from protocol.catalogue import MAX_BODY, MAX_PAYLOAD
from protocol.decoder import StreamDecoder, decode_capture
from protocol.framing import UnknownFrame, encode_body, encode_frame, parse_frame
from protocol.kernels import UNKNOWN
from protocol.seqwindow import (
    DUPLICATE,
    FIRST,
    GAP,
    LATE,
    NEXT,
    RESTART,
    WINDOW,
    account,
    seq_states,
)

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


def keypad(seq: int, flags: int = 0) -> bytes:
    return encode_frame("KEYPAD", seq=seq, t_us=seq * 1000, flags=flags, key=1, arg=0)


def test_a_retransmission_100_frames_late_is_a_duplicate_not_a_counter_restart(
    tmp_path: Path,
) -> None:
    """ICD §3 (flags bit 0) and §7: a radio node's resend may come late; nothing was lost."""
    seqs = [(s, 0) for s in range(200)]
    seqs.insert(150, (50, 1))  # frame 50 again, 100 frames after it
    capture = b"\x00" + b"".join(keypad(s, f) for s, f in seqs)
    decoded = decode_capture(capture)
    assert decoded.stats.lost == {} and decoded.stats.duplicates == 1
    assert decoded.frames["seq_mark"][150] == DUPLICATE
    assert decoded.frames["status"][150] == k.DUPLICATE
    assert len(decoded.tables["KEYPAD"]) == 200  # every press once, none twice
    path = tmp_path / "late.bin"
    path.write_bytes(capture)
    summary = cli("decode", "--json", str(path)).stdout.splitlines()[-1]
    assert json.loads(summary)["summary"]["lost"] == {}
    stats = link_stats(np.frombuffer(capture, np.uint8))
    assert stats["nodes"]["7"]["lost"]["count"] == 0  # stats and decode agree


@pytest.mark.parametrize("late_by", [1, 63, 64, 100, WINDOW - 1])
def test_a_late_retransmission_of_a_lost_frame_fills_its_gap(late_by: int) -> None:
    """Frame 10 lost, then resent ``late_by`` frames after the one that showed the gap."""
    seqs = [(s, 0) for s in range(12 + late_by) if s != 10]
    seqs.insert(10 + late_by, (10, 1))
    decoded = decode_capture(b"".join(keypad(s, f) for s, f in seqs))
    assert decoded.stats.lost == {} and decoded.stats.duplicates == 0
    marks = decoded.frames["seq_mark"]
    assert marks[10] == GAP and decoded.frames["seq_gap"][10] == 1
    assert marks[10 + late_by] == LATE
    assert len(decoded.tables["KEYPAD"]) == 12 + late_by


def test_a_resend_older_than_the_window_is_taken_as_delivered() -> None:
    """Too old to tell whether the original came: never delivered twice, the loss stays."""
    seqs = [(s, 0) for s in range(WINDOW + 20) if s != 10]
    seqs.append((10, 1))
    decoded = decode_capture(b"".join(keypad(s, f) for s, f in seqs))
    assert decoded.frames["seq_mark"][-1] == DUPLICATE
    assert decoded.stats.lost == {7: 1} and decoded.stats.duplicates == 1


@pytest.mark.parametrize(
    ("seqs", "marks", "lost"),
    [
        ([(65534, 0), (65535, 0), (0, 0), (3, 0)], [FIRST, NEXT, NEXT, GAP], 2),
        ([(65534, 0), (1, 0), (65535, 1), (0, 1)], [FIRST, GAP, LATE, LATE], 0),  # across the wrap
        ([(65000, 0), (100, 1)], [FIRST, GAP], 635),  # a resend ahead is a new frame
        ([(500, 0), (501, 0), (3, 0), (4, 0)], [FIRST, NEXT, RESTART, NEXT], 0),
        ([(500, 0), (500, 0)], [FIRST, RESTART], 0),  # the same seq without the flag
        ([(500, 0), (500, 1)], [FIRST, DUPLICATE], 0),
        ([(500, 0), (40000, 1)], [FIRST, DUPLICATE], 0),  # half the counter behind: a resend
    ],
)
def test_the_sequence_window(seqs: list[tuple[int, int]], marks: list[int], lost: int) -> None:
    state = seq_states(1)
    got = [account(state[0], s, bool(r)) for s, r in seqs]
    assert [m for m, _ in got] == marks
    assert sum(n for _, n in got) - sum(m == LATE for m, _ in got) == lost
    decoded = decode_capture(b"".join(keypad(s, r) for s, r in seqs))
    assert decoded.frames["seq_mark"].tolist() == marks  # the kernel runs the same rule
