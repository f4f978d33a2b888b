"""Another version of firmware-host as the baseline: a git ref in its own venv, or a venv.

``--against v0.3`` resolves the ref in the git checkout the command runs
from, exports that commit (``git archive``), installs it into a venv of its
own under the cache (``~/.cache/firmware-host/regress/venvs/COMMIT``), and
compiles its numba kernels there once (its own ``firmware_host.live.warmup`` if
it has one).  A later run against the same commit finds it ready.
``--against /opt/firmware-host`` uses an existing venv as it is.

The workers replay each recording with that interpreter through the
public command line, ``python -m firmware_host replay --events CAPTURE``
(EVENTS.md: keys may be added, never removed), so any version that has
``replay`` can be a baseline.  A rotated recording is handed over as one
capture: its parts joined with their ``.tx`` (the referee's presses)
rewritten by a :class:`~firmware_host.link.recorder.CaptureRecorder`, exactly
as the stream was read.  On a cluster the venv must be at the same path on
every worker (shared storage, like the corpus: docs/regress.md).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .corpus import Recording, filesystem
from .replaying import VERDICT_KEYS, WINDOW, events_json, local_part

Line = dict[str, Any]
READY = ".firmware-host-ready"  # written last: a venv without it is half-built


class AgainstError(ValueError):
    """A ``--against`` that names no venv and no commit, or one that would not install."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "firmware-host" / "regress" / "venvs"


def interpreter(target: str, cache: Path | None = None, say: Callable[[str], None] = print) -> str:
    """The Python that runs the baseline: of the venv ``target``, or of a venv built for the
    git ref ``target`` (cached by commit)."""
    path = Path(target)
    if (path / "bin" / "python").exists():
        return str((path / "bin" / "python").absolute())
    if path.is_file() and os.access(path, os.X_OK):
        return str(path.absolute())
    commit = _commit(target)
    venv = (cache or cache_root()) / commit
    python = venv / "bin" / "python"
    if (venv / READY).exists():
        return str(python)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{commit}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once: one builds, the other waits
        if not (venv / READY).exists():
            _build(commit, venv, say)
    return str(python)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AgainstError(done.stderr.strip().splitlines()[-1] if done.stderr else "git failed")
    return done.stdout.strip()


def _commit(ref: str) -> str:
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except AgainstError:
        raise AgainstError(
            f"--against {ref}: neither a venv (no bin/python in it) nor a commit of the git "
            "checkout here"
        ) from None


def _build(commit: str, venv: Path, say: Callable[[str], None]) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        say(f"--against: exporting {commit[:12]} and installing it into {venv}")
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", tmp],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise AgainstError(
                    f"--against {commit[:12]}: {' '.join(step[1:4])} failed: "
                    f"{(done.stderr.strip().splitlines() or ['?'])[-1]}"
                )
    say(f"--against: compiling {commit[:12]}'s numba kernels once (a few minutes of CPU)")
    python = str(venv / "bin" / "python")
    warm = subprocess.run(
        [python, "-m", "firmware_host.live.warmup"], capture_output=True, check=False
    )
    if warm.returncode != 0:  # an older version without the module compiles on first use
        say(f"--against: {commit[:12]} has no warm-up; its first replays compile the kernels")
    (venv / READY).write_text(commit + "\n")


def replay_elsewhere(recording: Recording, python: str) -> tuple[list[Line], dict[int, str]]:
    """The baseline's final verdict lines and each shot's events for ``recording``."""
    with tempfile.TemporaryDirectory() as tmp:
        capture = _one_capture(recording, Path(tmp))
        done = subprocess.run(
            [python, "-m", "firmware_host", "replay", "--events", capture],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode not in (0, 1):  # 1: the capture held bad frames, reported; still judged
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RuntimeError(f"{recording.name}: the baseline's replay failed: {why}")
    lines: list[Line] = []
    shots: dict[int, list[Line]] = {}
    for text in done.stdout.splitlines():
        item = json.loads(text)
        if item.get("kind") == "verdict" and not item.get("early"):
            lines.append({k: item.get(k) for k in VERDICT_KEYS})
        elif "type" in item and item.get("shot") is not None:
            shots.setdefault(int(item["shot"]), []).append(item)
    return lines, {shot: events_json(events) for shot, events in shots.items()}


def _one_capture(recording: Recording, tmp: Path) -> str:
    """A local file holding the recording's stream, its presses in a ``.tx`` beside it."""
    from fsspec.implementations.local import LocalFileSystem

    from ..link.recorder import CaptureRecorder, read_sent

    first_fs, first = filesystem(recording.parts[0].url)
    if len(recording.parts) == 1 and isinstance(first_fs, LocalFileSystem):
        return first
    with CaptureRecorder(tmp, prefix="stream") as rec:
        for part in recording.parts:
            fs, path = filesystem(part.url)
            with local_part(part.url) as local:
                sent = read_sent(local) if local is not None else []
            at = 0
            with fs.open(path, "rb") as source:
                while chunk := source.read(WINDOW):
                    end = at + len(chunk)
                    cut = 0
                    while sent and sent[0].rx_offset <= end:
                        frame = sent.pop(0)
                        rec.write(chunk[cut : frame.rx_offset - at])
                        cut = frame.rx_offset - at
                        rec.write_sent(frame.data, frame.host_ns)
                    rec.write(chunk[cut:])
                    at = end
            for frame in sent:  # sent after the part's last byte
                rec.write_sent(frame.data, frame.host_ns)
        return str(rec.path)
