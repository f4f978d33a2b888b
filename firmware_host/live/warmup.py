"""Compile every numba kernel once per install, and know whether that is done.

A cold numba cache costs a minute or more of compiling (several on a small
ARM board) before the first kernel call returns.  ``run`` does not wait for
it: when :func:`is_warm` says no, it starts this module as a background
process (``python -m firmware_host.live.warmup --machine``) and referees
meanwhile with the same pipeline interpreted (:mod:`.interpreted`).  This
process drives every kernel through the paths the commands take (the
virtual table's physics; the decoder, timing core and fusion on short
captures of every sensor set, with faults, a hub reboot and clocks near the
wrap, live with a host clock and ticks, as a replay and as a batch), so
numba writes each specialisation to its on-disk cache, then writes a
*marker* beside the cache.  A later start finds the marker and loads the
kernels from the cache in about a second.

The marker is a fingerprint of what numba's cache depends on: every source
file of the kernel packages and of ``rules/`` (the event catalogue is compiled
into the fusion): path, size, mtime; numba's and Python's versions and the CPU
numba compiles for.  An upgrade, an edit or another machine changes it, and
the next start warms up again (quickly where numba's own cache entries still
hold).

Run by hand (or by a packaging post-install step) it prints its progress::

    python -m firmware_host.live.warmup            # compile now, so the first `run` is warm
    python -m firmware_host.live.warmup --report   # and print each kernel's compile time
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from . import numba_cache

MARKER = "firmware-host-warm.json"
PACKAGES = numba_cache.OWN_PACKAGES  # where the kernels (and what they compile in) live
PROGRESS_S = 1.0  # --machine: a progress line at least this often
HUMAN_PROGRESS_S = 3.0


# -- is the cache warm? ----------------------------------------------------------------


def marker_path() -> Path | None:
    """Where the marker lives: beside numba's cache (None: numba caches nothing)."""
    numba_cache.ensure()
    if numba_cache.decision == "off":
        return None
    chosen = os.environ.get(numba_cache.ENV)
    if chosen:
        return Path(chosen) / MARKER
    return Path(__file__).resolve().parent / "__pycache__" / MARKER


def _sources() -> list[list[Any]]:
    here = Path(__file__).resolve().parent.parent.parent
    found = []
    for package in PACKAGES:
        for path, subdirs, files in os.walk(here / package):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(path, name))
                    rel = os.path.relpath(os.path.join(path, name), here)
                    found.append([rel, st.st_size, st.st_mtime_ns])
    return found


def _versions() -> dict[str, str]:
    return {
        "python": sys.version,
        "numba": metadata.version("numba"),
        "llvmlite": metadata.version("llvmlite"),
        "numpy": metadata.version("numpy"),
    }


def _cpu() -> list[str]:
    """What numba compiles for (its cache key holds the same): triple, CPU name, features.

    From llvmlite directly: importing numba would cost half a second of every start.
    """
    import llvmlite.binding as llvm

    return [
        llvm.get_process_triple(),
        os.environ.get("NUMBA_CPU_NAME") or llvm.get_host_cpu_name(),
        os.environ.get("NUMBA_CPU_FEATURES") or llvm.get_host_cpu_features().flatten(),
    ]


def fingerprint() -> dict[str, Any]:
    return {"versions": _versions(), "cpu": _cpu(), "sources": _sources()}


def is_warm() -> bool:
    """True if a warm-up finished for exactly these sources, versions and CPU.

    The cheap parts (the marker, the files) are checked first: on a cold
    install this answers without importing numba.
    """
    stored = read_marker()
    if stored is None:
        return False
    if stored.get("sources") != _sources() or stored.get("versions") != _versions():
        return False
    return bool(stored.get("cpu") == _cpu())


def _write_marker(path: Path, print_: dict[str, Any], seconds: float, log: CompileLog) -> None:
    """The fingerprint, and what the compile cost (``bench/startup.py`` prints it)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    costs = [
        [c.name, round(c.seconds, 3), round(c.cpu, 3), round(c.inclusive, 3), c.signatures]
        for c in log.table()
    ]
    tmp.write_text(
        json.dumps(
            {
                **print_,
                "warmup_s": round(seconds, 1),
                "warmup_cpu_s": round(time.process_time(), 1),
                "kernels": costs,  # name, own s, own CPU s, with callees s, specialisations
            }
        )
    )
    os.replace(tmp, path)  # atomic: a reader sees the old marker or the new one


def read_marker(path: Path | None = None) -> dict[str, Any] | None:
    path = path or marker_path()
    try:
        data = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- what the compile costs --------------------------------------------------------------


@dataclass
class KernelCost:
    """One dispatcher's compiles in this process: time without its callees', and with."""

    name: str
    seconds: float = 0.0  # its own compiling (callees compiled meanwhile subtracted)
    cpu: float = 0.0  # the same in this thread's CPU time (less sensitive to a busy machine)
    inclusive: float = 0.0
    compiles: int = 0  # specialisations compiled here (cache misses)
    signatures: int = 0  # specialisations it holds at the end (compiled or loaded)


@dataclass
class CompileLog:
    """numba's ``numba:compile`` events, per dispatcher; cache loads are not compiles."""

    costs: dict[str, KernelCost] = field(default_factory=dict)
    _stack: list[list[float]] = field(default_factory=list)
    _dispatchers: dict[str, Any] = field(default_factory=dict)

    def install(self) -> None:
        from numba.core import event

        log = self

        class _Listener(event.Listener):  # type: ignore[misc]
            def on_start(self, ev: Any) -> None:
                log._stack.append([time.perf_counter(), 0.0, time.thread_time(), 0.0])

            def on_end(self, ev: Any) -> None:
                start, children, cpu_start, cpu_children = log._stack.pop()
                took = time.perf_counter() - start
                cpu = time.thread_time() - cpu_start
                if log._stack:
                    log._stack[-1][1] += took
                    log._stack[-1][3] += cpu
                dispatcher = ev.data["dispatcher"]
                name = _name(dispatcher)
                cost = log.costs.setdefault(name, KernelCost(name))
                cost.seconds += took - children
                cost.cpu += cpu - cpu_children
                cost.inclusive += took
                cost.compiles += 1
                log._dispatchers[name] = dispatcher

        event.register("numba:compile", _Listener())

    def table(self) -> list[KernelCost]:
        """Our kernels one by one (most expensive first), numba's own helpers summed."""
        ours = []
        helpers = KernelCost("(numba's own overloads, summed)")
        for name, cost in self.costs.items():
            cost.signatures = len(self._dispatchers[name].signatures)
            if name.startswith(PACKAGES):
                ours.append(cost)
            else:
                helpers.seconds += cost.seconds
                helpers.cpu += cost.cpu
                helpers.compiles += cost.compiles
                helpers.signatures += cost.signatures
        ours.sort(key=lambda c: -c.seconds)
        return ours + ([helpers] if helpers.compiles else [])


def _name(dispatcher: Any) -> str:
    func = dispatcher.py_func
    return f"{func.__module__}.{func.__qualname__}"


def kernel_modules() -> list[str]:
    """The modules that define numba kernels (a line of their source starts ``@njit``)."""
    import re

    decorated = re.compile(r"^\s*@(numba\.)?njit\b", re.MULTILINE)
    here = Path(__file__).resolve().parent.parent.parent
    return [
        rel[: -len(".py")].replace(os.sep, ".").removesuffix(".__init__")
        for rel, _, _ in _sources()
        if decorated.search((here / rel).read_text(encoding="utf-8"))
    ]


def kernels() -> list[Any]:
    """Every numba dispatcher defined in the kernel modules that compiles on its own.

    ``inline="always"`` kernels are compiled into their callers only.
    """
    import importlib

    from numba.core.dispatcher import Dispatcher

    found = []
    for module in kernel_modules():
        mod = importlib.import_module(module)
        found += [
            v
            for v in vars(mod).values()
            if isinstance(v, Dispatcher)
            and v.py_func.__module__ == module
            and v.targetoptions.get("inline", "never") != "always"
        ]
    return found


# -- the workload ------------------------------------------------------------------------


def _captures() -> list[bytes]:
    """Short virtual-table matches: each sensor set, faults, a reboot, clocks near the wrap."""
    from ..virtual_table.faults import FaultPlan
    from ..virtual_table.hub import HubConfig, build_wire
    from ..virtual_table.match import random_match

    configs = [
        HubConfig(
            sensors="full",
            seed=1,
            faults=FaultPlan(
                garbage_s=(6.0,),
                dropped_bytes_s=(9.0,),
                offline=((4, 10.0, 14.0),),
                stalls=((16.0, 16.5),),
            ),
        ),
        HubConfig(sensors="middle", seed=2),
        HubConfig(sensors="minimum", seed=3),
        HubConfig(seed=4, near_wrap=True, faults=FaultPlan(reboots_s=(12.0,))),
    ]
    return [b"".join(build_wire(random_match(c.seed, 0.4), c).chunks) for c in configs]


def _live(data: bytes) -> None:
    """The daemon's path: chunks of many sizes stamped with a host clock, ticks between."""
    from ..pipeline import Pipeline

    pipe = Pipeline()
    host_ns = 1_000_000_000
    sizes = (1, 7, 64, 512, 4096, 65536)
    start = k = 0
    while start < len(data):
        size = sizes[k % len(sizes)]
        k += 1
        host_ns += 3_000_000
        pipe.feed(data[start : start + size], host_ns)
        if k % 3 == 0:
            pipe.tick(host_ns + 5_000_000)
        start += size
    pipe.flush()


#: The link tools' text kernel (``decode``'s listing), reached by name as :func:`kernels` reaches
#: every kernel module: the daemon's room imports no tool above it.
TEXT_LINES = "firmware_host.linktools.textlines"
ENVELOPE = "firmware_host.linktools.envelope"  # ``stats``' streamed fits, reached alike


def _replay_and_batch(data: bytes) -> None:
    import importlib

    import numpy as np

    from protocol.decoder import StreamDecoder, decode_capture

    from ..fusion.stream import events_from_capture
    from ..pipeline import replay

    replay(data)
    events_from_capture(data)
    decode_capture(np.frombuffer(data, np.uint8).copy())  # a writable array: its own type
    decoded = StreamDecoder().feed(data)  # as `decode` reads: bytes
    importlib.import_module(TEXT_LINES).TextLines().lines(decoded.frames, decoded.tables)


def _tools() -> None:
    """Kernels only analysis and tests call (batch clock mapping, plain unwrapping), and
    ``stats``' envelopes (fed, and a line drawn from them)."""
    import importlib

    import numpy as np

    from ..timing.clock_model import map_samples
    from ..timing.unwrap import unwrap

    unwrap(np.array([4294967290, 5, 1], np.int64), 32)
    none = np.zeros(0, np.int64)
    map_samples(none, none, none, none, none, none, np.int64(5_000_000), 8)
    fit = importlib.import_module(ENVELOPE).Envelope(merge=True)
    fit.feed(np.arange(3.0), np.zeros(3))
    fit.line()


def steps() -> list[tuple[str, Callable[[], Any]]]:
    """What the warm-up runs, in order: (what it compiles, how)."""
    captures: list[bytes] = []

    def table() -> None:
        captures.extend(_captures())

    def live() -> None:
        for data in captures:
            _live(data)

    def replays() -> None:
        for data in captures:
            _replay_and_batch(data)
        _tools()

    return [
        ("the virtual table's physics", table),
        ("the decoder, timing core and fusion", live),
        ("replay and batch paths", replays),
    ]


# -- the command ---------------------------------------------------------------------------


@dataclass
class Progress:
    """Where a warm-up is: its ``--machine`` line, parsed back in one place.

    ``left_s`` is the time still to go, estimated from the compile work done
    so far: each kernel weighs what it cost to compile on the development
    machine (:mod:`.compile_costs`), so the fraction done holds on a slower
    board too, and the time so far scales it (None until a tenth is done).
    """

    step: int
    steps: int
    ready: int
    total: int
    seconds: float
    left_s: float | None
    what: str

    def line(self) -> str:
        left = -1 if self.left_s is None else round(self.left_s)
        return (
            f"progress {self.step} {self.steps} {self.ready} {self.total} "
            f"{self.seconds:.0f} {left} {self.what}"
        )

    @classmethod
    def parse(cls, line: str) -> Progress | None:
        parts = line.split(maxsplit=7)
        if len(parts) != 8 or parts[0] != "progress":
            return None
        try:
            step, steps_, ready, total, left = (int(parts[i]) for i in (1, 2, 3, 4, 6))
            seconds = float(parts[5])
        except ValueError:
            return None
        return cls(step, steps_, ready, total, seconds, None if left < 0 else left, parts[7])

    def words(self) -> str:
        """``step 2/3 (the decoder, timing core and fusion), 84 of 127 kernels ready, about
        40 s left``."""
        left = "" if self.left_s is None else f", about {_duration(self.left_s)} left"
        return (
            f"step {self.step}/{self.steps} ({self.what}), "
            f"{self.ready} of {self.total} kernels ready{left}"
        )


def _duration(seconds: float) -> str:
    """``40 s``, ``2 min 10 s`` (rounded to 10 s past a minute: it is an estimate)."""
    if seconds < 60:
        return f"{max(seconds, 1):.0f} s"
    minutes, rest = divmod(round(seconds / 10) * 10, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


MIN_DONE = 0.1  # no estimate of the time left before this fraction of the work is done


def time_left(elapsed: float, weight: list[float], ready: list[bool]) -> float | None:
    """The seconds still to go at the pace so far, from the weighed share of the kernels
    ready (None before ``MIN_DONE`` of it)."""
    done = sum(w for w, r in zip(weight, ready, strict=True) if r) / (sum(weight) or 1.0)
    return elapsed * (1 - done) / done if done >= MIN_DONE else None


def weights(every: list[Any]) -> list[float]:
    """Each kernel's compile cost on the development machine (:mod:`.compile_costs`); a
    kernel not listed (new since) weighs the median."""
    from .compile_costs import OWN_S

    known = sorted(OWN_S.values())
    median = known[len(known) // 2] if known else 1.0
    return [OWN_S.get(_name(k), median) for k in every]


def warm_up(say: Callable[[str], None] | None = None, log: CompileLog | None = None) -> float:
    """Run every step; ``say`` gets progress lines.  Returns the seconds it took."""
    started = time.monotonic()
    log = log or CompileLog()
    log.install()
    plan = steps()
    every = kernels()
    weight = weights(every)
    state = {"step": 0, "name": "loading the kernel modules"}
    done = threading.Event()

    def line() -> str:
        ready = [bool(k.overloads) for k in every]  # compiled, or loaded from the cache
        elapsed = time.monotonic() - started
        said = Progress(state["step"], len(plan), sum(ready), len(every), elapsed,
                        time_left(elapsed, weight, ready), str(state["name"]))  # fmt: skip
        return said.line()

    def heartbeat() -> None:
        while not done.wait(PROGRESS_S):
            if say is not None:
                say(line())

    thread = threading.Thread(target=heartbeat, name="warmup-progress", daemon=True)
    thread.start()
    try:
        for i, (name, run) in enumerate(plan, 1):
            state.update(step=i, name=name)
            if say is not None:
                say(line())
            run()
    finally:
        done.set()
        thread.join()
    return time.monotonic() - started


def describe(line: str) -> str:
    """A ``--machine`` progress line in words (what ``run`` prints on stderr)."""
    said = Progress.parse(line)
    if said is None:
        return line
    return f"compiling the numba kernels, once per install: {said.words()}, {said.seconds:.0f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m firmware_host.live.warmup", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--machine", action="store_true", help="progress as 'progress …' lines on stdout (run)"
    )
    parser.add_argument("--report", action="store_true", help="print each kernel's compile cost")
    parser.add_argument("--nice", type=int, default=0, help="lower this process's priority")
    parser.add_argument("--force", action="store_true", help="even if the marker says warm")
    args = parser.parse_args(argv)
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        print("NUMBA_DISABLE_JIT is set: nothing to compile", file=sys.stderr)
        return 2
    if args.nice:
        os.nice(args.nice)
    path = marker_path()
    if path is None:
        print("numba caches nothing here (no writable cache): nothing to keep", file=sys.stderr)
        return 3
    if not args.force and not args.report and is_warm():
        print("done 0 already warm", flush=True) if args.machine else print("already warm")
        return 0
    print_ = fingerprint()  # before compiling: a file edited meanwhile makes the marker stale
    last = [0.0]

    def say(line: str) -> None:
        if args.machine:
            print(line, flush=True)
        elif time.monotonic() - last[0] >= HUMAN_PROGRESS_S:
            last[0] = time.monotonic()
            print(describe(line), file=sys.stderr, flush=True)

    log = CompileLog()
    seconds = warm_up(say, log)
    _write_marker(path, print_, seconds, log)
    if args.report:
        print(report([[c.name, c.seconds, c.cpu, c.inclusive, c.signatures] for c in log.table()]))
    if args.machine:
        print(f"done {seconds:.1f}", flush=True)
    else:
        print(f"numba kernels compiled and cached in {seconds:.0f} s ({path.parent})")
    return 0


def report(rows: list[list[Any]]) -> str:
    """The compile table: per kernel (name, own s, own CPU s, with callees s, specialisations).

    Own time excludes the callees compiled meanwhile (each has its own row);
    "with callees" is what a first call of that kernel alone would cost.
    """
    out = [f"{'kernel':<50} {'own s':>7} {'CPU s':>7} {'w/ callees':>10} {'specs':>5}"]
    for name, own, cpu, incl, specs in rows:
        short = name.replace("firmware_host.", "")
        with_callees = f"{incl:10.2f}" if incl else f"{'':10}"
        out.append(f"{short:<50} {own:7.2f} {cpu:7.2f} {with_callees} {specs:5d}")
    own = sum(r[1] for r in rows)
    cpu = sum(r[2] for r in rows)
    out.append(f"{'total':<50} {own:7.2f} {cpu:7.2f} {'':10} {sum(r[4] for r in rows):5d}")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())


# -- the warm-up as run's background child -------------------------------------------------


class Background:
    """A running ``python -m firmware_host.live.warmup --machine``, its progress said in words.

    ``say`` gets a line at once, then one every ``every_s`` while the compile
    runs (from a thread of its own, so a busy daemon never leaves stderr
    silent), then one when it is done.  :attr:`returncode` is None while it
    runs.
    """

    def __init__(self, proc: Any, say: Callable[[str], None], every_s: float = 3.0) -> None:
        self.proc = proc
        self._say = say
        self._every_s = every_s
        self._started = time.monotonic()
        self._state = "starting"
        self._ended = threading.Event()
        self._quiet = False
        self.returncode: int | None = None
        self.seconds: float | None = None
        say(
            "first start with these kernels: compiling them in the background, once per "
            "install (a minute or more; later starts take seconds); the table is refereed "
            "meanwhile by the same pipeline in pure Python"
        )
        threading.Thread(target=self._read, name="warmup-out", daemon=True).start()
        threading.Thread(target=self._tick, name="warmup-progress", daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip() if isinstance(raw, bytes) else raw.strip()
            said = Progress.parse(line)
            if said is not None:
                self._state = said.words()
        code = self.proc.wait()
        self.seconds = time.monotonic() - self._started
        if self._quiet:
            pass
        elif code == 0:
            self._say(
                f"numba kernels compiled and cached in {self.seconds:.0f} s (once per install)"
            )
        else:
            self._say(f"compiling the numba kernels failed (exit {code}); see above")
        self.returncode = code
        self._ended.set()

    def _tick(self) -> None:
        while not self._ended.wait(self._every_s) and not self._quiet:
            elapsed = time.monotonic() - self._started
            self._say(
                f"compiling the numba kernels, once per install: {self._state}, {elapsed:.0f} s"
            )

    @property
    def state(self) -> str:
        """Where the compile is, in words (with the time left once it can be told)."""
        return self._state

    def quiet(self) -> None:
        """Say nothing more (run is ending it)."""
        self._quiet = True

    def wait(self, timeout: float | None = None) -> int | None:
        self._ended.wait(timeout)
        return self.returncode
