"""A cached kernel is keyed on every file it compiles in, not only its own (issue 26).

numba checks a cached kernel against its own source file; a kernel compiles
its callees and the constants it imports into itself, so with the fusion cut
into one file per decision an edit of ``cushions.py`` would leave ``fuse``
running the old ring-down.  ``firmware_host.live.numba_cache`` keys each cached
kernel on a hash of its file and of every project file it imports.  Here a
two-file kernel package is compiled, its callee edited, and run again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from firmware_host.live import numba_cache

RUN = "import firmware_host; from protocol.caller import kernel; print(kernel())"


def _package(root: Path, answer: int) -> None:
    """``protocol/`` (a name the stamp follows) with a kernel in one file calling another's."""
    package = root / "protocol"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "callee.py").write_text(
        f"from numba import njit\nANSWER = {answer}\n\n\n"
        "@njit(cache=True)\ndef answer():\n    return ANSWER\n"
    )
    (package / "caller.py").write_text(
        "from numba import njit\n\nfrom .callee import answer\n\n\n"
        "@njit(cache=True)\ndef kernel():\n    return answer() + 0\n"
    )
    (package / "unrelated.py").write_text("X = 1\n")


def _run(root: Path) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        "NUMBA_CACHE_DIR": str(root / "cache"),
    }
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run(
        [sys.executable, "-c", RUN],
        check=False,
        cwd=root,  # not the checkout, whose protocol/ would come first
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_editing_a_callees_file_recompiles_its_caller(tmp_path: Path) -> None:
    _package(tmp_path, 1)
    assert _run(tmp_path) == "1"
    assert list((tmp_path / "cache").rglob("caller.kernel-*.nbi"))  # it was cached
    _package(tmp_path, 2)  # only callee.py changes
    assert _run(tmp_path) == "2"  # numba's own stamp would have loaded the cached 1


def test_the_stamp_follows_imports_and_nothing_else(tmp_path: Path) -> None:
    _package(tmp_path, 1)
    caller = str(tmp_path / "protocol" / "caller.py")
    first = numba_cache.sources_stamp(caller)
    numba_cache.sources_stamp.cache_clear()
    numba_cache._imports.cache_clear()
    (tmp_path / "protocol" / "unrelated.py").write_text("X = 2\n")
    assert numba_cache.sources_stamp(caller) == first
    numba_cache.sources_stamp.cache_clear()
    numba_cache._imports.cache_clear()
    _package(tmp_path, 3)
    assert numba_cache.sources_stamp(caller) != first
