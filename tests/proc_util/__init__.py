"""Processes as the tests see them: who a command left running (/proc), a command run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any


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
    """``firmware-host ARGS`` as a user runs it from the checkout: its own process (forked
    from this one, :mod:`.forked`), text output, any status."""
    from .forked import PREFIX, run

    return run(
        [*PREFIX, *args], input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def as_nobody(function: Any, *args: Any) -> Any:
    """``function(*args)`` in a forked child that runs as ``nobody`` with no groups, as
    an unprivileged daemon does (the tests run as root, whom no permission stops).
    Returns its result, or raises its exception here."""
    import pickle
    import pwd

    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no logging, no threads of its own, out through the pipe
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            outcome: tuple[bool, Any] = (True, function(*args))
        except BaseException as exc:  # noqa: BLE001 - every outcome goes back to the test
            outcome = (False, exc)
        os.write(write, pickle.dumps(outcome))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value


def doc_picture(name: str, scratch: Path) -> Path:
    """Where a test's screenshot goes: ``docs/pictures/NAME`` when asked for
    (``FIRMWARE_HOST_DOC_PICTURES=1``, to refresh the docs after looking at it), else the
    test's scratch folder, so that a test run never edits the checkout."""
    if os.environ.get("FIRMWARE_HOST_DOC_PICTURES") == "1":
        return ROOT / "docs" / "pictures" / name
    return scratch / name
