"""What `hil regress` costs: one worker's overhead against a plain replay loop, and table-hours
replayed per CPU-hour with 1 and 2 workers.

    python bench/regress.py                              # 6 captures of 15 min, 5 rounds
    python bench/regress.py --count 8 --minutes 15 --rounds 7

The same virtual-table captures (made once, in a temporary folder) two ways,
**alternately**, ``--rounds`` times in one run (loop then Dask, then Dask
then loop, ...), so a change of the shared machine's load falls on both:

* **plain loop**: one process doing what a user of ``firmware-host replay``
  gets, and no more: each capture read whole, replayed with its recorded
  presses, the cyclic garbage collector off (as the command runs), and the
  final verdicts kept;
* **Dask, 1 worker**: a LocalCluster (started once, the workers warmed, before
  the first round) of one single-threaded worker process, the captures
  through :func:`firmware_host.regress.run.replay_all` (a task per part,
  results streamed back, compared, Parquet written), timed from the first
  task to the last result written.

Per round, one worker's wall time over the loop's is the overhead (target
≤ 10 %); the median of the rounds is the figure, printed with the spread
(lowest, highest).  Beside it, CPU: the worker process's (every thread,
Dask's own included, from ``getrusage``), the tasks' own, and this client
process's (the comparison, the Parquet writer, the client and, on a
LocalCluster, the scheduler).  Then one run on **2 workers** against the
1-worker median: the scaling.  The machine is shared: the absolute times
move with its load, the ratios less; the load average is printed.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from firmware_host.cli.main import main as cli
from firmware_host.link.recorder import recorded_presses
from firmware_host.pipeline import replay
from firmware_host.regress.cluster import SAMPLE_BYTES, connect, prepare
from firmware_host.regress.corpus import find_recordings
from firmware_host.regress.progress import Progress
from firmware_host.regress.results import done_recordings
from firmware_host.regress.run import Plan, replay_all
from rules import RulesConfig

Measure = dict[str, float]


def make_captures(folder: Path, count: int, minutes: float) -> list[Path]:
    """The captures (kept from an earlier run with ``--corpus``: made only where missing)."""
    paths = []
    for seed in range(count):
        path = folder / f"match-{seed:03d}-{minutes:g}min.bin"
        if not path.exists():
            argv = ["simulate", "--capture", str(path), "--seed", str(seed + 100)]
            assert cli([*argv, "--minutes", str(minutes)]) == 0
        paths.append(path)
    return paths


def final_verdicts(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("kind") == "verdict" and not line.get("early")]


def plain_loop(paths: list[Path]) -> Measure:
    """``firmware-host replay`` over each capture in one process, its verdicts kept."""
    verdicts = {}
    gc.disable()  # as the replay command runs (cliutil.no_cycle_collection)
    try:
        wall, cpu = time.perf_counter(), time.thread_time()
        for path in paths:
            step = replay(path.read_bytes(), presses=recorded_presses(path))
            verdicts[path.name] = final_verdicts(step.lines)
        measured = {"wall_s": time.perf_counter() - wall, "cpu_s": time.thread_time() - cpu}
    finally:
        gc.enable()
    assert all(verdicts.values()), "a capture without a verdict"
    return measured


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    """Resident memory now (the worker warmed, before any task)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def on_dask(client: Any, threads: int, paths: list[Path], out: Path) -> Measure:
    """One run of the captures ``paths`` on ``client``'s (warmed) workers."""
    plan = Plan(find_recordings([str(p) for p in paths]), RulesConfig(), out)
    before, mine = client.run(_cpu), _cpu()
    wall = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        outcome = replay_all(client, plan, threads, Progress(len(plan.recordings), 1, quiet))
    wall = time.perf_counter() - wall
    after, mine = client.run(_cpu), _cpu() - mine
    assert not outcome.failed, outcome.failed
    done = done_recordings(out).values()
    shutil.rmtree(out)
    return {
        "wall_s": wall,
        "cpu_s": sum(after[w] - before[w] for w in after),
        "task_cpu_s": sum(c["cpu_s"] for c in done),
        "client_cpu_s": mine,
        "table_h": sum(c["table_s"] for c in done) / 3600,
    }


def warmed(client: Any, paths: list[Path]) -> int:
    """Every worker's kernels loaded (paid once, not timed); the threads to keep busy."""
    return prepare(client, paths[0].read_bytes()[:SAMPLE_BYTES])


def alternate(rounds: int, loop: Callable[[], Measure], dask: Callable[[], Measure]) -> list:
    """``rounds`` pairs, the order swapped each round (loop first in even rounds)."""
    pairs = []
    for n in range(rounds):
        if n % 2 == 0:
            first = loop()
            pairs.append((first, dask()))
        else:
            second = dask()
            pairs.append((loop(), second))
        a, b = pairs[-1]
        print(
            f"round {n + 1}/{rounds}: loop {a['wall_s']:.1f} s, Dask {b['wall_s']:.1f} s "
            f"({b['wall_s'] / a['wall_s'] - 1:+.1%}), load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
    return pairs


def spread(values: list[float]) -> str:
    """Median (lowest to highest), as percentages over 1."""
    return (
        f"{statistics.median(values) - 1:+.1%} ({min(values) - 1:+.1%} to {max(values) - 1:+.1%})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=6, help="captures (default 6)")
    parser.add_argument("--minutes", type=float, default=15.0, help="each (default 15)")
    parser.add_argument("--rounds", type=int, default=5, help="loop/Dask pairs (default 5)")
    parser.add_argument(
        "--corpus",
        type=Path,
        help="keep the captures here for the next run (default: a temporary"
        " folder); two versions compared on the very same captures",
    )
    args = parser.parse_args(argv)
    table_h = args.count * args.minutes / 60
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.corpus or Path(tmp) / "corpus"
        folder.mkdir(exist_ok=True)
        print(f"{args.count} captures of {args.minutes:g} min in {folder} ...", file=sys.stderr)
        paths = make_captures(folder, args.count, args.minutes)
        size = sum(p.stat().st_size for p in paths) / 1e6
        largest = max(p.stat().st_size for p in paths) / 1e6
        replay(paths[0].read_bytes()[:SAMPLE_BYTES])  # the loop's kernels loaded, as a worker's
        with connect(None, 1, "2GiB") as client:
            threads = warmed(client, paths)
            rest_mb = max(client.run(_rss_mb).values())
            runs = iter(range(args.rounds))
            pairs = alternate(
                args.rounds,
                lambda: plain_loop(paths),
                lambda: on_dask(client, threads, paths, Path(tmp) / f"out{next(runs)}"),
            )
            peak_mb = max(client.run(_peak_rss_mb).values())
        loads.append(os.getloadavg()[0])
        with connect(None, 2, "2GiB") as client:
            two = on_dask(client, warmed(client, paths), paths, Path(tmp) / "out-2")
        loads.append(os.getloadavg()[0])
    loops = [a for a, _ in pairs]
    ones = [b for _, b in pairs]

    def median(runs: list[Measure], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(
        f"{args.count} captures of {args.minutes:g} min, {table_h:.2f} table-hours, {size:.0f} MB "
        f"(the runs measured {ones[0]['table_h']:.2f}), {args.rounds} rounds; load average "
        f"{min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores (a shared machine)\n"
    )
    print(
        "| way (median of the rounds) | wall (s) | CPU (s) | table-h / CPU-h | of it in tasks (s) "
        "| client process CPU (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name, runs in (
        ("plain replay loop", loops),
        ("Dask, 1 worker", ones),
        ("Dask, 2 workers", [two]),
    ):
        cpu = median(runs, "cpu_s")
        tasks = f"{median(runs, 'task_cpu_s'):.1f}" if "task_cpu_s" in runs[0] else "-"
        client_cpu = f"{median(runs, 'client_cpu_s'):.1f}" if "client_cpu_s" in runs[0] else "-"
        print(
            f"| {name} | {median(runs, 'wall_s'):.1f} | {cpu:.1f} | {table_h / (cpu / 3600):.0f} "
            f"| {tasks} | {client_cpu} |"
        )
    print(
        f"\none worker against the plain loop, median of {args.rounds} rounds (lowest to highest):"
        f"\n  wall {spread([b['wall_s'] / a['wall_s'] for a, b in pairs])} (target <= 10 %)"
        f"\n  the worker process's CPU {spread([b['cpu_s'] / a['cpu_s'] for a, b in pairs])}"
        f"\n  the tasks' own CPU {spread([b['task_cpu_s'] / a['cpu_s'] for a, b in pairs])}"
        f"\n  this client process's CPU, over the loop's "
        f"{spread([1 + b['client_cpu_s'] / a['cpu_s'] for a, b in pairs])}"
    )
    one_wall = median(ones, "wall_s")
    print(
        f"\nscaling, 2 workers / 1 (throughput, one run against the median): "
        f"{one_wall / two['wall_s']:.2f}x (table-h per CPU-h "
        f"{median(ones, 'cpu_s') / two['cpu_s']:.2f}x)"
        f"\nworker memory (RSS): {rest_mb:.0f} MB warmed, before a task; peak {peak_mb:.0f} MB, "
        f"the largest capture {largest:.0f} MB "
        "(read in 1 MiB windows)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
