"""What "durable before the lamp" costs: the spool write a verdict waits for (issue 23).

A table on the club's broker writes each verdict or notice line to its
SQLite spool, with what was queued before it, before the daemon prints it
or drives the lamp (``TablePublisher.line``).  That write is time the lamp
waits.  This runs N virtual tables (``club-sim``'s, each a real pty, daemon,
publisher and spool on disk) against a Mosquitto on this machine, all in one
process so that each publisher thread contends with the pipeline threads as
it would, and times on each pipeline thread, for every line:

* ``queue``: the line and its state put on the outbox (what the sink cost
  before: nothing written);
* ``write``: the durable write that now follows it (the lamp's added delay):
  ``TablePublisher._durable``, the line's rows copied into the spool's
  memory-mapped journal (SQLite's write is the publisher thread's).

Both are measured in the same run, line by line; the target is write p99 <= 5 ms.

    python bench/durable_lamp.py [--tables 4] [--speed 4] [--minutes 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware_host.mqtt import publisher as publisher_module
from firmware_host.mqtt import sim
from firmware_host.mqtt.broker import Mosquitto
from firmware_host.mqtt.topics import broker_url

TARGET_MS = 5.0


def timed_lines(folder: Path) -> tuple[list[float], list[float], list[float], list[float]]:
    """Wrap TablePublisher.line: (queue ms, write ms, control ms, the write's CPU ms: the
    thread's own time in it, without its waits for a core or the GIL) for every line, on its
    own thread.  The control is the least any durable write costs there: one ``os.write`` of a
    line's size to a file (the thread gives up the GIL once, as for any system call)."""
    queue_ms: list[float] = []
    write_ms: list[float] = []
    control_ms: list[float] = []
    cpu_ms: list[float] = []
    control = os.open(folder / "control", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    lock = threading.Lock()
    original_write = publisher_module.TablePublisher._durable

    here = threading.local()  # the pipeline thread in line(): its writes are timed

    def line(self, line, state, lamp):
        started = time.perf_counter_ns()
        here.timing, here.write_ms = True, 0.0
        try:
            original_line(self, line, state, lamp)
        finally:
            here.timing = False
        total = (time.perf_counter_ns() - started) / 1e6
        with lock:
            queue_ms.append(total - here.write_ms - here.control_ms)

    def write(self):
        if not getattr(here, "timing", False):
            return original_write(self)
        # Every other line the control goes first: the first system call after the thread
        # held the GIL a while pays the wait for it back, whichever call that is.
        first = len(write_ms) % 2 == 0
        if first:
            timed_control()
        started, spent = time.perf_counter_ns(), time.thread_time_ns()
        try:
            return original_write(self)
        finally:
            here.write_ms = (time.perf_counter_ns() - started) / 1e6
            with lock:
                write_ms.append(here.write_ms)
                cpu_ms.append((time.thread_time_ns() - spent) / 1e6)
            if not first:
                timed_control()

    def timed_control() -> None:
        started = time.perf_counter_ns()
        os.write(control, b"x" * 600)
        here.control_ms = (time.perf_counter_ns() - started) / 1e6
        with lock:
            control_ms.append(here.control_ms)

    original_line = publisher_module.TablePublisher.line
    publisher_module.TablePublisher.line = line  # type: ignore[method-assign]
    publisher_module.TablePublisher._durable = write  # type: ignore[method-assign]
    return queue_ms, write_ms, control_ms, cpu_ms


def figures(values: list[float]) -> dict[str, float]:
    data = np.array(values)
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(data, 50)), 3),
        "p99_ms": round(float(np.percentile(data, 99)), 3),
        "max_ms": round(float(data.max()), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--speed", type=float, default=4.0)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    say = (lambda text: None) if args.json else (lambda text: print(text, file=sys.stderr))
    names = [f"t{n + 1}" for n in range(args.tables)]
    wires = sim.build(names, args.seed, args.minutes, "full", say)
    with tempfile.TemporaryDirectory() as folder, Mosquitto(Path(folder) / "broker") as broker:
        queue_ms, write_ms, control_ms, cpu_ms = timed_lines(Path(folder))
        summary = sim.play(
            broker_url(broker.url),
            names,
            wires,
            speed=args.speed,
            spool_dir=Path(folder),
            say=say,
        )
    result = {
        "tables": args.tables,
        "speed": args.speed,
        "lines": sum(t["lines"] for t in summary["tables"].values()),
        "queue": figures(queue_ms),
        "write": figures(write_ms),
        "write_cpu": figures(cpu_ms),
        "load_1min": round(os.getloadavg()[0], 1),
        "control_os_write": figures(control_ms),
        "target_write_p99_ms": TARGET_MS,
    }
    if args.json:
        print(json.dumps(result))
    else:
        q, w, c = result["queue"], result["write"], result["control_os_write"]
        u = result["write_cpu"]
        print(
            f"{result['lines']} lines on {args.tables} tables at {args.speed:g}x: "
            f"queue p50 {q['p50_ms']} ms, p99 {q['p99_ms']} ms; durable write (the lamp's added "
            f"delay) p50 {w['p50_ms']} ms, p99 {w['p99_ms']} ms, max {w['max_ms']} ms "
            f"(target p99 <= {TARGET_MS:g} ms); one os.write on the same thread p50 "
            f"{c['p50_ms']} ms, p99 {c['p99_ms']} ms, max {c['max_ms']} ms; the durable "
            f"write's own CPU time p50 {u['p50_ms']} ms, p99 {u['p99_ms']} ms, max "
            f"{u['max_ms']} ms; load average {result['load_1min']}"
        )
    return 0 if result["write"]["p99_ms"] <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
