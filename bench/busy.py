"""A busy table through ``firmware-host events``: this checkout beside earlier releases, per stage.

Simulates (once, cached in the temp directory) an hour of a busy table on
the virtual table with every sensor: sixteen balls kept on the cloth, one
struck hard every 1.5-3 s while the last stroke's balls still roll
(``virtual_table.match.busy_match``), and prints how busy it is (balls
moving, contacts and cushion hits per second).  Then, for this checkout and
each release named with ``--against`` (a git revision, extracted once with
``git archive`` into its own directory with its own numba cache), alternating
A B A B … ``--runs`` times:

* the whole process: ``python -m firmware_host events CAPTURE > FILE``, its
  CPU seconds (user and system) and its wall clock from outside; the files
  must be byte-identical to this checkout's;
* the stages, in a second process that runs what ``events`` runs and takes
  the CPU seconds of each step: process start (interpreter and imports), cache load (the numba
  kernels' first call, on the capture's first 64 KiB), decode (frames to
  rows), timeline, fusion, the JSON lines, and the rules engine over the
  events (``replay`` and ``run`` do that; ``events`` does not).

Medians of the runs, and each release's median over this checkout's as a
ratio.  CPU seconds, not wall: the machine is shared, and a wall clock also
counts the time the process waited for a core (on an idle machine the two
agree: the pipeline runs on one thread).

    python bench/busy.py [--minutes 60] [--seed 1] [--runs 5] [--against d87fbe5 ...]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TMP = Path(tempfile.gettempdir())
STAGES = ("start", "cache load", "decode", "timeline", "fusion", "output", "rules")
FIGURES = ("wall", "whole", *STAGES)  # whole: the process's CPU seconds; wall: its wall clock

# What ``events`` does, step by step, with a clock around each step.  It uses only names
# every release since 2026-12-01 has (EventStream, to_rows, BATCH_ROWS, Referee).
STAGED = r"""
import os, sys, time
import json, io
import numpy as np
from firmware_host.fusion.stream import BATCH_ROWS, ROW_TYPES, EventStream, events_from_capture
from firmware_host.timing.rows import C_TRACK, to_rows
from protocol.decoder import decode_capture
from rules import Referee, RulesConfig
try:
    from firmware_host.cli import args as cliutil
except ImportError:  # a release before the rooms (issue 26)
    from firmware_host import cliutil
getattr(cliutil, "no_cycle_collection", lambda: None)()  # as events does, where it does
pc = time.process_time  # CPU seconds: the machine is shared, the wall clock waits for it
took = {"start": pc()}
data = open(sys.argv[1], "rb").read()
t = pc(); events_from_capture(data[:65536]); took["cache load"] = pc() - t
t = pc(); rows, tracks = to_rows(decode_capture(data).tables, ROW_TYPES); took["decode"] = pc() - t
stream, events, tl, fu = EventStream(), [], 0.0, 0.0
for start in range(0, len(rows), BATCH_ROWS):
    part = rows[start : start + BATCH_ROWS].copy()
    has = part[:, C_TRACK] >= 0
    part_tracks = tracks[part[has, C_TRACK]]
    part[has, C_TRACK] = np.arange(int(has.sum()))
    t = pc(); ordered = stream.timeline.feed_rows(part, part_tracks); tl += pc() - t
    t = pc(); events += stream.fusion.feed(ordered, stream.timeline.released_upto); fu += pc() - t
t = pc(); ordered = stream.timeline.flush(); tl += pc() - t
t = pc()
events += stream.fusion.feed(ordered, stream.timeline.released_upto) + stream.fusion.flush()
fu += pc() - t
took["timeline"], took["fusion"] = tl, fu
t = pc()
out = io.StringIO()
for event in events:
    out.write(json.dumps(event, allow_nan=False, separators=(", ", ": ")) + "\n")
took["output"] = pc() - t
t = pc()
referee = Referee(config=RulesConfig())
lines = [line for event in events for line in referee.feed(event)] + referee.finish()
took["rules"] = pc() - t
took["events"], took["verdicts"] = len(events), sum(1 for x in lines if x.get("kind") == "verdict")
print(json.dumps(took))
"""


def busy_capture(minutes: float, seed: int) -> tuple[Path, dict[str, Any]]:
    """The capture and how busy it is (simulated once, then read from the temp directory)."""
    path = TMP / f"busy-bench-{minutes:g}min-{seed}.bin"
    facts = path.with_suffix(".json")
    if not (path.exists() and facts.exists()):
        import numpy as np

        from firmware_host.virtual_table.hub import HubConfig, build_wire
        from firmware_host.virtual_table.match import busy_match

        print(f"simulating {minutes:g} minutes of a busy table (once) ...", file=sys.stderr)
        match = busy_match(seed=seed, minutes=minutes)
        wire = build_wire(match, HubConfig(sensors="full", seed=seed))
        path.write_bytes(b"".join(wire.chunks))
        _, state, _ = match.sample(np.arange(0.0, match.duration_s, 1 / 120))
        moving = (state != 0).sum(axis=1)
        kinds = [e["type"] for e in match.events]
        facts.write_text(
            json.dumps(
                {
                    "minutes": match.duration_s / 60,
                    "mb": path.stat().st_size / 1e6,
                    "moving_mean": float(moving.mean()),
                    "moving_in_play": float(moving[moving > 0].mean()),
                    "contacts_per_s": kinds.count("ball_contact") / match.duration_s,
                    "cushions_per_s": kinds.count("cushion") / match.duration_s,
                    "shots": kinds.count("shot_start"),
                }
            )
        )
    return path, json.loads(facts.read_text())


def release(rev: str) -> Path:
    """A revision's source tree, extracted once; its numba cache lives in its own __pycache__."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    where = TMP / "firmware-host-releases" / sha
    if not (where / "firmware_host").is_dir():
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", sha], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(where)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"git archive {rev} failed")
    return where


def _children_cpu() -> float:
    """CPU seconds (user and system) of the finished children so far."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


class Version:
    """One tree to time: its name, its directory, and the figures of its runs."""

    def __init__(self, name: str, tree: Path) -> None:
        self.name, self.tree = name, tree
        self.env = {**os.environ, "PYTHONPATH": str(tree)}
        self.env.pop("NUMBA_CACHE_DIR", None)  # each tree its own cache, beside its source
        self.out = TMP / f"busy-bench-events-{tree.name}.jsonl"
        self.runs: dict[str, list[float]] = {}
        self.counts: dict[str, int] = {}

    def _add(self, name: str, value: float) -> None:
        self.runs.setdefault(name, []).append(value)

    def whole(self, capture: Path) -> None:
        t0, cpu0 = time.perf_counter(), _children_cpu()
        with open(self.out, "wb") as out:
            done = subprocess.run(
                [sys.executable, "-m", "firmware_host", "events", str(capture)],
                check=False,
                stdout=out,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=TMP,
            )
        self._add("wall", time.perf_counter() - t0)
        self._add("whole", _children_cpu() - cpu0)
        if done.returncode not in (0, 1):  # 1: the capture's losses, reported (none here)
            raise SystemExit(f"{self.name}: events failed: {done.stderr.decode()[-2000:]}")

    def staged(self, capture: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-c", STAGED, str(capture)],
            check=False,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=TMP,
        )
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: the staged run failed: {done.stderr[-2000:]}")
        took = json.loads(done.stdout.splitlines()[-1])
        for stage in STAGES:
            self._add(stage, took[stage])
        self.counts = {"events": took["events"], "verdicts": took["verdicts"]}

    def median(self, name: str) -> float:
        return statistics.median(self.runs[name])


def measure(
    minutes: float = 60.0, seed: int = 1, runs: int = 5, against: tuple[str, ...] = ("d87fbe5",)
) -> dict[str, Any]:
    """This checkout and each release, alternating, whole process and stages; medians."""
    capture, facts = busy_capture(minutes, seed)
    versions = [Version("now", ROOT)] + [Version(rev, release(rev)) for rev in against]
    for v in versions:  # the warm-up: compiles a release's kernels into its cache (once)
        print(f"warming {v.name} ({v.tree}) ...", file=sys.stderr)
        v.staged(capture)
        v.whole(capture)
        v.runs.clear()
    for k in range(runs):
        print(f"run {k + 1} of {runs} ...", file=sys.stderr)
        for v in versions:
            v.whole(capture)
            v.staged(capture)
    frames = _frames(capture)
    return {
        "capture": str(capture),
        **facts,
        "frames": frames,
        "versions": [
            {
                "name": v.name,
                "median": {name: v.median(name) for name in FIGURES},
                "ratio": {name: v.median(name) / versions[0].median(name) for name in FIGURES},
                "identical": filecmp.cmp(v.out, versions[0].out, shallow=False),
                **v.counts,
            }
            for v in versions
        ],
    }


def _frames(capture: Path) -> int:
    from protocol.decoder import decode_capture

    return int(decode_capture(capture.read_bytes()).stats.frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--against", action="append", metavar="REV", help="a git revision (default d87fbe5)"
    )
    args = parser.parse_args()
    got = measure(args.minutes, args.seed, args.runs, tuple(args.against or ("d87fbe5",)))
    print(
        f"capture: {got['minutes']:.1f} min of a busy table, full sensors, {got['mb']:.1f} MB, "
        f"{got['frames']:,} frames, {got['shots']} shots\n"
        f"  balls moving: {got['moving_mean']:.1f} on average, {got['moving_in_play']:.1f} "
        f"while any moves; {got['contacts_per_s']:.2f} ball contacts and "
        f"{got['cushions_per_s']:.2f} cushion hits per second"
    )
    names = [v["name"] for v in got["versions"]]
    print(
        f"median of {args.runs} alternating runs, CPU seconds (wall: the whole process's wall "
        "clock); ratio: the release over now"
    )
    print(
        f"  {'stage':<14}"
        + "".join(f"{n:>12}" for n in names)
        + "".join(f"{n + '/now':>16}" for n in names[1:])
    )
    for stage in FIGURES:
        label = {"whole": "whole process", "wall": "(its wall)"}.get(stage, stage)
        print(
            f"  {label:<14}"
            + "".join(f"{v['median'][stage]:>12.3f}" for v in got["versions"])
            + "".join(f"{v['ratio'][stage]:>15.2f}x" for v in got["versions"][1:])
        )
    for v in got["versions"]:
        same = "byte-identical to now's" if v["identical"] else "DIFFERENT from now's"
        print(f"  {v['name']}: {v['events']} events, {v['verdicts']} verdicts; events {same}")


if __name__ == "__main__":
    main()
