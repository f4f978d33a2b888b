"""Before any test: the numba kernels compiled once, with progress on the terminal.

Many tests run ``python -m firmware_host …`` as a user would, each with a
time limit sized for a warm start.  On a fresh clone (CI) the first of them
would otherwise pay the whole cold compile (two minutes of CPU on two busy
cores) inside its limit.  The warm-up here is the one ``run`` starts in the
background (``firmware_host.live.warmup``): it fills numba's cache and writes the
marker, so every later process loads the kernels in about a second.  It is
skipped when the marker says the cache is warm, and the cold-start tests use
a cache directory of their own.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

PROGRESS_S = 3.0


def pytest_sessionstart(session: pytest.Session) -> None:
    from firmware_host.live import warmup

    if warmup.is_warm() or warmup.marker_path() is None:
        return
    say = session.config.pluginmanager.get_plugin("terminalreporter")
    write = say.write_line if say is not None else (lambda line: None)
    write(
        "numba kernels: compiling them once for this checkout (python -m firmware_host.live.warmup)"
    )
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
