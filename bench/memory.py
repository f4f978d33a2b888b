"""Peak memory of the capture commands on 10 MB, 100 MB and 1 GB captures: bounded by design.

``events``, ``replay``, ``stats`` and ``decode`` read a capture in chunks
(docs/memory.md), so their peak RSS must not grow with the capture.  This
makes captures of each size with the virtual table (``simulate --minutes``,
one long match: the hub's and every node's clocks run on; above 100 MB the
100 MB match played again after a hub reboot each time, as ``simulate --loop``
does), each with the host receive times a perfect host records (``.rxt``),
cached in the temp directory, runs each command on each as its own process
with its output to a file (what a user does with a big capture), and prints
one line per command and size: peak RSS (the kernel's ``ru_maxrss`` of that
process, from ``wait4``), wall time and CPU time (user and system: on a shared
machine the wall clock also counts the waits for a core).  The commands read
the capture without its ``.rxt`` (a link to it under another name), except
``stats .rxt``: ``stats`` of the recording with its host times.

The numba kernels are compiled first (``python -m firmware_host.live.warmup``,
its own process): a kernel compiled inside a measured process (after a source
edit) adds about 100 MB to its peak.

Then a restart's resume (``run --record``, firmware_host/checkpoint.py): a
300 MB part whose last checkpoint is ``CHECKPOINT_BYTES`` (16 MB) before its
end, the most a restart ever replays (the part's start is a hole in a sparse
file: it is never read); the time and peak RSS of ``resume()`` in its own
process, the numba kernels loaded as a daemon has them.

A run that passes ``--kill-above`` MB is stopped (so a command that still
reads a whole capture cannot take a shared machine down) and shown as ``>``
that figure.  Progress (the running process's RSS) goes to stderr every few
seconds.

    python bench/memory.py [--sizes 10,100,1000] [--commands events,replay,stats,decode]
    python bench/memory.py --keep      # leave the captures in the temp directory
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir()) / "firmware-host-memory-bench"
MB = 1_000_000
MB_PER_MINUTE = 0.86  # the full-sensor virtual table's capture (README: 10 min = 8.6 MB)
PROGRESS_S = 5.0
COMMANDS = ("events", "replay", "stats", "stats .rxt", "decode")
RESUME_PART = 300_000_000
SIMULATED_MB = 100  # larger captures: this one played again after hub reboots

# A checkpoint after the capture's first 4 MB, in a folder whose one part is a 300 MB file
# ending in the 16 MB of stream that follow it (argv: capture, folder).
PREPARE = r"""
import sys
from datetime import UTC, datetime
from pathlib import Path
from firmware_host.checkpoint import CHECKPOINT_BYTES, Checkpoints
from firmware_host.pipeline import Pipeline
data, folder = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2])
size, start = int(sys.argv[3]), 4_000_000
after = data[start : start + CHECKPOINT_BYTES]
part = folder / f"capture-{datetime.now(UTC):%Y%m%d}-000000-0001.bin"
with open(part, "wb") as out:
    out.truncate(size - len(after))
    out.seek(size - len(after))
    out.write(after)
pipe = Pipeline()
for at in range(0, start, 4096):
    pipe.feed(data[at : at + 4096])
Checkpoints(folder).after_feed(pipe, part, size - len(after), start)
"""
MAKE = r"""
import sys
from pathlib import Path
sys.path.insert(0, "bench")
from memory import replayed_after_reboots
replayed_after_reboots(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
"""
RESUME = r"""
import sys
from pathlib import Path
from firmware_host.checkpoint import checkpoint_path
from firmware_host.pipeline import Pipeline
from firmware_host.service.resume import resume
pipe = Pipeline()
pipe.feed(b"")  # the kernels loaded, as in a daemon before it resumes
folder = Path(sys.argv[1])
print(resume(pipe, sorted(folder.glob("capture-*.bin")), checkpoint_path(folder)))
"""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def capture(size_mb: int, simulated_mb: int = SIMULATED_MB) -> Path:
    """A full-sensor capture of about ``size_mb`` MB: one virtual match long enough, or
    above ``simulated_mb`` that many MB's match played again after each hub reboot."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"match-{size_mb}MB.bin"
    if path.exists() and path.with_suffix(".rxt").exists():
        return path
    if size_mb > simulated_mb:
        source = capture(simulated_mb)
        copies = -(-size_mb * MB // source.stat().st_size)  # the match is not quite its size
        _say(f"a {size_mb} MB capture: the {simulated_mb} MB match {copies} times, a hub reboot "
             "before each")  # fmt: skip
        part = path.with_suffix(".part")
        # In a child: a process started by this one reports this one's peak RSS as its own
        # if that is higher (Linux keeps the larger at exec), and making it decodes a match.
        run([sys.executable, "-c", MAKE, str(source), str(copies), str(part)], "copies", None)
        part.with_suffix(".rxt").rename(path.with_suffix(".rxt"))
        part.rename(path)
        return path
    minutes = min(1440.0, round(size_mb / MB_PER_MINUTE, 1))
    _say(f"simulating {minutes:g} minutes for a {size_mb} MB capture (once; cached in {CACHE})")
    part = path.with_suffix(".part")
    run(
        [*_cli(), "simulate", "--capture", str(part), "--minutes", str(minutes), "--seed", "1",
         "--truth", os.devnull, "--rx-times", str(path.with_suffix(".rxt"))],
        f"simulate {size_mb} MB",
        None,
    )  # fmt: skip
    part.rename(path)
    return path


def without_host_times(path: Path) -> Path:
    """The capture under a name with no ``.rxt`` beside it (a hard link)."""
    plain = path.with_name(path.stem + "-plain.bin")
    if not plain.exists():
        os.link(path, plain)
    return plain


def replayed_after_reboots(source: Path, copies: int, out_path: Path) -> None:
    """``copies`` of a capture one after another, as the virtual table's ``--loop`` plays
    a match again: each after a hub reboot, its HELLOs with a boot_id of their own.

    Simulating a gigabyte takes the virtual table 20 hours of match (minutes of CPU);
    a copy with the same boot_id would be the same frames again (duplicates to the
    decoder), with a new one the hub rebooted: its clocks and seq counters start
    afresh and the timing core opens a new epoch, its hub time going on from the last.
    Its ``.rxt`` is the source's, each copy received a second after the last ended (a
    HELLO with another boot_id is as long as the first: the offsets shift by the size).
    """
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from firmware_host.link.recorder import read_rx_times
    from protocol.decoder import decode_capture, record_fields
    from protocol.framing import encode_frame

    data = source.read_bytes()
    hello = decode_capture(data).tables["HELLO"]
    rx = read_rx_times(source.with_suffix(".rxt"))
    step_ns = int(rx["host_rx_ns"][-1] - rx["host_rx_ns"][0]) + 1_000_000_000
    with open(out_path.with_suffix(".rxt"), "wb") as times:
        for copy in range(copies):
            shifted = rx.copy()
            shifted["offset"] += np.uint64(copy * len(data))
            shifted["host_rx_ns"] += copy * step_ns
            shifted.tofile(times)
    with open(out_path, "wb") as out:
        for copy in range(copies):
            at = 0
            for rec in hello:
                start = int(rec["offset"])
                fields = record_fields(rec)
                fields["boot_id"] = (fields["boot_id"] + copy * 0x9E3779B1) & 0xFFFFFFFF
                out.write(data[at:start])
                out.write(
                    encode_frame("HELLO", node=int(rec["node"]), seq=int(rec["seq"]),
                                 t_us=int(rec["t_us"]), flags=int(rec["flags"]), **fields)
                )  # fmt: skip
                at = data.index(0, start) + 1
            out.write(data[at:])
            _say(f"  copy {copy + 1} of {copies} written")


def _cli() -> list[str]:
    return [sys.executable, "-m", "firmware_host"]


class Ran(NamedTuple):
    rss_mb: float  # peak
    wall_s: float
    cpu_s: float  # user and system
    killed: bool  # it passed kill_above_mb, or ran max_s


def run(argv: list[str], what: str, kill_above_mb: float | None, max_s: float | None = None) -> Ran:
    """Run ``argv`` with its stdout to a scratch file."""
    out = CACHE / f"out-{os.getpid()}.tmp"  # its own: benches may run side by side
    start = time.monotonic()
    last = start
    killed = False
    with open(out, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, cwd=ROOT)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            rss = _rss_mb(proc.pid)
            now = time.monotonic()
            over = kill_above_mb is not None and rss > kill_above_mb
            if not killed and (over or (max_s is not None and now - start > max_s)):
                proc.kill()
                killed = True
            if now - last >= PROGRESS_S:
                _say(f"  {what}: {now - start:.0f} s, RSS {rss:.0f} MB, "
                     f"{os.fstat(sink.fileno()).st_size / MB:.0f} MB written")  # fmt: skip
                last = now
            time.sleep(0.2)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.unlink()
    if proc.returncode not in (0, 1) and not killed:
        raise SystemExit(f"{what}: exit status {proc.returncode}")
    # ru_maxrss is in KiB
    return Ran(usage.ru_maxrss * 1024 / MB, wall, usage.ru_utime + usage.ru_stime, killed)


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MB
    except OSError:
        pass
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,100,1000", help="capture sizes in MB")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help="'stats .rxt': stats of the capture with its host times")  # fmt: skip
    parser.add_argument("--kill-above", type=float, default=2000.0, metavar="MB")
    parser.add_argument(
        "--max-seconds",
        type=float,
        metavar="S",
        help="stop a run after S seconds: its peak so far is shown with a *",
    )
    parser.add_argument("--keep", action="store_true", help="keep the captures (cached)")
    parser.add_argument(
        "--simulate-mb",
        type=int,
        default=SIMULATED_MB,
        metavar="MB",
        help=f"simulate matches up to this size; larger captures are that match played again "
        f"after hub reboots (default {SIMULATED_MB})",
    )
    parser.add_argument(
        "--no-resume", dest="resume", action="store_false", help="leave out the resume line"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    commands = args.commands.split(",")
    CACHE.mkdir(exist_ok=True)
    run([sys.executable, "-m", "firmware_host.live.warmup"], "compiling the kernels", None)
    print(f"{'command':<10} {'capture':>10} {'peak RSS':>10} {'time':>9} {'CPU':>9}", flush=True)
    try:
        for size in sizes:
            path = capture(size, args.simulate_mb)
            actual = path.stat().st_size / MB
            for command in commands:
                what = f"{command} {size} MB"
                name, _, rxt = command.partition(" ")
                read = path if rxt else without_host_times(path)
                rss, wall, cpu, killed = run(
                    [*_cli(), name, str(read)], what, args.kill_above, args.max_seconds
                )
                if not killed:
                    shown = f"{rss:.0f} MB"
                elif rss > args.kill_above:
                    shown = f">{args.kill_above:.0f} MB"
                else:  # stopped for time: the peak so far, and how far it had come
                    shown = f"{rss:.0f} MB*"
                print(f"{command:<10} {actual:>7.0f} MB {shown:>10} {wall:>7.1f} s "
                      f"{cpu:>7.1f} s", flush=True)  # fmt: skip
        if args.resume:
            resume_line(capture(max(sizes), args.simulate_mb), args.kill_above)
    finally:
        if not args.keep:
            for path in CACHE.glob("match-*"):
                path.unlink()


def resume_line(source: Path, kill_above_mb: float) -> None:
    """A restart on a 300 MB part: the time and peak RSS of the resume alone."""
    folder = CACHE / "resume"
    folder.mkdir(exist_ok=True)
    try:
        run([sys.executable, "-c", PREPARE, str(source), str(folder), str(RESUME_PART)],
            "checkpoint", None)  # fmt: skip
        start = [sys.executable, "-c", RESUME.split("folder =")[0]]
        begin = run(start, "start", kill_above_mb)
        rss, wall, cpu, killed = run(
            [sys.executable, "-c", RESUME, str(folder)], "resume", kill_above_mb
        )
        shown = f">{kill_above_mb:.0f} MB" if killed else f"{rss:.0f} MB"
        print(f"{'resume':<10} {RESUME_PART / MB:>7.0f} MB {shown:>10} {wall:>7.1f} s "
              f"{cpu:>7.1f} s (of which {begin.wall_s:.1f} s, {begin.cpu_s:.1f} s CPU and "
              f"{begin.rss_mb:.0f} MB starting the process and loading the kernels)",
              flush=True)  # fmt: skip
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
