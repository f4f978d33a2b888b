"""Before any test: the numba kernels compiled once, with progress on the terminal.

Many tests run ``python -m firmware_host …`` as a user would, each with a
time limit sized for a warm start.  On a fresh clone (CI) the first of them
would otherwise pay the whole cold compile (two minutes of CPU on two busy
cores) inside its limit.  The warm-up here is the one ``run`` starts in the
background (``firmware_host.live.warmup``): it fills numba's cache and writes the
marker, so every later process loads the kernels in about a second.  It is
skipped when the marker says the cache is warm, and the cold-start tests use
a cache directory of their own.  The warm-up is one process; beside it, on
the second core, and then beside the tests, the fuzzer's bounds-checked
kernels are compiled into their own cache (test_frame_fuzz.py, run last:
the other few minutes of compiling on CI).

The suite runs on two workers a core (most tests wait on a clock), a test file to a worker (``--dist
loadfile``), so its wall time is bounded by whichever worker ends last.  xdist would hand
out the files with the most tests first, which left the slowest files (the
Dask season, the bounds-checked fuzzer: one or two tests each) to the end,
one worker finishing them alone.  A slow file says how long it takes with
``pytestmark = pytest.mark.wall_s(SECONDS)`` (measured alone, on an idle
core), and the files are handed out longest first (``--no-loadscope-reorder``
keeps this order): the workers end within about the shortest file of
each other.  The mark lives in the file, so it moves with it.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRESS_S = 3.0
CORPUS_BASES = ("random_*.full.bin", "*.middle.bin", "*.minimum.bin")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "wall_s(seconds): this file's wall time alone; slow files are run first"
    )
    config.addinivalue_line(
        "markers", "last: this file waits for what the session's start began; run it last"
    )


WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers a core.  Measured on 2 cores (README, "Tests"): one worker a
    core kept the CPU 66 % busy, the workers waiting on matches played at real time, brokers
    and browsers; two a core fill that wait.  ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still rules."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


def _order(item: pytest.Item) -> tuple[bool, float]:
    mark = item.get_closest_marker("wall_s")
    return item.get_closest_marker("last") is not None, -float(mark.args[0]) if mark else 0.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow files first, files marked ``last`` at the end (stable: a file's tests keep their
    order, unmarked files theirs)."""
    items.sort(key=_order)


def _in_scope(config: pytest.Config, path: Path) -> bool:
    """Whether the session's arguments (or testpaths) take in the test file ``path``."""
    for arg in config.args:
        chosen = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == chosen or chosen in path.parents:
            return True
    return False


def _compile_bounds_checked(config: pytest.Config) -> None:
    """The bounds-checked fuzzer's kernels (test_frame_fuzz.py: minutes of compiling in a cache
    of their own), compiled beside the warm-up and then beside the tests, by a short fuzz of
    corpus captures.  The process holds a lock on its cache until it ends; the fuzz test,
    marked ``last``, takes the lock before it starts.  Nothing when the fuzz test is not in
    this session."""
    fuzz_test = next(config.rootpath.glob("tests/**/test_frame_fuzz.py"), None)
    if fuzz_test is None or not _in_scope(config, fuzz_test.resolve()):
        return
    script = fuzz_test.with_name("fuzz.py")  # a harness of the tests, beside the test
    spec = importlib.util.spec_from_file_location("fuzz", script)
    assert spec is not None and spec.loader is not None
    fuzz = sys.modules["fuzz"] = importlib.util.module_from_spec(spec)  # as the test imports it
    spec.loader.exec_module(fuzz)
    argv = [str(script), "--runs", "6"]
    for kind in CORPUS_BASES:  # every sensor set, as the test's own bases
        base = min(config.rootpath.glob(f"hil_tests/corpus/{kind}"), default=None)
        argv += ["--base", str(base)] if base is not None else []
    fuzz.BOUNDS_CHECKED_CACHE.mkdir(parents=True, exist_ok=True)
    with open(fuzz.COMPILING_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held by the child's copy once this one closes
        subprocess.Popen(
            [sys.executable, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=fuzz.bounds_checked_env(),
            pass_fds=(lock.fileno(),),
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    from firmware_host.live import warmup

    if warmup.is_warm() or warmup.marker_path() is None:
        return
    say = session.config.pluginmanager.get_plugin("terminalreporter")
    write = say.write_line if say is not None else (lambda line: None)
    write(
        "numba kernels: compiling them once for this checkout (python -m firmware_host.live.warmup)"
    )
    if not hasattr(session.config, "workerinput"):
        _compile_bounds_checked(session.config)
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host.live.warmup", "--machine"],
        stdout=subprocess.PIPE,
        text=True,
    )
    last = 0.0
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("progress ") and time.monotonic() - last >= PROGRESS_S:
            last = time.monotonic()
            write(warmup.describe(line.strip()))
    if proc.wait() != 0:
        write(f"numba warm-up failed (exit {proc.returncode}): tests compile as they go")
