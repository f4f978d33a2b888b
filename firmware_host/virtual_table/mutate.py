"""A hostile table: frame-level mutations of a capture that keep every CRC valid.

Byte-level damage (:mod:`.faults`) only exercises the decoder, which drops
what fails its checks.  These mutations make frames that *pass* every check
but carry strange values -- a timestamp seconds ahead, a clock that jumps, a
stray HELLO, a reboot whose HELLO is lost, duplicated and reordered frames --
so that they reach the timing core and fusion, where a bad value must be
counted and survived, never written past a buffer.

A capture is handled as a list of frame bodies (header, payload, CRC; COBS
removed); :func:`join` re-frames them.

>>> bodies = split(capture)                                   # doctest: +SKIP
>>> bodies = shift_time(bodies, first_of(bodies, "CUSHION_HIT"), 5_000_000)  # doctest: +SKIP
>>> damaged = join(bodies)                                    # doctest: +SKIP
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
from cobs import cobs

from protocol.catalogue import BY_NAME, HEADER_SIZE, crc32
from protocol.framing import DELIMITER, build_body, encode_body

_T_US = slice(6, 10)
_SEQ = slice(4, 6)


def split(capture: bytes) -> list[bytes]:
    """Every body of a capture whose frame decodes (COBS-valid), in wire order."""
    bodies = []
    for encoded in capture.split(DELIMITER):
        if not encoded:
            continue
        try:
            bodies.append(cobs.decode(encoded))
        except cobs.DecodeError:
            continue
    return bodies


def join(bodies: list[bytes]) -> bytes:
    """Bodies back onto the wire (a leading delimiter, as a hub that just booted)."""
    return DELIMITER + b"".join(encode_body(b) for b in bodies)


def seal(body: bytes | bytearray) -> bytes:
    """A body with its CRC recomputed over header and payload (ICD §2)."""
    core = bytes(body[:-4])
    return core + struct.pack("<I", crc32(core))


def msg_type(body: bytes) -> int:
    return body[1]


def node(body: bytes) -> int:
    return body[2]


def t_us(body: bytes) -> int:
    return int.from_bytes(body[_T_US], "little")


def with_t_us(body: bytes, value: int) -> bytes:
    out = bytearray(body)
    out[_T_US] = (value & 0xFFFFFFFF).to_bytes(4, "little")
    return seal(out)


def with_seq(body: bytes, value: int) -> bytes:
    out = bytearray(body)
    out[_SEQ] = (value & 0xFFFF).to_bytes(2, "little")
    return seal(out)


def with_node(body: bytes, value: int) -> bytes:
    out = bytearray(body)
    out[2] = value & 0xFF
    return seal(out)


def indices(bodies: list[bytes], name: str) -> list[int]:
    """Positions of every body of one message type."""
    code = BY_NAME[name].msg_type
    return [i for i, b in enumerate(bodies) if len(b) > HEADER_SIZE and msg_type(b) == code]


def shift_time(bodies: list[bytes], i: int, delta_us: int) -> list[bytes]:
    """One frame's stamp moved by ``delta_us`` (a glitch: the rest of its node is unchanged)."""
    out = list(bodies)
    out[i] = with_t_us(out[i], t_us(out[i]) + delta_us)
    return out


def clock_jump(bodies: list[bytes], from_index: int, peer: int, delta_us: int) -> list[bytes]:
    """Node ``peer``'s clock steps by ``delta_us`` from a wire position on.

    Its own frames and the hub's CLOCK_SYNC samples of it move together, as
    when a node's firmware resets its counter.
    """
    sync = BY_NAME["CLOCK_SYNC"].msg_type
    out = list(bodies)
    for i in range(from_index, len(out)):
        b = out[i]
        if len(b) <= HEADER_SIZE:
            continue
        if node(b) == peer:
            out[i] = with_t_us(b, t_us(b) + delta_us)
        elif node(b) == 0 and msg_type(b) == sync and b[HEADER_SIZE] == peer:
            raw = bytearray(b)
            peer_t = int.from_bytes(raw[HEADER_SIZE + 1 : HEADER_SIZE + 5], "little")
            raw[HEADER_SIZE + 1 : HEADER_SIZE + 5] = ((peer_t + delta_us) & 0xFFFFFFFF).to_bytes(
                4, "little"
            )
            out[i] = seal(raw)
    return out


def hub_step(bodies: list[bytes], from_index: int, delta_us: int) -> list[bytes]:
    """The hub's clock steps by ``delta_us`` (back, for a negative one) with no HELLO.

    Every hub frame from ``from_index`` on moves; the peers' clocks do not.
    """
    out = list(bodies)
    for i in range(from_index, len(out)):
        if len(out[i]) > HEADER_SIZE and node(out[i]) == 0:
            out[i] = with_t_us(out[i], t_us(out[i]) + delta_us)
    return out


def stray_hello(bodies: list[bytes], at: int, boot_id: int = 0x5EED) -> list[bytes]:
    """A HELLO with a new boot_id dropped into the middle of a running stream."""
    hello = build_body(
        "HELLO",
        seq=0,
        t_us=t_us(bodies[at]) if node(bodies[at]) == 0 else 0,
        fw_major=1,
        fw_minor=0,
        fw_patch=0,
        proto=1,
        boot_id=boot_id,
        hub_serial=1,
        table_length_mm=3569,
        table_width_mm=1778,
        ball_diameter_um=68_000,
        nodes_present=0xFF,
    )
    return [*bodies[:at], hello, *bodies[at:]]


def drop_type(bodies: list[bytes], name: str, start: int = 0) -> list[bytes]:
    """Every frame of one type from ``start`` on removed (a reboot whose HELLO is lost)."""
    code = BY_NAME[name].msg_type
    return [b for i, b in enumerate(bodies) if i < start or len(b) <= 1 or msg_type(b) != code]


def _duplicate(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    i = int(rng.integers(len(bodies)))
    return [*bodies[: i + 1], bodies[i], *bodies[i + 1 :]]


def _reorder(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    i = int(rng.integers(len(bodies) - 1))
    out = list(bodies)
    out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _glitch(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    i = int(rng.integers(len(bodies)))
    delta = int(rng.choice([-1, 1]) * 10 ** rng.uniform(3, 9.6))
    return shift_time(bodies, i, delta)


def _jump(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    delta = int(rng.choice([-1, 1]) * 10 ** rng.uniform(4, 9.6))
    return clock_jump(bodies, int(rng.integers(len(bodies))), int(rng.integers(1, 8)), delta)


def _hub_step(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    delta = int(rng.choice([-1, 1]) * 10 ** rng.uniform(3, 9.6))
    return hub_step(bodies, int(rng.integers(len(bodies))), delta)


def _hello(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    return stray_hello(bodies, int(rng.integers(len(bodies))), int(rng.integers(1 << 32)))


def _seq(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    i = int(rng.integers(len(bodies)))
    out = list(bodies)
    out[i] = with_seq(out[i], int(rng.integers(1 << 16)))
    return out


def _node(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    i = int(rng.integers(len(bodies)))
    out = list(bodies)
    out[i] = with_node(out[i], int(rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 0x7F, 0x80, 0xFF])))
    return out


def _clock_sync(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    """A CLOCK_SYNC sample far from the peer's real clock."""
    at = int(rng.integers(len(bodies)))
    t = t_us(bodies[at]) if node(bodies[at]) == 0 else int(rng.integers(1 << 32))
    body = build_body(
        "CLOCK_SYNC",
        seq=int(rng.integers(1 << 16)),
        t_us=t,
        peer=int(rng.integers(0, 9)),
        peer_t_us=int(rng.integers(1 << 32)),
    )
    return [*bodies[:at], body, *bodies[at:]]


def _lost_hello_reboot(bodies: list[bytes], rng: np.random.Generator) -> list[bytes]:
    """Every later frame restarts its clock and seq near zero, with no HELLO."""
    start = int(rng.integers(len(bodies)))
    base: dict[int, int] = {}
    out = list(bodies[:start])
    for b in bodies[start:]:
        if len(b) <= HEADER_SIZE:
            continue
        n = node(b)
        base.setdefault(n, t_us(b) - int(rng.integers(0, 2_000_000)))
        out.append(with_t_us(b, t_us(b) - base[n]))
    return out


MUTATIONS: dict[str, Callable[[list[bytes], np.random.Generator], list[bytes]]] = {
    "duplicate": _duplicate,
    "reorder": _reorder,
    "glitch": _glitch,
    "jump": _jump,
    "hub_step": _hub_step,
    "hello": _hello,
    "seq": _seq,
    "node": _node,
    "clock_sync": _clock_sync,
    "lost_hello_reboot": _lost_hello_reboot,
}


def mutate(
    bodies: list[bytes], rng: np.random.Generator, count: int
) -> tuple[list[bytes], list[str]]:
    """``count`` random mutations in a row; returns the bodies and the names applied."""
    names = list(MUTATIONS)
    applied = []
    for _ in range(count):
        name = names[int(rng.integers(len(names)))]
        bodies = MUTATIONS[name](bodies, rng)
        applied.append(name)
    return bodies, applied
