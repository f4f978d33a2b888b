"""The daemon's pipeline saved where a restart can take the match up again (service/resume.py).

A checkpoint is the whole pipeline (decoder, timing core, fusion, referee) as
it stood after a feed, and where the recording stood then: a part and its
length.  Replaying only what was recorded after it gives the state a replay
of the whole day would give, so a restart costs what was recorded since the
last checkpoint, never the day (docs/memory.md).
"""

from __future__ import annotations

import logging
import os
import pickle
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Stream between two checkpoints when no frame starts: the most a restart replays.
CHECKPOINT_BYTES = 16_000_000
_FORMAT = "firmware-host resume checkpoint 3"  # 2: rate limits, NODES_FLOODED; 3: INFERRED_T


def checkpoint_path(folder: str | Path, now: datetime | None = None) -> Path:
    """The day's checkpoint, beside its recording parts."""
    day = (now or datetime.now(UTC)).strftime("%Y%m%d")
    return Path(folder) / f"resume-{day}.pickle"


class Checkpoints:
    """The daemon's pipeline saved where a restart can take it up again.

    :meth:`after_feed` after every feed: it saves when the match's frame number
    changed (a frame started) or ``every`` bytes were recorded since the last save.
    A save is atomic (a new file renamed over the old one) and readable by the
    daemon's user only: the file is a pickle, so :func:`load_checkpoint` takes one
    only if that user owns it and nobody else may write it.
    """

    def __init__(self, folder: str | Path, every: int = CHECKPOINT_BYTES) -> None:
        self.folder = Path(folder)
        self.every = every
        self._frame: int | None = None
        self._saved_at = 0
        self.saved = 0

    def after_feed(self, pipeline: Any, part: Path, offset: int, recorded: int) -> None:
        """``pipeline`` has had the stream up to ``offset`` of ``part``; ``recorded``: the
        bytes recorded in this session, all parts."""
        frame = pipeline.referee.state.frame
        if frame == self._frame and recorded - self._saved_at < self.every:
            return
        self._frame, self._saved_at = frame, recorded
        path = checkpoint_path(self.folder)
        temporary = path.with_name(path.name + ".new")
        try:
            blob = pickle.dumps((_FORMAT, part.name, offset, pipeline), pickle.HIGHEST_PROTOCOL)
            if temporary.exists():
                temporary.unlink()
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(temporary, path)
            for older in self.folder.glob("resume-*.pickle"):
                if older != path:  # an earlier day's: a restart only reads today's
                    older.unlink()
        except OSError as exc:  # the recording's own failures are reported by the recorder
            log.warning("%s: checkpoint not saved (%s): a restart replays more", path, exc)
            return
        self.saved += 1


def load_checkpoint(path: Path, parts: list[Path]) -> tuple[int, int, Any] | None:
    """(index in ``parts``, offset, pipeline) from a checkpoint, or None: replay every part.

    Refused, with a warning: a file not owned by this user or writable by others (a
    pickle runs code as it loads), one that does not load, or one whose part is not
    among today's or is shorter than its offset.
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        log.warning("%s: not a file of this user's that only it may write: not loaded", path)
        return None
    try:
        fmt, name, offset, pipeline = pickle.loads(path.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            ImportError, IndexError) as exc:  # fmt: skip
        log.warning("%s: does not load (%s): the whole day is replayed", path, exc)
        return None
    names = [part.name for part in parts]
    if fmt != _FORMAT or name not in names:
        log.warning("%s: not a checkpoint of today's recording: the whole day is replayed", path)
        return None
    at = names.index(name)
    if parts[at].stat().st_size < offset:
        log.warning("%s: %s is shorter than the checkpoint: the whole day is replayed", path, name)
        return None
    return at, offset, pipeline
