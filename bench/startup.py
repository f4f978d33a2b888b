"""Start-up: the README's main job to its first verdict, cold and warm, and where the compile goes.

In one run:

* import: the CLI, and the pipeline with its numba kernels (imported, not
  compiled), in fresh processes (best of three);
* cold: ``firmware-host run`` with an empty numba cache (``NUMBA_CACHE_DIR``
  pointed at a new directory: for numba a fresh install, whatever the
  checkout's ``__pycache__`` holds): the first verdict, the longest silence
  on stderr before it, when the background compile finished, when run exited;
* warm: the same command again on that cache (three times): first verdict,
  longest silence, exit;
* the compile table the cold run's warm-up recorded: each kernel's own
  compile time (callees subtracted), its CPU time, the time with its callees
  and its number of specialisations.

Times are from the moment the command is started (``time.monotonic``).
``--source DIR`` measures another checkout of the project (e.g. an older
commit unpacked with ``git archive``) with this interpreter.

    python bench/startup.py [--warm-runs 3] [--json] [--source DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = ["-m", "firmware_host", "run"]  # the README's main job, as `firmware-host run`

# After the warm-up: the commands' paths on other inputs must compile nothing (else the
# warm-up's workload misses a path, and a later start compiles it in the daemon, silently).
COVERAGE = """
import json
from firmware_host.live.warmup import CompileLog
log = CompileLog()
log.install()
from firmware_host.fusion.stream import events_from_capture
from firmware_host.pipeline import Pipeline, replay
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from protocol.decoder import decode_capture
faults = FaultPlan.parse("garbage@10,drop@15,offline:4@20-30,reboot@40,stall@45-47")
wires = [
    build_wire(scenarios.random_match(seed=9, minutes=1.0), HubConfig(seed=9, faults=faults)),
    build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(sensors="minimum", seed=2)),
]
for wire in wires:
    data = b"".join(wire.chunks)
    pipe, ns = Pipeline(), 10**9
    for i in range(0, len(data), 1000):
        ns += 3_000_000
        pipe.feed(data[i : i + 1000], ns)
        pipe.tick(ns + 5_000_000)
    pipe.flush()
    replay(data)
    events_from_capture(data)
    decode_capture(data)
print(json.dumps(sorted(log.costs)))
"""


def timed_run(env: dict[str, str], timeout_s: float = 1800.0) -> dict[str, Any]:
    """One run of the main job: when each line came, on which stream."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *MAIN_JOB],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    lines: list[tuple[float, str, str]] = []
    lock = threading.Lock()

    def pump(stream: Any, name: str) -> None:
        for line in stream:
            with lock:
                lines.append((time.monotonic() - started, name, line.rstrip("\n")))

    pumps = [
        threading.Thread(target=pump, args=(proc.stdout, "out")),
        threading.Thread(target=pump, args=(proc.stderr, "err")),
    ]
    for p in pumps:
        p.start()
    proc.wait(timeout_s)
    for p in pumps:
        p.join()
    exited = time.monotonic() - started
    verdicts = [t for t, name, text in lines if name == "out" and _is_verdict(text)]
    first = verdicts[0] if verdicts else None
    silence, last = 0.0, 0.0
    for t, name, _ in sorted(lines):
        if first is not None and t > first:
            break
        if name == "err" or t == first:
            silence, last = max(silence, t - last), t
    compiled = [t for t, name, text in lines if name == "err" and "kernels compiled" in text]
    return {
        "status": proc.returncode,
        "first_verdict_s": first,
        "verdicts": len(verdicts),
        "longest_silence_before_first_verdict_s": round(silence, 2),
        "compiled_s": compiled[0] if compiled else None,
        "exit_s": exited,
        "stderr": [text for _, name, text in lines if name == "err"],
    }


def import_times(env: dict[str, str]) -> dict[str, float]:
    def best(code: str) -> float:
        runs = []
        for _ in range(3):
            t = time.monotonic()
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            runs.append(time.monotonic() - t)
        return min(runs)

    bare = best("pass")
    return {
        "python_s": bare,
        "cli_s": best("import firmware_host.cli.main as c; c.build_parser()") - bare,
        "pipeline_and_daemon_s": best("import firmware_host.live.daemon, firmware_host.pipeline")
        - bare,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    parser.add_argument("--source", type=Path, help="measure this checkout instead")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="startup-bench-numba-"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    env.pop("NUMBA_DISABLE_JIT", None)
    if args.source:
        env["PYTHONPATH"] = str(args.source.resolve())
    say = (lambda text: None) if args.json else (lambda text: print(text, flush=True))
    say(f"numba cache {cache} (empty); {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

    figures: dict[str, Any] = {"imports": import_times(env)}
    imports = figures["imports"]
    say(
        f"import: python {imports['python_s']:.2f} s; then the CLI {imports['cli_s']:.2f} s, "
        f"the pipeline and daemon {imports['pipeline_and_daemon_s']:.2f} s"
    )

    cold = timed_run(env)
    figures["cold"] = {k: v for k, v in cold.items() if k != "stderr"}
    say(_line("cold", cold))
    if cold["status"] != 0:
        say("\n".join(cold["stderr"][-20:]))
    done = subprocess.run(
        [sys.executable, "-c", COVERAGE], env=env, capture_output=True, text=True, check=False
    )
    missed = json.loads(done.stdout) if done.returncode == 0 else [done.stderr.strip()]
    figures["compiled_after_warmup"] = missed
    say(f"compiled after the warm-up, on other inputs: {', '.join(missed) or 'nothing'}")
    warm_runs = []
    for i in range(args.warm_runs):
        warm = timed_run(env)
        warm_runs.append({k: v for k, v in warm.items() if k != "stderr"})
        say(_line(f"warm {i + 1}", warm))
    figures["warm"] = warm_runs
    firsts = [w["first_verdict_s"] for w in warm_runs if w["first_verdict_s"] is not None]
    if firsts:
        figures["warm_median_first_verdict_s"] = statistics.median(firsts)
        say(f"warm: median first verdict {figures['warm_median_first_verdict_s']:.1f} s")

    marker = cache / "firmware-host-warm.json"
    try:
        stored = json.loads(marker.read_text())
    except (OSError, ValueError):
        stored = {}
    figures["compile"] = {
        "warmup_s": stored.get("warmup_s"),
        "warmup_cpu_s": stored.get("warmup_cpu_s"),
        "kernels": stored.get("kernels"),
    }
    if stored.get("kernels") and not args.json:
        sys.path.insert(0, str(args.source.resolve() if args.source else ROOT))
        from firmware_host.live.warmup import report

        print(
            f"\nthe cold run's background compile: {stored['warmup_s']} s, "
            f"{stored['warmup_cpu_s']} s of CPU (niced, beside the match)"
        )
        print(report(stored["kernels"]))
    if args.json:
        print(json.dumps(figures, indent=1))
    return 0


def _is_verdict(text: str) -> bool:
    """A verdict line of ``run``'s readable view (liveview.line_text), not a notice."""
    return " player " in text and "NOTICE" not in text


def _line(what: str, run: dict[str, Any]) -> str:
    first = run["first_verdict_s"]
    compiled = run["compiled_s"]
    return (
        f"{what}: first verdict {'none' if first is None else f'{first:.1f} s'}, "
        f"longest stderr silence before it {run['longest_silence_before_first_verdict_s']:.1f} s, "
        f"{run['verdicts']} verdicts"
        + (f", kernels compiled at {compiled:.0f} s" if compiled is not None else "")
        + f", exit {run['status']} at {run['exit_s']:.1f} s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
