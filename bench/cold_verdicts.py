"""The first start's verdicts: how long after its shot's end each one comes, cold and warm.

``firmware-host run`` (the README's main job: the built-in virtual table)
is started with an empty numba cache of its own, so it referees with the
interpreted pipeline while the kernels compile in the background
(docs/startup.md), and records what it read (``--record``: every chunk
with its host receive time).  Each verdict line is stamped as it arrives
on ``run``'s stdout (``time.monotonic_ns``: the clock the daemon stamps
its reads with).  Afterwards the recording is replayed through the
compiled pipeline here, chunk by chunk at the times they were read, with
the daemon's idle ticks between, which gives for every shot:

* **end**: the moment the host had read the hub's clock past the shot's
  ``shot_end`` (the shot is over, as far as the host can know);
* **ideal**: when a warm daemon (compiled from the start) would have
  released the verdict on those same reads;
* **arrived**: when the verdict came out of ``run``.

``arrived - end`` is what a referee waits after the balls stop (the
issue's bound: 1 s at 1x); ``arrived - ideal`` is what the cold start
adds.  With ``--warm`` the same command runs once more on the cache the
cold run compiled, for comparison in one run (edit no source file
meanwhile: the marker would no longer match, and the second run would be
cold again).  After the match, the lines ``run`` prints while it finishes
the compile are listed with their times, and how far its "about N s left"
was from the compile's real end; ``--skip-compile`` presses Ctrl-C there
instead.

    python bench/cold_verdicts.py [--skip-compile]      # the README's command: run's own pace
    python bench/cold_verdicts.py --speed 10 [--warm]   # 10x on a cold start, then warm
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TICK_NS = 5_000_000  # the daemon's idle tick (daemon.TICK_S)


def timed_run(args: argparse.Namespace, cache: Path, record: Path) -> dict[str, Any]:
    """``run`` with its own numba cache: each verdict line and stderr line with its time."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env.pop("NUMBA_DISABLE_JIT", None)
    cmd = [sys.executable, "-m", "firmware_host", "run", "--json", "--record", str(record)]
    cmd += ["--minutes", str(args.minutes), "--seed", str(args.seed), "--sensors", args.sensors]
    cmd += ["--web", "127.0.0.1:0"] + (["--speed", str(args.speed)] if args.speed else [])
    started = time.monotonic_ns()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    verdicts: dict[int, int] = {}
    err: list[tuple[float, str]] = []

    def out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.monotonic_ns()
            item = json.loads(line)
            if item.get("kind") == "verdict" and item.get("shot") and not item.get("early"):
                verdicts[int(item["shot"])] = now

    def errs() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(((time.monotonic_ns() - started) / 1e9, line.rstrip()))
            if args.skip_compile and "refereeing done" in line:
                proc.send_signal(signal.SIGINT)  # Ctrl-C skips the compile, as run says

    readers = [threading.Thread(target=out), threading.Thread(target=errs)]
    for r in readers:
        r.start()
    proc.wait(3600)
    for r in readers:
        r.join()
    return {"status": proc.returncode, "verdicts": verdicts, "stderr": err, "started": started}


def reference(record: Path) -> dict[int, dict[str, int]]:
    """The recording through the compiled pipeline at its own read times: per shot, when the
    host knew the shot had ended and when a warm daemon would have released its verdict."""
    from firmware_host.link.recorder import read_rx_times
    from firmware_host.pipeline import Pipeline

    pipe = Pipeline()
    shots: dict[int, dict[str, int]] = {}
    ends: dict[int, int] = {}  # shot -> its shot_end's hub time, until the host is past it

    def take(step: Any, now: int) -> None:
        for ev in step.events:
            if ev["type"] == "shot_end":
                ends[int(ev["shot"])] = int(ev["t_us"])
        for line in step.lines:
            if line.get("kind") == "verdict" and line.get("shot") and not line.get("early"):
                shots.setdefault(int(line["shot"]), {})["ideal"] = now
        hub_now = pipe.events.timeline.hub_now
        for shot, t_us in list(ends.items()):
            if hub_now >= t_us:
                shots.setdefault(shot, {}).setdefault("end", now)
                del ends[shot]

    last = None
    for part in sorted(record.glob("capture-*.bin")):
        data = part.read_bytes()
        rx = read_rx_times(part.with_suffix(".rxt"))
        bounds = [*(int(o) for o in rx["offset"]), len(data)]
        for k, host_ns in enumerate(int(t) for t in rx["host_rx_ns"]):
            if last is not None:
                for tick in range(last + TICK_NS, host_ns, TICK_NS):
                    take(pipe.tick(tick), tick)
            take(pipe.feed(data[bounds[k] : bounds[k + 1]], host_ns), host_ns)
            last = host_ns
    if last is not None:
        take(pipe.flush(), last)
    return shots


def measure(args: argparse.Namespace, cache: Path, what: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cold-verdicts-rec-") as rec:
        run = timed_run(args, cache, Path(rec))
        ref = reference(Path(rec))
    rows = []
    for shot, arrived in sorted(run["verdicts"].items()):
        r = ref.get(shot, {})
        rows.append(
            {
                "shot": shot,
                "after_end_s": (arrived - r["end"]) / 1e9 if "end" in r else None,
                "after_ideal_s": (arrived - r["ideal"]) / 1e9 if "ideal" in r else None,
                "arrived_s": (arrived - run["started"]) / 1e9,
            }
        )
    # what run said about the start and, after the match, about the compile (its first lines)
    done = next((t for t, line in run["stderr"] if "refereeing done" in line), None)
    after = [(t, line) for t, line in run["stderr"] if done is not None and t >= done]
    said = [(t, line) for t, line in run["stderr"] if "plays its match at" in line]
    said += after[:3] + after[-2:] if len(after) > 5 else after
    return {
        "eta": eta_errors(run["stderr"]),
        "what": what,
        "status": run["status"],
        "shots": rows,
        "missing": sorted(set(ref) - set(run["verdicts"])),
        "said": said,
        "exit_s": run["stderr"][-1][0] if run["stderr"] else None,
    }


def eta_errors(err: list[tuple[float, str]]) -> list[tuple[float, float]]:
    """How far off the compile's "about N s left" was: (share of the compile's time gone,
    the predicted end minus the real one, s) at about a quarter, half and three quarters."""
    import re

    end = next((t for t, line in err if "kernels compiled and cached" in line), None)
    said = []
    for t, line in err:
        found = re.search(r"about (?:(\d+) min)? ?(?:(\d+) s)? left", line)
        if found and end:
            left = int(found.group(1) or 0) * 60 + int(found.group(2) or 0)
            said.append((t / end, t + left - end))
    return [min(said, key=lambda s: abs(s[0] - q)) for q in (0.25, 0.5, 0.75) if said]


def _s(seconds: float | None) -> str:
    return "     ?" if seconds is None else f"{seconds:6.2f} s"


def _summary(result: dict[str, Any]) -> str:
    ends = [r["after_end_s"] for r in result["shots"] if r["after_end_s"] is not None]
    ideal = [r["after_ideal_s"] for r in result["shots"] if r["after_ideal_s"] is not None]
    if not ends:
        return f"{result['what']}: no verdict (exit {result['status']})"
    return (
        f"{result['what']}: {len(ends)} verdicts, after the shot's end p50 "
        f"{statistics.median(ends):.2f} s, max {max(ends):.2f} s; added by the start "
        f"p50 {statistics.median(ideal):.2f} s, max {max(ideal):.2f} s; "
        f"over 1 s after the end: {sum(e > 1.0 for e in ends)}; "
        f"missing {result['missing'] or 'none'}; exit {result['status']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--speed", type=float, help="the virtual table's (default: run's own choice, as the README)"
    )
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sensors", default="full")
    parser.add_argument("--warm", action="store_true", help="then once more, warm")
    parser.add_argument(
        "--skip-compile", action="store_true", help="Ctrl-C once the refereeing is done"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    speed = f"--speed {args.speed:g}" if args.speed else "(run's own speed)"
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; run {speed} "
        f"--minutes {args.minutes:g} --seed {args.seed} --sensors {args.sensors}",
        flush=True,
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="cold-verdicts-numba-") as cache:
        runs = ["cold", "warm"] if args.warm else ["cold"]
        for what in runs:
            result = measure(args, Path(cache), what)
            results.append(result)
            if not args.json:
                print(_summary(result), flush=True)
                for r in result["shots"]:
                    print(
                        f"  shot {r['shot']:3d}: at {r['arrived_s']:6.1f} s, "
                        f"{_s(r['after_end_s'])} after its end, "
                        f"{_s(r['after_ideal_s'])} after a warm daemon's",
                        flush=True,
                    )
                for t, line in result["said"]:
                    print(f"  {t:6.1f} s  {line}")
                for share, off in result["eta"]:
                    print(f"  at {share:.0%} of the compile, its end was foretold {off:+.0f} s off")
    if args.json:
        print(json.dumps(results, indent=1))
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
