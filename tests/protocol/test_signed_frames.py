"""Signed frames (ICD §9): the golden vectors, forged and replayed frames refused."""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path

import pytest
from cobs import cobs
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.catalogue import FLAG_RETRANSMISSION, MAX_SIGNED_PAYLOAD
from protocol.decoder import decode_capture
from protocol.framing import Message, Refused, Retransmission, build_body, encode_body, parse_frame
from protocol.signing import STORE_NAME, CounterStore, SignatureCheck

KEY = bytes(range(32))
REQUIRE = (1 << 3) | (1 << 7)  # cue, keypad


def _check(vectors: dict, store: CounterStore | None = None) -> SignatureCheck:
    signed = vectors["signed_frames"]
    return SignatureCheck(bytes.fromhex(signed["key"]), signed["require"], store)


def _outcome(item: object) -> str:
    if isinstance(item, Refused):
        return f"reject:{item.reason}"
    if isinstance(item, Retransmission):
        return "duplicate"
    assert isinstance(item, Message)
    return "accept"


def _as_vector(value: object) -> object:
    return value.hex() if isinstance(value, bytes) else value


def test_every_signed_golden_frame_decodes_to_its_fields(vectors):
    """With or without the key, the trailer is not part of the message's fields."""
    for frame in vectors["signed_frames"]["frames"]:
        msg = parse_frame(bytes.fromhex(frame["hex"])[:-1])
        assert isinstance(msg, Message), frame["name"]
        assert msg.name == frame["message"]
        assert {k: getattr(msg, k) for k in frame["header"]} == frame["header"]
        assert {k: _as_vector(v) for k, v in msg.fields.items()} == frame["fields"]
        if "sig_ctr" in frame:
            assert msg.signature is not None
            assert msg.signature.sig_ctr == frame["sig_ctr"]
            assert msg.signature.tag.hex() == frame["tag"]
        else:
            assert msg.signature is None


def test_signed_golden_stream_meets_every_expect(vectors):
    """The vectors as one stream, in order, through the bulk decoder holding the key."""
    frames = vectors["signed_frames"]["frames"]
    stream = b"".join(bytes.fromhex(f["hex"]) for f in frames)
    decoded = decode_capture(stream, _check(vectors))
    outcomes = [_outcome(item) for item in decoded.items()]
    assert outcomes == [f["expect"] for f in frames]
    # what was refused never reached the tables the timeline reads
    assert decoded.tables["CUE_CONTACT"]["seq"].tolist() == [41]
    assert decoded.stats.refused == {"cue": {"unsigned": 1, "bad_tag": 1, "replayed": 1}}


def test_signed_golden_stream_without_the_key_is_decoded_unverified(vectors):
    frames = vectors["signed_frames"]["frames"]
    stream = b"".join(bytes.fromhex(f["hex"]) for f in frames)
    decoded = decode_capture(stream)
    assert [_outcome(item) for item in decoded.items()].count("accept") == len(frames) - 1
    assert decoded.stats.signed == 5 and decoded.stats.refused == {}


def test_encoder_signs_exactly_as_the_golden_frames(vectors):
    signed = vectors["signed_frames"]
    key = bytes.fromhex(signed["key"])
    for frame in signed["frames"]:
        if "sig_ctr" not in frame or frame["expect"] == "reject:bad_tag":
            continue
        h = frame["header"]
        body = build_body(
            h["msg_type"],
            node=h["node"],
            seq=h["seq"],
            t_us=h["t_us"],
            flags=h["flags"],
            sign_with=(key, frame["sig_ctr"]),
            **frame["fields"],
        )
        assert encode_body(body).hex() == frame["hex"], frame["name"]


def _signed(seq: int, ctr: int, duration: int = 1350, node_msg: str = "CUE_CONTACT") -> bytes:
    fields = (
        {"duration_us": duration, "peak_force_dn": 900}
        if node_msg == "CUE_CONTACT"
        else {"key": 1 + duration % 8, "arg": 0}
    )
    return build_body(node_msg, seq=seq, t_us=1000 * seq, sign_with=(KEY, ctr), **fields)


def _taken(decoded) -> list[tuple[int, int]]:
    return [(int(r["node"]), int(r["seq"])) for t in decoded.tables.values() for r in t]


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(0, 0xFFFF),
    ctr=st.integers(0, 0xFFFFFFFF),
    duration=st.integers(0, 0xFFFF),
    keypad=st.booleans(),
    bit=st.data(),
)
def test_any_single_bit_change_of_a_signed_frame_is_refused(seq, ctr, duration, keypad, bit):
    """An attacker flips one bit and fixes the CRC: the frame never counts.  The one bit the
    tag does not cover, flags bit 0 (retransmission), changes nothing the frame says: after
    the original it is a duplicate, alone it is the original's very content."""
    body = _signed(seq, ctr, duration, "KEYPAD" if keypad else "CUE_CONTACT")
    data = body[:-4]
    flip = bit.draw(st.integers(0, 8 * len(data) - 1))
    mutated = bytearray(data)
    mutated[flip // 8] ^= 1 << (flip % 8)
    wire = encode_body(bytes(mutated) + zlib.crc32(mutated).to_bytes(4, "little"))
    original = parse_frame(cobs.encode(body))
    retx_bit = flip == 3 * 8 + 0  # flags bit 0

    alone = decode_capture(wire, SignatureCheck(KEY, REQUIRE))
    taken = [m for m in alone.items() if isinstance(m, Message)]
    if retx_bit:
        assert [(m.name, m.fields, m.seq) for m in taken] == [
            (original.name, original.fields, original.seq)
        ]
    else:
        assert taken == []

    after = decode_capture(encode_body(body) + wire, SignatureCheck(KEY, REQUIRE))
    assert [m.seq for m in after.items() if isinstance(m, Message)] == [seq]


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.integers(1, 1000), min_size=2, max_size=12),
    cut=st.data(),
    pick=st.data(),
    as_retx=st.booleans(),
)
def test_a_replay_of_any_earlier_frame_after_a_host_restart_is_refused(steps, cut, pick, as_retx):
    """The highest accepted counters live in the state directory: a host that restarts
    refuses every frame recorded before it stopped, a retransmission of the last one too."""
    ctrs = [sum(steps[: i + 1]) for i in range(len(steps))]
    bodies = [_signed(i, c, 100 + i) for i, c in enumerate(ctrs)]
    k = cut.draw(st.integers(1, len(bodies)))
    with tempfile.TemporaryDirectory() as state:
        store = CounterStore(Path(state) / STORE_NAME)
        first = SignatureCheck(KEY, REQUIRE, store)
        seen = decode_capture(b"".join(map(encode_body, bodies[:k])), first)
        assert len(_taken(seen)) == k
        first.save()

        restarted = SignatureCheck(KEY, REQUIRE, store)
        i = pick.draw(st.integers(0, k - 1))
        old = bytearray(bodies[i][:-4])
        if as_retx:
            old[3] |= FLAG_RETRANSMISSION
        wire = encode_body(bytes(old) + zlib.crc32(old).to_bytes(4, "little"))
        again = decode_capture(wire, restarted)
        assert _taken(again) == []
        assert [type(x) for x in again.items()] == [Refused]
        # the next genuine frame is still taken
        if k < len(bodies):
            assert len(_taken(decode_capture(encode_body(bodies[k]), restarted))) == 1


def test_counters_start_again_under_a_new_key(tmp_path):
    store = CounterStore(tmp_path / STORE_NAME)
    check = SignatureCheck(KEY, REQUIRE, store)
    assert len(_taken(decode_capture(encode_body(_signed(1, 500)), check))) == 1
    check.save()
    assert SignatureCheck(KEY, REQUIRE, store).highest_by_node() == {3: 500}
    assert SignatureCheck(bytes(32), REQUIRE, store).highest_by_node() == {}
    assert KEY.hex() not in (tmp_path / STORE_NAME).read_text()


def test_signed_payload_limit_and_short_signed_body():
    assert MAX_SIGNED_PAYLOAD == 228
    short = bytearray(build_body("PING", node=0x80, seq=1, token=1)[:-4])
    short[3] |= 2  # claims a trailer it has no room for
    wire = encode_body(bytes(short) + zlib.crc32(short).to_bytes(4, "little"))
    assert [type(x).__name__ for x in decode_capture(wire).items()] == ["BadFrame"]


def test_a_wrong_sized_key_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        SignatureCheck(b"short", REQUIRE)


def _cue(seq: int, t_us: int, duration: int, flags: int = 0) -> bytes:
    return encode_body(
        build_body(
            "CUE_CONTACT", seq=seq, t_us=t_us, flags=flags, duration_us=duration, peak_force_dn=900
        )
    )


def test_a_reused_seq_with_other_content_is_a_conflict_with_both_frames():
    """Without a key a forger is seen when the real node's next frame claims the seq the
    forged one took: counted, both frames reported, both kept (which one is true is not
    known), the later one's record marked."""
    forged = _cue(6, 120_000, 4100)
    real = _cue(6, 9_000_000, 1350)
    stream = _cue(5, 100_000, 1350) + forged + real + _cue(7, 9_500_000, 1200)
    decoded = decode_capture(stream)
    assert decoded.stats.conflicts == {"cue": 1}
    assert decoded.stats.lost == {}
    [conflict] = decoded.conflicts
    assert conflict.earlier.fields["duration_us"] == 4100  # a radio node: kept
    assert conflict.later.fields["duration_us"] == 1350 and conflict.later.seq == 6
    assert decoded.tables["CUE_CONTACT"]["seq"].tolist() == [5, 6, 6, 7]
    marks = decoded.frames["seq_mark"].tolist()
    assert marks[2] == 8 and marks[3] == 2  # conflict, then next: the window went on


def test_a_retransmission_or_exact_repeat_is_no_conflict():
    stream = _cue(5, 100_000, 1350) + _cue(5, 100_000, 1350, flags=1)
    assert decode_capture(stream).stats.conflicts == {}
    assert decode_capture(_cue(5, 100_000, 1350) * 2).stats.conflicts == {}


def test_a_conflict_is_found_across_chunks_and_with_the_key_held(vectors):
    from protocol.decoder import StreamDecoder

    first, forged = _cue(5, 100_000, 1350), _cue(6, 120_000, 4100)
    decoder = StreamDecoder()
    decoder.feed(first + forged)
    later = decoder.feed(_cue(6, 9_000_000, 1350))
    assert [c.earlier.fields["duration_us"] for c in later.conflicts] == [4100]
    # with a key, the keypad is held for the check: its conflicts are found all the same
    check = SignatureCheck(KEY, REQUIRE & ~(1 << 3))
    keyed = decode_capture(first + forged + _cue(6, 9_000_000, 1350), check)
    assert keyed.stats.conflicts == {"cue": 1}
