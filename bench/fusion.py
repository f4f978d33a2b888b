"""Timing core + fusion throughput: a one-hour full-sensor match, capture to ordered events.

Simulates (once, cached in the temp directory) a random one-hour match on
the virtual table with every sensor, then times in one run:

* cold: the numba compile of the timing and fusion kernels, in a fresh
  process with an empty cache (``NUMBA_CACHE_DIR`` pointed at a new
  directory), on a small capture;
* warm: the whole capture, decode included (best of three), then the
  split: decode, timeline (clock mapping and hub-time order), fusion;

and scores the events against the match's ground truth (attribution per
kind, order agreement).

    python bench/fusion.py [--minutes 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

COLD = """
import sys, time
t0 = time.perf_counter()
from firmware_host.fusion.stream import events_from_capture
data = open(sys.argv[1], "rb").read()[:2_000_000]
events_from_capture(data)
print(time.perf_counter() - t0)
"""


def capture(minutes: float, seed: int) -> tuple[Path, Path]:
    """The capture and its ground truth (JSON Lines), simulated once."""
    path = Path(tempfile.gettempdir()) / f"fusion-bench-{minutes:g}min-{seed}.bin"
    truth = path.with_suffix(".jsonl")
    if not (path.exists() and truth.exists()):
        from firmware_host.virtual_table.capture import truth_lines, write_truth
        from firmware_host.virtual_table.hub import HubConfig, build_wire
        from firmware_host.virtual_table.scenarios import random_match

        match = random_match(seed=seed, minutes=minutes)
        wire = build_wire(match, HubConfig(sensors="full", seed=seed))
        path.write_bytes(b"".join(wire.chunks))
        with open(truth, "w", encoding="utf-8") as out:
            write_truth(truth_lines(match, wire), out)
    return path, truth


def measure(minutes: float = 60.0, seed: int = 1) -> dict[str, Any]:
    """Cold and warm seconds, the split, and the events scored against the ground truth."""
    path, truth_path = capture(minutes, seed)
    data = path.read_bytes()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run(
            [sys.executable, "-c", COLD, str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        cold = float(out.stdout.split()[-1])

    from firmware_host.fusion.compare import pair_up, score
    from firmware_host.fusion.events import Fusion
    from firmware_host.fusion.stream import ROW_TYPES, events_from_capture, events_from_rows
    from firmware_host.timing.rows import to_rows
    from firmware_host.timing.timeline import Timeline
    from protocol.decoder import decode_capture

    events_from_capture(data[:2_000_000])  # load the cache
    runs = []
    for _ in range(3):  # best of three: the machine is shared
        t0 = time.perf_counter()
        events = events_from_capture(data)
        runs.append(time.perf_counter() - t0)
    total = min(runs)

    t0 = time.perf_counter()
    decoded = decode_capture(data)
    rows, tracks = to_rows(decoded.tables, ROW_TYPES)
    t_decode = time.perf_counter() - t0
    t0 = time.perf_counter()
    tl = Timeline()
    ordered = [tl.feed_rows(rows, tracks), tl.flush()]
    t_timeline = time.perf_counter() - t0
    t0 = time.perf_counter()
    fusion = Fusion()
    for part in ordered:
        fusion.feed(part, tl.released_upto)
    fusion.flush()
    t_fusion = time.perf_counter() - t0
    assert len(events_from_rows(rows, tracks)) == len(events)

    truth = [json.loads(line) for line in truth_path.read_text().splitlines()]
    truth = [e for e in truth if "type" in e]
    scores, far, close, _ = score(events, truth)
    found = {id(t) for t, _ in pair_up(events, truth, "cushion")}
    missed = [e for e in truth if e.get("type") == "cushion" and id(e) not in found]
    return {
        "minutes": minutes,
        "mb": len(data) / 1e6,
        "frames": decoded.stats.frames,
        "events": len(events),
        "cold_s": cold,
        "warm_s": total,
        "decode_s": t_decode,
        "timeline_s": t_timeline,
        "fusion_s": t_fusion,
        "scores": scores,
        "order_far": far,
        "order_close": close,
        "missed_cushions": missed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    got = measure(args.minutes, args.seed)
    print(
        f"capture: {args.minutes:g} min full sensors, {got['mb']:.1f} MB, {got['frames']} frames, "
        f"{got['events']} events"
    )
    print(f"cold compile (empty numba cache, small capture): {got['cold_s']:.1f} s")
    print(
        f"warm, capture -> events: {got['warm_s']:.2f} s  (decode + rows {got['decode_s']:.2f} s, "
        f"timeline {got['timeline_s']:.2f} s, fusion {got['fusion_s']:.2f} s)"
    )
    print("against the ground truth:\n" + "\n".join(f"  {s}" for s in got["scores"]))
    print(
        f"  order agreement: events > 1 ms apart {got['order_far']:.4%}, "
        f"closer {got['order_close']:.2%}"
    )
    speeds = sorted(e.get("speed_mps", float("nan")) for e in got["missed_cushions"])
    print(
        f"  cushion hits never found: {len(speeds)}, speeds (m/s) {[round(v, 3) for v in speeds]}"
    )


if __name__ == "__main__":
    main()
