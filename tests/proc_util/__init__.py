"""Processes as the tests see them through /proc: who a command left running."""

from __future__ import annotations

import os
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
