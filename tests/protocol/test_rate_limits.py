"""Per-node rate limits on each node's own clock (issue 29 point 3): a flood is dropped,
counted and marked; a real table, a break included, never trips a limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from protocol import ratelimit
from protocol.decoder import StreamDecoder, decode_capture
from protocol.framing import OverRate, encode_frame
from protocol.kernels import OVER_RATE

CORPUS = Path(__file__).resolve().parents[2] / "hil_tests" / "corpus"
WRAP = 1 << 32


def _track(seq: int, t_us: int) -> bytes:
    return encode_frame("BALL_TRACK", node=4, seq=seq & 0xFFFF, t_us=t_us % WRAP, frame=0, balls=[])


def _stamps(hz: float, seconds: float, rng: np.random.Generator, start: int = 0) -> np.ndarray:
    """A camera's exposures at ``hz`` on its own clock, stamp jitter σ 100 µs (ICD §7)."""
    t = np.arange(0, seconds, 1 / hz) * 1e6 + rng.normal(0, 100, int(np.ceil(seconds * hz)))
    return (np.rint(np.sort(t)).astype(np.int64) + start) % WRAP


@pytest.mark.parametrize("hz", [120.0, 240.0])
def test_a_tracker_at_its_datasheet_rate_is_never_dropped(hz):
    stamps = _stamps(hz, 120.0, np.random.default_rng(7), start=WRAP - 30_000_000)  # wraps
    decoded = decode_capture(b"".join(_track(i, int(t)) for i, t in enumerate(stamps)))
    assert decoded.stats.over_rate == {}
    assert decoded.stats.per_type["BALL_TRACK"] == len(stamps)
    assert decoded.stats.lost == {} and len(decoded.marks) == 0


def test_a_flood_is_dropped_from_its_third_frame_counted_once_and_marked_until_calm():
    rng = np.random.default_rng(3)
    real = _stamps(120.0, 4.0, rng)
    flood = np.arange(1_000_000, 1_500_000, 200)  # 5 000 frames/s for 0.5 s of its clock
    stamps = np.sort(np.concatenate((real, flood)))
    frames = [_track(i, int(t)) for i, t in enumerate(stamps)]  # one seq counter, as a node
    dec = StreamDecoder()
    parts = [dec.feed(b"".join(frames[i : i + 97])) for i in range(0, len(frames), 97)]
    table = np.concatenate([p.frames for p in parts])
    marks = np.concatenate([p.marks for p in parts])
    dropped = table["status"] == OVER_RATE
    first = int(np.flatnonzero(dropped)[0])
    assert table["t_us"][first] == flood[1] or table["t_us"][first] == flood[2]
    assert [int(r) for r in marks["rate"]] == [ratelimit.FLOOD, ratelimit.CALM]
    # dated from before the frames that emptied the bucket: the flood's first is set aside too
    assert marks["mark_t"][0] < flood[0]
    # calm once the tracker kept to its rate for 1 s of its own clock
    assert 1_000_000 <= int(marks["mark_t"][1]) + 1 - int(flood[-1]) < 1_000_000 + 13_000
    assert dec.stats().over_rate == {"tracker": int(dropped.sum())}
    assert not dropped[table["t_us"] > marks["mark_t"][1]].any()
    assert dec.stats().lost == {}  # what the limit dropped is counted as such, never as lost
    over = [item for p in parts for item in p.items() if isinstance(item, OverRate)]
    assert len(over) == dropped.sum() and over[0].frame.name == "BALL_TRACK"


def test_the_hubs_heartbeat_is_held_to_1_hz_and_its_other_frames_to_nothing():
    hub = []
    for i in range(40):  # 10 Hz heartbeats and 40 Hz syncs for 4 s of the hub's clock
        t = i * 100_000
        hub.append(encode_frame("HEARTBEAT", seq=5 * i, t_us=t, uptime_s=i, nodes_ok=1,
                                rx_bad=0, tx_dropped=0, indicator=0))  # fmt: skip
        for k in range(1, 5):
            hub.append(encode_frame("CLOCK_SYNC", seq=5 * i + k, t_us=t + k, peer=1, peer_t_us=0))
    stats = decode_capture(b"".join(hub)).stats
    assert 30 <= stats.over_rate["hub"] <= 37
    assert stats.per_type["CLOCK_SYNC"] == 160


def test_a_burst_of_contacts_within_milliseconds_is_no_flood():
    """A break: 900 rails hits in 4 ms, then 900 a second for 5 s, on the rails' clock."""
    t = np.concatenate((np.linspace(0, 4_000, 900), 10_000 + np.arange(4500) * 1_111))
    frames = [
        encode_frame(
            "CUSHION_HIT", node=1, seq=i, t_us=int(s), cushion=i % 6, pos_mm=9, amplitude=99
        )
        for i, s in enumerate(t)
    ]
    assert decode_capture(b"".join(frames)).stats.over_rate == {}
    beyond = [
        encode_frame("CUSHION_HIT", node=1, seq=i, t_us=i, cushion=0, pos_mm=9, amplitude=99)
        for i in range(1_100)
    ]
    # 1 000 in the burst and 1 more earned in the 1.1 ms: the rest dropped
    assert decode_capture(b"".join(beyond)).stats.over_rate == {"rails": 99}


def test_a_clock_that_restarts_is_followed_without_credit():
    """A node's clock read far behind its newest stamp (a reboot whose HELLO was lost) is
    followed; stamps that leap between two times minutes apart buy no frames."""
    ok = [_track(i, 50_000_000 + i * 8_333) for i in range(100)]
    ok += [_track(100 + i, 1_000 + i * 8_333) for i in range(100)]  # restarted near 0
    assert decode_capture(b"".join(ok)).stats.over_rate == {}
    jumping = [_track(i, (i % 2) * 400_000_000 + i) for i in range(100)]
    assert decode_capture(b"".join(jumping)).stats.over_rate["tracker"] >= 90


def test_no_capture_of_the_corpus_trips_a_limit():
    """The HIL corpus (breaks, pushes, the full sensor set): not one frame over a limit."""
    captures = sorted(CORPUS.glob("*.bin"))
    assert len(captures) > 30
    for path in captures:
        assert decode_capture(path.read_bytes()).stats.over_rate == {}, path.name
