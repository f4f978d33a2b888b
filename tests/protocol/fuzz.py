"""Frame-level fuzzing: mutated captures with valid CRCs through every path of the pipeline.

Each run takes a base capture of the virtual table, applies a few random
:mod:`firmware_host.virtual_table.mutate` mutations (strange timestamps, clock jumps, stray HELLOs,
reboots without HELLO, duplicated and reordered frames …) and feeds the
result through the batch path (``events``), the chunked replay (``replay``)
and the live path (chunks stamped with a host clock, with ticks between).
A run fails if any of them raises, if events leave ``t_us`` order or go
negative, or if a buffer overflowed; runs where batch and replay disagree
are counted apart.

Run it with numba's bounds checking on, so that an index past a buffer is an
``IndexError`` here and not silent memory corruption in the daemon::

    NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=/tmp/nb-bounds \\
        python tests/protocol/fuzz.py --runs 10000
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from firmware_host.virtual_table import mutate

CHUNK_SIZES = (1, 7, 64, 512, 4096, 65536)
#: Batch and replay agree on every stream within the datasheet (tests/timing/test_timing_order.py);
#: on a mutated one they may not (a clock jump re-times a derived contact by a few hundred µs):
#: counted, not a failure.
DIVERGED = "replay's events differ from the batch path's"


@dataclass
class Outcome:
    """What one mutated capture did to the pipeline; ``problems`` is empty when it held."""

    run: int
    mutations: list[str]
    problems: list[str] = field(default_factory=list)
    events: int = 0
    verdicts: int = 0


#: numba's cache for the bounds-checked kernels (they must not be mixed with the fast ones)
BOUNDS_CHECKED_CACHE = Path(tempfile.gettempdir()) / "firmware-host-numba-boundscheck"
#: flock'd by a process compiling into that cache for others to wait on (the suite's warm-up)
COMPILING_LOCK = BOUNDS_CHECKED_CACHE / "compiling.lock"


def bounds_checked_env() -> dict[str, str]:
    """The environment of a fuzzing process: numba's bounds checks on, their own cache."""
    cache = str(BOUNDS_CHECKED_CACHE)
    return {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": cache}


def base_captures(minutes: float = 0.4) -> list[bytes]:
    """Short virtual-table matches as the fuzzer's raw material: each sensor set, and a full
    table whose clocks wrap and whose hub reboots mid-match."""
    from firmware_host.virtual_table.faults import FaultPlan
    from firmware_host.virtual_table.hub import HubConfig, build_wire
    from firmware_host.virtual_table.match import random_match

    configs = [
        HubConfig(sensors=s, seed=seed) for seed, s in enumerate(("full", "middle", "minimum"), 1)
    ]
    configs.append(HubConfig(seed=4, near_wrap=True, faults=FaultPlan(reboots_s=(minutes * 30,))))
    return [b"".join(build_wire(random_match(c.seed, minutes), c).chunks) for c in configs]


def _ordered(events: list[dict[str, Any]], where: str) -> list[str]:
    times = [e["t_us"] for e in events]
    problems = []
    if any(t < 0 for t in times):
        problems.append(f"{where}: negative t_us")
    if any(b < a for a, b in itertools.pairwise(times)):
        problems.append(f"{where}: events out of t_us order")
    return problems


def _live(data: bytes, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The daemon's path: chunks with the host's receive clock, and ticks between them."""
    from firmware_host.pipeline import Pipeline

    pipe = Pipeline()
    events: list[dict[str, Any]] = []
    host_ns = 1_000_000_000
    start = 0
    while start < len(data):
        size = int(rng.choice(CHUNK_SIZES))
        host_ns += int(rng.integers(0, 20_000_000))
        events += pipe.feed(data[start : start + size], host_ns).events
        if rng.random() < 0.3:
            events += pipe.tick(host_ns + 5_000_000).events
        start += size
    events += pipe.flush().events
    return events, pipe.events.counters


def check(data: bytes, rng: np.random.Generator) -> list[str]:
    """Every path over one capture; the problems found (none: the pipeline held)."""
    from firmware_host.fusion.stream import EventStream, events_from_capture
    from firmware_host.pipeline import replay

    problems: list[str] = []
    stream = EventStream()
    batch = events_from_capture(data, stream)
    problems += _ordered(batch, "events")
    if stream.counters.get("overflow"):
        problems.append(f"events: a buffer overflowed ({stream.counters})")
    replayed = replay(data, chunk=int(rng.choice(CHUNK_SIZES[3:])))
    problems += _ordered(replayed.events, "replay")
    if replayed.events != batch:
        problems.append(DIVERGED)
    live, counters = _live(data, rng)
    problems += _ordered(live, "live")
    if counters.get("overflow"):
        problems.append(f"live: a buffer overflowed ({counters})")
    return problems


def one_run(split: list[list[bytes]], seed: int, run: int, max_mutations: int = 4) -> Outcome:
    """Run number ``run`` of seed ``seed``: reproducible on its own (``--only``)."""
    rng = np.random.default_rng([seed, run])
    bodies = split[run % len(split)]
    mutated, names = mutate.mutate(bodies, rng, int(rng.integers(1, max_mutations + 1)))
    outcome = Outcome(run, names)
    try:
        outcome.problems = check(mutate.join(mutated), rng)
    except Exception:  # noqa: BLE001 -- the point of a fuzzer: any exception is a finding
        outcome.problems = [traceback.format_exc(limit=-3)]
    return outcome


def runs(bases: list[bytes], n_runs: int, seed: int, first: int = 0) -> Iterator[Outcome]:
    """Runs ``first`` … ``first + n_runs - 1``, each a mutated capture checked on every path."""
    split = [mutate.split(b) for b in bases]
    for run in range(first, first + n_runs):
        yield one_run(split, seed, run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--first",
        type=int,
        default=0,
        help="number of the first run (--runs 1 --first N: run N alone)",
    )
    parser.add_argument("--minutes", type=float, default=0.4, help="length of each base capture")
    parser.add_argument(
        "--base",
        action="append",
        type=Path,
        metavar="CAPTURE",
        help="a capture to mutate instead of the built-in matches (repeat it for more); "
        "the virtual table's physics is then never compiled here (with bounds checks: a minute)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    bases = [path.read_bytes() for path in args.base] if args.base else base_captures(args.minutes)
    failed = diverged = 0
    last = time.monotonic()
    for outcome in runs(bases, args.runs, args.seed, args.first):
        diverged += DIVERGED in outcome.problems
        failures = [p for p in outcome.problems if p != DIVERGED]
        if failures:
            failed += 1
        if outcome.problems:
            print(f"run {outcome.run} {outcome.mutations}: {outcome.problems}", flush=True)
        if time.monotonic() - last > 2:
            last = time.monotonic()
            done = outcome.run + 1 - args.first
            print(f"… {done}/{args.runs} runs, {failed} failed", file=sys.stderr, flush=True)
    print(
        f"{args.runs} mutated captures, {failed} failed, {diverged} where replay and batch "
        f"differ, {time.monotonic() - started:.0f} s",
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
