"""A forger near the table (issue 29): frames injected on the radio, good CRC and all.

The cue tip and the keypad reach the hub by radio, so anyone with a cheap
transmitter can add frames the hub relays as its own.  The attacker knows
the protocol and has listened to the match, but not the table's key:

* ``forge-cue@T``: one CUE_CONTACT 20 ms (cue clock) after the last real
  contact before T, in the cue's next ``seq`` -- a double hit (item 18)
  that never was;
* ``forge-keypad@T``: a KEYPAD "referee foul 16" in the keypad's next
  ``seq`` (its last stamp + 1 s);
* ``replay-old@T``: the earliest cue frame of the match, byte for byte as
  it was heard (signed, if the table signs), sent again.

Forged frames are unsigned when the table signs nothing; under a key the
forger signs with a key of its own (a tag the host refuses).  Each is a
chunk of its own (``chunk_frame`` -1: no frame truth; the match truth is
the match without the attacker).
"""

from __future__ import annotations

import numpy as np

from protocol.catalogue import BY_NAME, KEYPAD_CODES
from protocol.framing import build_body, encode_body

from .faults import FaultPlan

CUE_CONTACT = BY_NAME["CUE_CONTACT"].msg_type
KEYPAD = BY_NAME["KEYPAD"].msg_type
FORGED_GAP_US = 20_000
FORGER_KEY = bytes(range(100, 132))  # not the table's: what a forger who signs must use


def _last(truth: np.ndarray, frames: np.ndarray, msg_type: int) -> int | None:
    """Row (in ``frames``, truth rows in wire order) of the last frame of this type."""
    rows = frames[truth["msg_type"][frames] == msg_type]
    return int(rows[-1]) if len(rows) else None


def _forged(msg: str, seq: int, t_us: int, signing: bool, **fields: int) -> bytes:
    sign = (FORGER_KEY, 1 << 31) if signing else None
    return encode_body(build_body(msg, seq=seq + 1, t_us=t_us, sign_with=sign, **fields))


def attack(
    chunks: list[bytes],
    chunk_frame: np.ndarray,
    wire_s: np.ndarray,
    truth: np.ndarray,
    plan: FaultPlan,
    signing: bool,
) -> tuple[list[bytes], np.ndarray]:
    """The chunks with the plan's attacks inserted where they happen; ``wire_s``: each
    truth row's wire time, ``signing``: whether the table signs (the forger signs too)."""
    chunks = list(chunks)
    for kind, at_s in sorted(plan.attacks, key=lambda a: -a[1]):
        before = np.flatnonzero(chunk_frame >= 0)
        before = before[wire_s[chunk_frame[before]] <= at_s]
        heard = chunk_frame[before]
        forged = _one(kind, chunks, before, heard, truth, signing)
        if forged is None:
            continue
        where = int(before[-1]) + 1 if len(before) else 0
        chunks.insert(where, forged)
        chunk_frame = np.insert(chunk_frame, where, -1)
    return chunks, chunk_frame


def _one(
    kind: str,
    chunks: list[bytes],
    before: np.ndarray,
    heard: np.ndarray,
    truth: np.ndarray,
    signing: bool,
) -> bytes | None:
    """One attack's frame, from what the forger heard before it (None: nothing to work on)."""
    if kind == "forge-cue":
        last = _last(truth, heard, CUE_CONTACT)
        if last is None:
            return None
        seq, t_us = int(truth["seq"][last]), int(truth["t_us"][last])
        stamp = (t_us + FORGED_GAP_US) & 0xFFFFFFFF
        return _forged("CUE_CONTACT", seq, stamp, signing, duration_us=1200, peak_force_dn=800)
    if kind == "forge-keypad":
        last = _last(truth, heard, KEYPAD)
        seq, t_us = (-1, 0) if last is None else (int(truth["seq"][last]), int(truth["t_us"][last]))
        return _forged(
            "KEYPAD", seq, (t_us + 1_000_000) & 0xFFFFFFFF, signing,
            key=KEYPAD_CODES["referee_foul"], arg=16,
        )  # fmt: skip
    cue = before[truth["msg_type"][heard] == CUE_CONTACT]
    return chunks[int(cue[0])] if len(cue) else None
