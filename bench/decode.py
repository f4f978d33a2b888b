"""Decoder throughput: bulk kernel vs streaming vs per-frame construct parse.

Builds a ~20 MB mixed capture of every message type, then times, in one run:
(a) the bulk decoder over the whole capture, (b) the streaming decoder fed
4 KiB chunks (a serial read's size), (c) the readable per-frame path
(COBS + CRC + construct parse of each frame) on a 1 MB slice.  Ratios are
the figures to trust; absolute times vary with the machine.

    python bench/decode.py [--mb 20]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from protocol.decoder import StreamDecoder, decode_capture
from protocol.framing import parse_frame
from protocol.synthetic import mixed_capture

SERIAL_12MBAUD_MBPS = 12e6 / 10 / 1e6  # 8N1: 10 bits a byte


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(megabytes: float = 20.0) -> dict[str, Any]:
    """The figures: MB/s and frames/s of each path, and the ratios the targets are set on."""
    capture = mixed_capture(int(megabytes * 1e6), seed=1)
    data = np.frombuffer(capture, np.uint8)
    mb = len(capture) / 1e6
    t0 = time.perf_counter()
    decode_capture(capture[:1000])  # compile or load the numba cache
    warmup = time.perf_counter() - t0

    bulk = decode_capture(data)
    n_frames = bulk.stats.frames
    t_bulk = best_of(3, lambda: decode_capture(data))

    def stream(chunk: int = 4096) -> None:
        dec = StreamDecoder()
        for i in range(0, len(capture), chunk):
            dec.feed(capture[i : i + chunk])

    t_stream = best_of(2, stream)

    part = capture[:1_000_000]
    pieces = part.split(b"\x00")[:-1]
    t_construct = best_of(1, lambda: [parse_frame(p) for p in pieces if p])
    construct_mbps = len(part) / 1e6 / t_construct
    construct_fps = len(pieces) / t_construct
    rows = [
        ("bulk decoder (numba, one pass)", mb / t_bulk, n_frames / t_bulk),
        ("streaming decoder, 4 KiB chunks", mb / t_stream, n_frames / t_stream),
        ("per-frame construct parse", construct_mbps, construct_fps),
    ]
    return {
        "mb": mb,
        "frames": n_frames,
        "types": len(bulk.tables),
        "warmup_s": warmup,
        "rows": rows,
        "bulk_x": rows[0][1] / construct_mbps,
        "stream_x": rows[1][1] / construct_mbps,
        "link_x": rows[1][1] / SERIAL_12MBAUD_MBPS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0)
    args = parser.parse_args()
    got = measure(args.mb)
    print(
        f"capture: {got['mb']:.1f} MB, {got['frames']} frames of {got['types']} types; "
        f"numba load/compile {got['warmup_s']:.2f} s"
    )
    for name, mbps, fps in got["rows"]:
        print(f"  {name:<32} {mbps:8.1f} MB/s {fps / 1e6:8.2f} M frames/s")
    print(f"  bulk / construct   {got['bulk_x']:8.1f} x  (target >= 100 x)")
    print(f"  stream / construct {got['stream_x']:8.1f} x")
    print(f"  stream / 12 Mbaud  {got['link_x']:8.1f} x  (target >= 15 x)")


if __name__ == "__main__":
    main()
