"""What `hil regress` costs: table-hours replayed per CPU-hour on Dask, 1 and 2 workers, and one
worker's overhead against a plain replay loop over the same captures.

    python bench/regress.py                         # 8 captures of 15 min (2 table-hours)
    python bench/regress.py --count 16 --minutes 30

Three ways over the same virtual-table captures (made once, in a temporary
folder), in one run:

* **plain loop**: one process, ``replay(capture)`` for each, as
  ``firmware-host replay`` does: the floor any way of running must pay;
* **Dask, 1 worker** and **Dask, 2 workers**: a LocalCluster of single-threaded
  worker processes, the captures through :func:`firmware_host.regress.run.replay_all`
  (a task per part, results streamed back, Parquet written), timed from the
  first task to the last result.  The cluster's start and the workers' warm-up
  are printed apart: they are paid once per run, not per capture.

Per way: wall time, the workers' CPU time (every thread of the worker
processes, Dask's own included, from ``getrusage``), table-hours per
CPU-hour and per wall-hour.  Then the ratios: 2 workers' throughput over
1 worker's (the scaling), and one worker's wall time over the plain loop's
(the overhead; target ≤ 10 %).  The machine is shared: the absolute times
move with its load, the ratios less; say so beside any figure quoted.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from firmware_host.cli.main import main as cli
from firmware_host.pipeline import replay
from firmware_host.regress.cluster import SAMPLE_BYTES, connect, prepare
from firmware_host.regress.corpus import find_recordings
from firmware_host.regress.progress import Progress
from firmware_host.regress.results import done_recordings
from firmware_host.regress.run import Plan, replay_all
from rules import RulesConfig


def make_captures(folder: Path, count: int, minutes: float) -> list[Path]:
    paths = []
    for seed in range(count):
        path = folder / f"match-{seed:03d}.bin"
        argv = ["simulate", "--capture", str(path), "--seed", str(seed + 100)]
        assert cli([*argv, "--minutes", str(minutes)]) == 0
        paths.append(path)
    return paths


def plain_loop(paths: list[Path]) -> dict[str, float]:
    replay(paths[0].read_bytes()[:SAMPLE_BYTES])  # kernels loaded, as a worker's warm-up does
    wall, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        replay(path.read_bytes())
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    """Resident memory now (the worker warmed, before any task)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def on_dask(folder: Path, workers: int, out: Path) -> dict[str, float]:
    recordings = find_recordings([str(folder)])
    plan = Plan(recordings, RulesConfig(), out)
    sample = Path(recordings[0].parts[0].url).read_bytes()[:SAMPLE_BYTES]
    started = time.perf_counter()
    with connect(None, workers, "2GiB") as client:
        threads = prepare(client, sample)
        ready = time.perf_counter()
        rest_mb = max(client.run(_rss_mb).values())
        before = client.run(_cpu)
        wall = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            outcome = replay_all(client, plan, threads, Progress(len(recordings), 1, quiet))
        wall = time.perf_counter() - wall
        after = client.run(_cpu)
        peak_mb = max(client.run(_peak_rss_mb).values())
    assert not outcome.failed, outcome.failed
    done = done_recordings(out).values()
    table_s = sum(c["table_s"] for c in done)
    return {
        "task_cpu_s": sum(c["cpu_s"] for c in done),
        "peak_mb": peak_mb,
        "rest_mb": rest_mb,
        "start_s": ready - started,
        "wall_s": wall,
        "cpu_s": sum(after[w] - before[w] for w in after),
        "measured_table_h": table_s / 3600,
    }


def row(name: str, table_h: float, m: dict[str, float]) -> list[str]:
    return [
        name,
        f"{m['wall_s']:.1f}",
        f"{m['cpu_s']:.1f}",
        f"{table_h / (m['cpu_s'] / 3600):.0f}",
        f"{table_h / (m['wall_s'] / 3600):.0f}",
        f"{m['task_cpu_s']:.1f}" if "task_cpu_s" in m else "-",
        f"{m['start_s']:.1f}" if "start_s" in m else "-",
    ]


def table(rows: list[list[str]]) -> str:
    head = [
        "way",
        "wall (s)",
        "CPU (s)",
        "table-h / CPU-h",
        "table-h / wall-h",
        "of it in tasks (s)",
    ]
    head.append("start (s)")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=8, help="captures (default 8)")
    parser.add_argument("--minutes", type=float, default=15.0, help="each (default 15)")
    args = parser.parse_args(argv)
    table_h = args.count * args.minutes / 60
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        print(f"making {args.count} captures of {args.minutes:g} min ...", file=sys.stderr)
        paths = make_captures(folder, args.count, args.minutes)
        size = sum(p.stat().st_size for p in paths) / 1e6
        biggest = max(p.stat().st_size for p in paths) / 1e6
        loop = plain_loop(paths)
        one = on_dask(folder, 1, Path(tmp) / "out1")
        two = on_dask(folder, 2, Path(tmp) / "out2")
    print(
        f"{args.count} captures of {args.minutes:g} min, {table_h:.2f} table-hours, {size:.0f} MB "
        f"(the runs measured {one['measured_table_h']:.2f}); load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)\n"
    )
    rows = [row("plain replay loop", table_h, loop), row("Dask, 1 worker", table_h, one)]
    print(table([*rows, row("Dask, 2 workers", table_h, two)]))
    scaling = one["wall_s"] / two["wall_s"]
    per_cpu = (table_h / two["cpu_s"]) / (table_h / one["cpu_s"])
    overhead = one["wall_s"] / loop["wall_s"] - 1
    cpu_overhead = one["cpu_s"] / loop["cpu_s"] - 1
    task_overhead = one["task_cpu_s"] / loop["cpu_s"] - 1
    print(
        f"\nworker memory (RSS): {max(one['rest_mb'], two['rest_mb']):.0f} MB warmed, before a "
        f"task; peak {max(one['peak_mb'], two['peak_mb']):.0f} MB, "
        f"the largest capture {biggest:.0f} MB (read in 1 MiB windows)"
    )
    print(
        f"\nscaling, 2 workers / 1 (throughput): {scaling:.2f}x (table-h per CPU-h {per_cpu:.2f}x)"
        f"\none worker against the plain loop: wall {overhead:+.1%}, CPU {cpu_overhead:+.1%} "
        f"(target <= 10 %); the tasks' own CPU {task_overhead:+.1%}, Dask's runtime the rest"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
