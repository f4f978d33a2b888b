"""Frame-level fuzzing in CI: mutated captures with valid CRCs, kernels bounds-checked.

The fuzzer (``fuzz.py`` beside this file, a harness of the tests) runs in its own process
with ``NUMBA_BOUNDSCHECK=1``, so an index past a buffer in any numba kernel
raises there instead of corrupting memory, and with its own numba cache
directory (kernels compiled with bounds checks must not be mixed with the
fast ones).  The first run compiles every kernel with checks: minutes; when
the suite's warm-up compiles the ordinary kernels (a cold cache, as on CI),
conftest compiles these too, beside it and the other tests, and this test
(run last) waits for that.
The budget is fixed (seed and run count); docs/timing.md gives the long run.
The base captures are built here, with the ordinary kernels: the physics that
makes them is not what is fuzzed, and the checked process then compiles only
the decoder, timing core and fusion (a minute less of compiling on CI).
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import fuzz  # the harness beside this file (tests/protocol/fuzz.py)
import pytest

RUNS = 60
#: on a cold cache (CI) conftest's warm-up has these kernels compiled meanwhile: wait for that
pytestmark = pytest.mark.last


def test_mutated_captures_never_crash_or_break_order_under_bounds_checks(tmp_path: Path) -> None:
    bases = []
    for i, data in enumerate(fuzz.base_captures()):
        (tmp_path / f"base{i}.bin").write_bytes(data)
        bases += ["--base", str(tmp_path / f"base{i}.bin")]
    fuzz.BOUNDS_CHECKED_CACHE.mkdir(parents=True, exist_ok=True)
    with open(fuzz.COMPILING_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # conftest's compile of these kernels, if any, is over
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("fuzz.py")), "--runs", str(RUNS)]
        + ["--seed", "7", *bases],
        check=False,
        capture_output=True,
        text=True,
        env=fuzz.bounds_checked_env(),
        timeout=1800,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert done.stdout.splitlines()[-1].startswith(f"{RUNS} mutated captures, 0 failed,")
