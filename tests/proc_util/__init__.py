"""Processes as the tests see them: who a command left running (/proc), a command run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry))
    return found


ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, stdin: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``firmware-host ARGS`` as a user runs it from the checkout: its own process, text
    output, any status."""
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", *args],
        input=stdin,
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
