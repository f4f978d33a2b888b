"""Frame-level fuzzing in CI: mutated captures with valid CRCs, kernels bounds-checked.

The fuzzer (``fuzz.py`` beside this file, a harness of the tests) runs in its own process
with ``NUMBA_BOUNDSCHECK=1``, so an index past a buffer in any numba kernel
raises there instead of corrupting memory, and with its own numba cache
directory (kernels compiled with bounds checks must not be mixed with the
fast ones).  The first run compiles every kernel with checks: minutes.
The budget is fixed (seed and run count); docs/timing.md gives the long run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

RUNS = 60


def test_mutated_captures_never_crash_or_break_order_under_bounds_checks() -> None:
    cache = Path(tempfile.gettempdir()) / "firmware-host-numba-boundscheck"
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("fuzz.py")),
            "--runs",
            str(RUNS),
            "--seed",
            "7",
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert done.stdout.splitlines()[-1].startswith(f"{RUNS} mutated captures, 0 failed,")
