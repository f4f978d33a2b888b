"""Property tests of the codec: round trips for arbitrary fields, and fuzzing."""

from __future__ import annotations

import dataclasses

import numpy as np
from construct import Bytes, FocusedSeq, FormatField, StringEncoded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.catalogue import MESSAGES, MessageSpec
from protocol.decoder import decode_capture
from protocol.encode import encode_records
from protocol.framing import Message, encode_frame, parse_frame
from protocol.synthetic import mixed_frames, random_records


def _field_strategy(con, spec: MessageSpec):
    """Valid values for one construct field, derived from the catalogue."""
    if isinstance(con, FormatField):
        return st.integers(0, 2 ** (8 * con.sizeof()) - 1)
    if isinstance(con, FocusedSeq):  # PrefixedArray of a Struct
        item = con.subcons[1].subcon.subcon
        return st.lists(_struct_strategy(item, spec), max_size=spec.max_items)
    if isinstance(con, Bytes):  # SETUP_SIGNING.key
        return st.binary(min_size=con.sizeof(), max_size=con.sizeof())
    if isinstance(con, StringEncoded):
        return st.text(max_size=spec.max_items).filter(lambda s: len(s.encode()) <= spec.max_items)
    raise AssertionError(f"no strategy for {con!r}")


def _struct_strategy(struct, spec: MessageSpec):
    return st.fixed_dictionaries(
        {sub.name: _field_strategy(sub.subcon, spec) for sub in struct.subcons}
    )


@st.composite
def messages(draw):
    spec = draw(st.sampled_from(MESSAGES))
    header = {
        "node": draw(st.integers(0, 255)),
        "seq": draw(st.integers(0, 0xFFFF)),
        "t_us": draw(st.integers(0, 2**32 - 1)),
        "flags": draw(st.sampled_from([0, 1])),
    }
    return spec, header, draw(_struct_strategy(spec.payload, spec))


@settings(max_examples=400, deadline=None)
@given(messages())
def test_every_message_round_trips_through_both_decoders(msg):
    spec, header, fields = msg
    wire = encode_frame(spec.name, **header, **fields)
    one = parse_frame(wire[:-1])
    assert isinstance(one, Message)
    assert (one.name, one.fields) == (spec.name, fields)
    assert {k: getattr(one, k) for k in header} == header
    (bulk,) = decode_capture(wire).items()
    assert bulk == dataclasses.replace(one, offset=0)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MESSAGES), st.integers(0, 2**32 - 1))
def test_bulk_encoder_matches_the_construct_encoder(spec, seed):
    rec = random_records(spec.msg_type, 3, np.random.default_rng(seed))
    for wire, row in zip(encode_records(rec), rec):
        one = parse_frame(wire[:-1])
        assert isinstance(one, Message)
        rebuilt = encode_frame(
            spec.name, node=one.node, seq=one.seq, t_us=one.t_us, flags=one.flags, **one.fields
        )
        assert rebuilt == wire


MUTATIONS = st.sampled_from(["flip", "insert", "delete", "truncate"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**16), MUTATIONS, st.integers(0, 2**31), st.integers(1, 255))
def test_mutated_streams_never_raise_never_forge_and_lose_only_touched_frames(
    seed, how, where, value
):
    frames = mixed_frames(12, seed)
    stream = b"".join(frames)
    ends = np.cumsum([len(f) for f in frames])
    pos = where % len(stream)
    if how == "flip":
        mutated = stream[:pos] + bytes([stream[pos] ^ value]) + stream[pos + 1 :]
    elif how == "insert":
        mutated = stream[:pos] + bytes([value % 256]) + stream[pos:]
    elif how == "delete":
        mutated = stream[:pos] + stream[pos + 1 :]
    else:
        mutated = stream[:pos]
    # Frames whose bytes (delimiter included) the mutation reached; a lost
    # delimiter also merges the next frame into the damaged one.
    hit = int(np.searchsorted(ends, pos, side="right"))
    touched = {hit, hit + 1} if how != "truncate" else set(range(hit, len(frames)))

    originals = [parse_frame(f[:-1]) for f in frames]
    decoded = [m for m in decode_capture(mutated).items() if isinstance(m, Message)]
    key = lambda m: (m.name, m.node, m.seq, m.t_us, m.flags, repr(m.fields))
    original_keys = [key(m) for m in originals]
    got = [key(m) for m in decoded]
    # Nothing forged: every message decoded is one that was sent.
    assert all(g in original_keys for g in got)
    # Nothing else lost: every frame the mutation did not touch is decoded.
    for i, k in enumerate(original_keys):
        if i not in touched:
            assert k in got, (how, pos, i)
