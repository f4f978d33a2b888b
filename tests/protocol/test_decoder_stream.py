"""Streaming decoder: chunking never changes the output; memory stays bounded;
per-node seq accounting (loss across the wrap, retransmissions once, reboot)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from protocol.decoder import Decoded, StreamDecoder, decode_capture
from protocol.framing import BadFrame, Message, encode_frame
from protocol.kernels import MAX_ENCODED
from protocol.synthetic import mixed_capture


def _feed_in_chunks(
    data: bytes, rng: np.random.Generator, max_chunk: int
) -> tuple[list, StreamDecoder]:
    dec = StreamDecoder()
    out: list[Decoded] = []
    i = 0
    while i < len(data):
        n = int(rng.integers(1, max_chunk + 1))
        out.append(dec.feed(data[i : i + n]))
        i += n
    return out, dec


def _concat(parts: list[Decoded]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    frames = np.concatenate([p.frames for p in parts])
    names = {name for p in parts for name in p.tables}
    tables = {
        name: np.concatenate([p.tables[name] for p in parts if name in p.tables]) for name in names
    }
    return frames, tables


def _corrupt(data: bytes, rng: np.random.Generator, n: int) -> bytes:
    buf = bytearray(data)
    for pos in rng.integers(0, len(buf), n):
        buf[pos] ^= int(rng.integers(1, 256))
    garbage = rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
    cut = len(buf) // 2
    return bytes(buf[:cut]) + garbage + bytes(buf[cut:])


@pytest.fixture(scope="module")
def corrupted_capture() -> bytes:
    rng = np.random.default_rng(7)
    return _corrupt(mixed_capture(10_000_000, seed=5), rng, 2000)


def test_bulk_and_streaming_agree_message_for_message(corrupted_capture):
    bulk = decode_capture(corrupted_capture)
    assert bulk.stats.bad_total > 1000 and bulk.stats.frames > 300_000
    parts, dec = _feed_in_chunks(corrupted_capture, np.random.default_rng(1), 70_000)
    frames, tables = _concat(parts)
    # Row numbers count per feed; everything else must be identical.
    cols = [c for c in frames.dtype.names if c != "row"]
    assert np.array_equal(frames[cols], bulk.frames[cols])
    assert tables.keys() == bulk.tables.keys()
    for name in tables:
        assert np.array_equal(tables[name], bulk.tables[name]), name
    assert dec.stats() == bulk.stats


@pytest.mark.parametrize("size, max_chunks", [(4_000, (1, 2, 3, 300)), (300_000, (100, 700, 5000))])
def test_random_chunk_sizes_give_identical_output_every_time(size, max_chunks):
    data = _corrupt(mixed_capture(size, seed=2), np.random.default_rng(2), size // 3000)
    runs = []
    for seed, max_chunk in enumerate(max_chunks):
        parts, dec = _feed_in_chunks(data, np.random.default_rng(seed), max_chunk)
        frames, tables = _concat(parts)
        runs.append((frames[["offset", "status", "msg_type", "seq", "t_us"]], tables, dec.stats()))
    first = runs[0]
    for frames, tables, stats in runs[1:]:
        assert np.array_equal(frames, first[0])
        assert all(np.array_equal(tables[n], first[1][n]) for n in first[1])
        assert stats == first[2]


def test_100_mb_without_a_delimiter_keeps_memory_bounded():
    dec = StreamDecoder()
    chunk = b"\x5a" * 1_000_000
    tracemalloc.start()
    try:
        for _ in range(100):
            assert len(dec.feed(chunk)) == 0
            assert dec.pending_bytes <= MAX_ENCODED
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * len(chunk), peak  # per-chunk work only, not the 100 MB seen
    bad, keypad = dec.feed(b"\x00" + encode_frame("KEYPAD", seq=1, key=1, arg=0)).items()
    assert (
        isinstance(keypad, Message)
        and isinstance(bad, BadFrame)
        and (bad.reason, bad.offset, bad.length) == ("length", 0, 100_000_000)
    )
    assert dec.stats().frames == 1


def _cushion(seq: int, flags: int = 0) -> bytes:
    return encode_frame(
        "CUSHION_HIT", seq=seq, t_us=seq, flags=flags, cushion=1, pos_mm=2, amplitude=3
    )


def _hello(seq: int, boot_id: int) -> bytes:
    fields = {
        "fw_major": 1,
        "fw_minor": 0,
        "fw_patch": 0,
        "proto": 1,
        "boot_id": boot_id,
        "hub_serial": 1,
        "table_length_mm": 3569,
        "table_width_mm": 1778,
        "ball_diameter_um": 68000,
        "nodes_present": 0xFF,
    }
    return encode_frame("HELLO", seq=seq, **fields)


@pytest.mark.parametrize(
    "stream, delivered, lost, duplicates",
    [
        pytest.param(
            [_cushion(s) for s in (65533, 65534, 65535, 0, 1)], 5, 0, 0, id="wrap, nothing lost"
        ),
        pytest.param([_cushion(s) for s in (65534, 1, 2)], 3, 2, 0, id="loss across the wrap"),
        pytest.param(
            [_cushion(5), _cushion(5, flags=1), _cushion(6)], 2, 0, 1, id="retransmission once"
        ),
        pytest.param(
            [_cushion(5), _cushion(7), _cushion(6, flags=1)], 3, 0, 0, id="lost frame recovered"
        ),
        pytest.param(
            [_cushion(5), _cushion(7), _cushion(6, flags=1), _cushion(6, flags=1)],
            3,
            0,
            1,
            id="recovered once",
        ),
        pytest.param(
            [_hello(0, 1), _cushion(100), _hello(0, 2), _cushion(0), _cushion(1)],
            5,
            0,
            0,
            id="reboot resets counters",
        ),
        pytest.param(
            [_hello(0, 1), _cushion(100), _hello(1, 1), _cushion(103)],
            4,
            2,
            0,
            id="same boot_id keeps counters",
        ),
    ],
)
def test_seq_accounting(stream, delivered, lost, duplicates):
    decoded = decode_capture(b"".join(stream))
    messages = [m for m in decoded.items() if isinstance(m, Message)]
    assert len(messages) == delivered
    assert sum(decoded.stats.lost.values()) == lost
    assert decoded.stats.duplicates == duplicates
