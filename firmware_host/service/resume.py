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

Reading the whole day each time would cost the whole day (a 300 MB part took
38 s and 540 MB, with no refereeing meanwhile).  So the daemon keeps a
checkpoint (:class:`~firmware_host.checkpoint.Checkpoints`): the pipeline as it stood, and where in the
recording it stood, saved at every frame start and at least every
``CHECKPOINT_BYTES`` of stream.  A restart loads it and replays only the bytes
recorded after it, in chunks: its time and memory do not depend on how long
the day has been (docs/memory.md).  Without a usable checkpoint (a recording
of an older version, or one planted or damaged) the whole day is replayed as
before, still in chunks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..checkpoint import load_checkpoint
from ..files import is_regular

log = logging.getLogger(__name__)

READ_BYTES = 1 << 20  # a part is read this much at a time


@dataclass
class Resumed:
    parts: int
    bytes: int
    verdicts: int
    shot: int | None  # the last shot number the replay saw
    frame: int
    to_play: int
    checkpoint: str | None = None  # "part @ offset" the replay started from, None: every part


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


def _read_from(path: Path, offset: int) -> Iterator[bytes]:
    with open(path, "rb") as source:
        source.seek(offset)
        while chunk := source.read(READ_BYTES):
            yield chunk


def resume(pipeline: Any, parts: list[Path], checkpoint: Path | None = None) -> Resumed:
    """Feed ``parts`` through ``pipeline`` (a :class:`~firmware_host.pipeline.Pipeline`).

    With a usable ``checkpoint``, ``pipeline`` takes its state (keeping its own rules
    configuration) and only what was recorded after it is fed.
    """
    from ..link.recorder import recorded_presses
    from ..pipeline import replay_steps

    live = pipeline.decoder.signing  # the table key's check, its counters past today's frames
    first, offset, where = 0, 0, None
    loaded = load_checkpoint(checkpoint, parts) if checkpoint is not None else None
    if loaded is not None:
        first, offset, saved = loaded
        config = pipeline.referee.config
        vars(pipeline).update(vars(saved))
        pipeline.referee.config = config
        where = f"{parts[first].name} @ {offset}"
    pipeline.decoder.signing = live.for_recording() if live is not None else None
    total = verdicts = 0
    shot = None
    for part in parts[first:]:
        presses = [
            (at - offset, key, arg) for at, key, arg in recorded_presses(part) if at >= offset
        ]
        reads = _read_from(part, offset)
        for step in replay_steps(reads, pipe=pipeline, presses=presses, flush=False):
            for line in step.lines:
                if line.get("kind") == "verdict":
                    verdicts += 1
                    shot = line.get("shot") or shot
        total += part.stat().st_size - offset
        offset = 0
    pipeline.decoder.signing = live
    state = pipeline.referee.state
    return Resumed(len(parts) - first, total, verdicts, shot, state.frame, state.to_play, where)
