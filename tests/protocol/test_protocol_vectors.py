"""Every golden frame of ICD-vectors.json, through both decoders and the encoder."""

from __future__ import annotations

import zlib

import numpy as np
from cobs import cobs

from protocol import kernels
from protocol.catalogue import BY_NAME, HEADER_SIZE
from protocol.crc import CRC_TABLES
from protocol.decoder import StreamDecoder, decode_capture
from protocol.framing import BadFrame, Message, UnknownFrame, encode_frame, parse_frame

HEADER_KEYS = ("version", "msg_type", "node", "flags", "seq", "t_us")


def as_vector_fields(fields: dict) -> dict:
    """The vectors write BALL_TRACK balls as [ball, state, x, y] lists."""
    out = dict(fields)
    if "balls" in out:
        out["balls"] = [[b["ball"], b["state"], b["x"], b["y"]] for b in out["balls"]]
    return out


def header_of(msg: Message) -> dict:
    return {key: getattr(msg, key) for key in HEADER_KEYS}


def test_every_golden_frame_decodes_exactly(vectors):
    for frame in vectors["frames"]:
        wire = bytes.fromhex(frame["hex"])
        one = parse_frame(wire[:-1])
        assert isinstance(one, Message), frame["name"]
        assert one.name == frame["message"]
        assert header_of(one) == frame["header"]
        assert as_vector_fields(one.fields) == frame["fields"]

        bulk = list(decode_capture(wire).items())
        assert len(bulk) == 1
        assert header_of(bulk[0]) == frame["header"], frame["name"]
        assert bulk[0].name == frame["message"]
        assert as_vector_fields(bulk[0].fields) == frame["fields"], frame["name"]


def test_encoder_reproduces_every_golden_frame(vectors):
    for frame in vectors["frames"]:
        h = frame["header"]
        fields = dict(frame["fields"])
        if "balls" in fields:
            fields["balls"] = [dict(zip(("ball", "state", "x", "y"), b)) for b in fields["balls"]]
        wire = encode_frame(
            h["msg_type"], node=h["node"], seq=h["seq"], t_us=h["t_us"], flags=h["flags"], **fields
        )
        assert wire.hex() == frame["hex"], frame["name"]


def test_bad_frames_rejected_with_their_reason(vectors):
    for frame in vectors["bad_frames"]:
        wire = bytes.fromhex(frame["hex"])
        one = parse_frame(wire[:-1])
        assert isinstance(one, BadFrame) and one.reason == frame["reason"], frame["name"]
        decoded = decode_capture(wire)
        assert not decoded.tables, frame["name"]
        assert [item.reason for item in decoded.items()] == [frame["reason"]]
        assert decoded.stats.bad == {frame["reason"]: 1}


def test_unknown_type_is_counted_and_kept_raw_not_decoded(vectors):
    for frame in vectors["unknown_type"]:
        wire = bytes.fromhex(frame["hex"])
        decoded = decode_capture(wire)
        assert decoded.tables == {}
        assert decoded.stats.unknown == 1 and decoded.stats.bad == {}
        (item,) = decoded.items()
        assert isinstance(item, UnknownFrame)
        body = cobs.decode(wire[:-1])
        assert (item.msg_type, item.payload) == (body[1], body[HEADER_SIZE:-4])


def test_resync_stream_gives_one_message_and_keeps_the_partial_frame(vectors):
    stream = bytes.fromhex(vectors["resync_stream"]["hex"])
    expected = vectors["resync_stream"]["decoded_count"]
    decoded = decode_capture(stream)
    assert decoded.stats.frames == expected == 1
    partial = len(stream) - (stream.rstrip(b"\x00").rfind(b"\x00") + 1)
    assert decoded.pending_bytes == partial > 0
    # Byte by byte, the streaming decoder sees the same.
    dec = StreamDecoder()
    got = [m for i in range(len(stream)) for m in dec.feed(stream[i : i + 1]).items()]
    assert [m.name for m in got if isinstance(m, Message)] == ["CUSHION_HIT"]
    assert dec.pending_bytes == partial


def test_crc_is_crc32_iso_hdlc():
    data = np.frombuffer(b"123456789", np.uint8)
    assert kernels.crc32(data, 0, 9, CRC_TABLES) == 0xCBF43926 == zlib.crc32(b"123456789")
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 9, 63, 240):
        blob = rng.integers(0, 256, n, dtype=np.uint8)
        assert kernels.crc32(blob, 0, n, CRC_TABLES) == zlib.crc32(blob.tobytes())


def test_kernel_boot_id_offset_comes_from_the_catalogue():
    hello = BY_NAME["HELLO"].payload
    before = 0
    for sub in hello.subcons:
        if sub.name == "boot_id":
            break
        before += sub.sizeof()
    assert kernels._BOOT_ID_AT == HEADER_SIZE + before
