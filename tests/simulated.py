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
import shutil
import tempfile
from pathlib import Path

from firmware_host.cli.main import main
from firmware_host.commands import simulate
from firmware_host.live.numba_cache import sources_stamp

CACHE = Path(tempfile.gettempdir()) / "firmware-host-test-captures"


def simulated(path: Path, *argv: str) -> Path:
    """``simulate --capture PATH ARGV…`` as the command line runs it, or the capture an
    earlier run of the same arguments on the same sources made (the same bytes)."""
    key = hashlib.sha256("\0".join([sources_stamp(simulate.__file__), *argv]).encode())
    cached = CACHE / f"{key.hexdigest()[:32]}.bin"
    if not cached.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        making = cached.with_suffix(f".{os.getpid()}.part")  # workers may make it at once
        assert main(["simulate", "--capture", str(making), *argv]) == 0
        os.replace(making, cached)
    shutil.copyfile(cached, path)
    return path
