"""`decode`'s text listing made by the kernel (linktools/textlines.py) is the listing the
Python printer made, byte for byte: every message type, every seq mark, a retransmission,
the golden vectors (bad, unknown, signed frames), random field values, the corpus."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest
from construct import Bytes

from firmware_host.cli.main import main
from firmware_host.commands import decode
from protocol.catalogue import BY_NAME, MESSAGES
from protocol.framing import encode_frame
from protocol.layout import GREEDY, layout

ROOT = Path(__file__).resolve().parents[2]
HELLO = {"fw_major": 1, "fw_minor": 2, "fw_patch": 0, "proto": 1, "hub_serial": 7,
         "table_length_mm": 3550, "table_width_mm": 1775, "ball_diameter_um": 68000,
         "nodes_present": 0xFF}  # fmt: skip


class _Kept(io.BytesIO):
    """stdout's bytes, still there after the command closed its stream."""

    def close(self) -> None:
        pass


def listing(path: Path, *options: str, bulk: bool = True) -> tuple[int, bytes]:
    """``decode`` in this process: its status and stdout; ``bulk=False``: the Python
    printer (the listing before the kernel)."""
    out = _Kept()
    saved = sys.stdout, decode._bulk_text
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", newline="")
    if not bulk:
        decode._bulk_text = lambda *_: None
    try:
        status = main(["decode", *options, str(path)])
        sys.stdout.flush()
    finally:
        sys.stdout, decode._bulk_text = saved
    return status, out.getvalue()


def random_fields(name: str, rng: random.Random) -> dict:
    spec = BY_NAME[name]
    lay = layout(spec.msg_type)
    fields = {}
    for sub in spec.payload.subcons:
        if sub.name == "balls":
            fields["balls"] = [
                {"ball": rng.randrange(256), "state": rng.randrange(256),
                 "x": rng.choice((0, 65535, rng.randrange(65536))), "y": rng.randrange(65536)}
                for _ in range(rng.choice((0, 1, 16, rng.randrange(17))))
            ]  # fmt: skip
        elif isinstance(sub.subcon, Bytes):  # SETUP_SIGNING.key
            fields[sub.name] = bytes(rng.randrange(256) for _ in range(sub.subcon.sizeof()))
        elif lay.rule == GREEDY and sub.name == "text":
            fields["text"] = rng.choice(("ok", 'it\'s "quoted" ✓', ""))
        else:
            size = sub.subcon.sizeof()
            fields[sub.name] = rng.choice((0, 2 ** (8 * size) - 1, rng.randrange(2 ** (8 * size))))
    return fields


def marked_stream() -> bytes:
    """A HELLO, then the cue's frames with each seq mark: next, a gap, a late resend, a
    duplicate resend, a counter restart, a seq conflict; a reboot (a new boot_id)."""
    cue = {"duration_us": 900, "peak_force_dn": 40}
    frames = [
        encode_frame("HELLO", node=0, seq=0, t_us=1, boot_id=1, **HELLO),
        encode_frame("CUE_CONTACT", node=3, seq=10, t_us=100, **cue),
        encode_frame("CUE_CONTACT", node=3, seq=11, t_us=200, **cue),
        encode_frame("CUE_CONTACT", node=3, seq=15, t_us=300, **cue),  # GAP: 3 lost
        encode_frame("CUE_CONTACT", node=3, seq=13, t_us=250, flags=1, **cue),  # LATE
        encode_frame("CUE_CONTACT", node=3, seq=13, t_us=250, flags=1, **cue),  # DUPLICATE
        encode_frame("CUE_CONTACT", node=3, seq=16, t_us=400, **cue),
        encode_frame("CUE_CONTACT", node=3, seq=16, t_us=420, duration_us=1, peak_force_dn=2),
        encode_frame("CUE_CONTACT", node=3, seq=2, t_us=500, **cue),  # RESTART
        encode_frame("HELLO", node=0, seq=0, t_us=9, boot_id=2, **HELLO),  # REBOOT
        encode_frame("CUE_CONTACT", node=3, seq=65535, t_us=2**32 - 1, **cue),
        encode_frame("CUE_CONTACT", node=3, seq=0, t_us=0, **cue),  # NEXT over the wrap
    ]
    return b"".join(frames)


def random_stream(seed: int, n: int) -> bytes:
    """Frames of every type from every node (the catalogue's or any other), random fields,
    seqs, times and retransmission flags."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        spec = rng.choice(MESSAGES)
        node = spec.node if spec.node is not None and rng.random() < 0.8 else rng.randrange(256)
        out.append(encode_frame(spec.name, node=node, seq=rng.randrange(65536),
                                t_us=rng.randrange(2**32), flags=rng.choice((0, 0, 1)),
                                **random_fields(spec.name, rng)))  # fmt: skip
    return b"".join(out)


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory, vectors: dict) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("text-lines")
    golden = [f["hex"] for part in ("frames", "bad_frames", "unknown_type") for f in vectors[part]]
    golden += [vectors["resync_stream"]["hex"]]
    golden += [f["hex"] for f in vectors["signed_frames"]["frames"]]
    streams = {
        "vectors": b"".join(bytes.fromhex(h) for h in golden),
        "marks": marked_stream(),
        "random": random_stream(1, 3000),
        "cut": marked_stream() + b"\x05\x01\x02",  # ends inside a frame
    }
    for name, data in streams.items():
        (where / f"{name}.bin").write_bytes(data)
    return {name: where / f"{name}.bin" for name in streams}


@pytest.mark.parametrize("name", ["vectors", "marks", "random", "cut"])
def test_the_kernel_writes_the_printers_listing(captures: dict[str, Path], name: str) -> None:
    fast, slow = listing(captures[name]), listing(captures[name], bulk=False)
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]
    assert fast[1].count(b"\n") > 10


def test_every_mark_and_type_is_in_the_comparison(captures: dict[str, Path]) -> None:
    """The captures above hold what the kernel must spell: each mark, a retransmission, a
    16-ball frame, every type the kernel writes (so the byte test means something)."""
    text = listing(captures["marks"])[1].decode() + listing(captures["random"])[1].decode()
    for words in ("GAP: 3 lost before it", "LATE (fills a gap)", "DUPLICATE", "COUNTER RESTART",
                  "REBOOT", "SEQ CONFLICT", "(retx)", "balls[16]=", "balls[0]= ", "4294967295"):  # fmt: skip
        assert words in text, words
    for spec in MESSAGES:
        assert f"  {spec.name:<13} " in text, spec.name


def test_strict_stops_at_the_first_bad_frame_as_before(captures: dict[str, Path]) -> None:
    fast = listing(captures["vectors"], "--strict")
    assert fast == listing(captures["vectors"], "--strict", bulk=False)
    assert fast[0] == 1 and b"BAD " in fast[1].splitlines()[-1]


def test_a_corpus_capture_lists_the_same(tmp_path: Path) -> None:
    capture = ROOT / "hil_tests" / "corpus" / "break_12_1_2.full.bin"
    fast, slow = listing(capture), listing(capture, bulk=False)
    assert fast == slow and fast[1].count(b"\n") > 2000
