"""Captures of the virtual table made once per version of the simulator, not once per run.

``simulate`` is deterministic (tests/virtual_table/test_scenarios.py holds a match
bit for bit the same when built again), so a capture depends only on its
arguments and on the simulator's sources.  The suite made the same captures on
every run: the Dask season alone is 200 matches, half a minute of CPU on a
2-core machine where the suite's time is its CPU.  This keeps each capture in
the temp directory under a hash of both, as the numba cache keeps kernels under
a hash of their sources (firmware_host/live/numba_cache.py), and copies it to
where a test wants it; an edit of any file the simulator imports makes new ones.
The tests of the simulator itself still run it every time.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from firmware_host.cli.main import main
from firmware_host.commands import simulate
from firmware_host.live.numba_cache import sources_stamp

CACHE = Path(tempfile.gettempdir()) / "firmware-host-test-captures"
T = TypeVar("T")


def simulated(path: Path, *argv: str) -> Path:
    """``simulate --capture PATH ARGV…`` as the command line runs it, or the capture an
    earlier run of the same arguments on the same sources made (the same bytes)."""
    key = hashlib.sha256("\0".join([sources_stamp(simulate.__file__), *argv]).encode())

    def make(making: Path) -> None:
        assert main(["simulate", "--capture", str(making), *argv]) == 0

    shutil.copyfile(_made(CACHE / f"{key.hexdigest()[:32]}.bin", make), path)
    return path


def _made(cached: Path, make: Callable[[Path], None]) -> Path:
    """``cached``, which ``make`` writes once: to a file of this process's own, then moved
    into place (workers may make it at once)."""
    if not cached.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        making = cached.with_suffix(f".{os.getpid()}.part")
        make(making)
        os.replace(making, cached)
    return cached


def kept(make: Callable[..., T], *key: Any) -> T:
    """``make(*key)``, a deterministic function of the virtual table's sources, kept as
    :func:`simulated` keeps a capture: a match played in the test process (its wire bytes
    and its truth) costs seconds of CPU each run for the same result."""
    stamp = sources_stamp(make.__globals__["__file__"])
    digest = hashlib.sha256(repr((stamp, make.__qualname__, key)).encode()).hexdigest()
    cached = _made(
        CACHE / f"{digest[:32]}.pickle", lambda making: making.write_bytes(pickle.dumps(make(*key)))
    )
    return pickle.loads(cached.read_bytes())
