"""A restarted daemon picks the match up where it was: today's recording, replayed.

Under systemd a daemon can be restarted at any moment (a watchdog timeout,
a crash, an upgrade), mid-shot and mid-frame.  The match state -- whose
turn it is, the frame, the shot count, balls pocketed -- lives only in the
referee, so it is rebuilt by feeding the day's recording (``run --record
DIR``, the parts of today's UTC date, in name order) through the fresh
pipeline before the port is read, with the referee's keys pressed from
the page or the broker where they were (the ``.tx`` side file).  The verdicts of that replay are history:
they are counted, not printed and not sent to the lamp.  The pipeline is not
flushed, so a shot the restart cut in two is finished by the live stream;
the frames lost while no daemon read the port are counted as lost, and a
part cut mid-frame is one bad frame.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..files import is_regular

log = logging.getLogger(__name__)


@dataclass
class Resumed:
    parts: int
    bytes: int
    verdicts: int
    shot: int | None  # the last shot number the replay saw
    frame: int
    to_play: int


def todays_parts(folder: str | Path, now: datetime | None = None) -> list[Path]:
    """The recording parts of today's UTC date in ``folder``, in stream order.

    Only regular files: a directory or a FIFO named like a part (left by hand, or
    planted) is said and skipped; reading it crashed the start into a restart loop, or
    hung it."""
    day = (now or datetime.now(UTC)).strftime("%Y%m%d")
    parts = []
    for path in sorted(Path(folder).glob(f"capture-{day}-*.bin")):
        if is_regular(path):
            parts.append(path)
        else:
            log.warning("%s: named like a recording part but not a file: not replayed", path)
    return parts


def resume(pipeline: Any, parts: list[Path]) -> Resumed:
    """Feed ``parts`` through ``pipeline`` (a :class:`~firmware_host.pipeline.Pipeline`)."""
    from ..link.recorder import recorded_presses
    from ..pipeline import replay

    total = verdicts = 0
    shot = None
    for part in parts:
        data = part.read_bytes()
        total += len(data)
        step = replay(data, pipe=pipeline, presses=recorded_presses(part), flush=False)
        for line in step.lines:
            if line.get("kind") == "verdict":
                verdicts += 1
                shot = line.get("shot") or shot
    state = pipeline.referee.state
    return Resumed(len(parts), total, verdicts, shot, state.frame, state.to_play)
