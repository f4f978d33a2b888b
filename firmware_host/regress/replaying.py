"""One part of a recording through the live pipeline, on a Dask worker.

The part is read in windows of :data:`WINDOW` bytes (never whole: a part
of a day's recording is hundreds of MB) and each window goes through
:func:`firmware_host.pipeline.replay` with the referee's presses that fall
in it (``.tx``).  A window is a whole number of the replay's chunks, so the
cuts are exactly those of one ``replay`` over the whole part and the
verdicts are exactly what ``firmware-host replay PART`` gives (and what the
daemon gave live).  A part that is not its recording's last is not flushed:
its :class:`~firmware_host.pipeline.Pipeline` goes to the next part's task
(pickled by Dask), so a shot cut by the rotation is finished there, as a
restarted daemon finishes it (``service/resume.py``).

What comes back is small: the final verdict lines and each shot's events
(for its picture), not the frames.  The events go back as text, each
shot's as the JSON array its Parquet row keeps (:func:`events_json`),
encoded here on the worker: a list of dicts would be pickled here,
unpickled by the client and encoded there after all.  Small per capture
(about 1 % of its replay), but paid in the one process every worker
reports to, so it would grow with the cluster (docs/regress.md).

>>> result, carry = replay_part(Job("rec", 0, Part("a.bin", 10), True), RulesConfig())  # doctest: +SKIP
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rules import RulesConfig

from ..pipeline import REPLAY_CHUNK, Pipeline, replay
from .corpus import Part, filesystem

WINDOW = 256 * REPLAY_CHUNK  # 1 MiB of a part in memory at a time
#: What a verdict line keeps for the comparison, the report and the Parquet row
VERDICT_KEYS = ("shot", "player", "t_us", "verdict", "rules", "satisfied", "reason")

Line = dict[str, Any]
Press = tuple[int, str, int]


def events_json(events: list[Line]) -> str:
    """A shot's events as its row keeps them: one compact JSON array."""
    return json.dumps(events, separators=(",", ":"))


def join_events(texts: list[str]) -> str:
    """One JSON array of the events of arrays ``texts`` (a shot the rotation cut in two), in
    order, without decoding them."""
    return texts[0] if len(texts) == 1 else "[" + ",".join(t[1:-1] for t in texts) + "]"


@dataclass(frozen=True)
class Job:
    """One task: a part of a recording, and whether it ends the recording (then flushed)."""

    recording: str
    index: int  # the part's place in its recording, from 0
    part: Part
    last: bool


@dataclass
class PartResult:
    """What a part decided, and what replaying it cost."""

    recording: str
    index: int
    url: str
    bytes: int
    lines: list[Line] = field(default_factory=list)  # final verdicts (early announcements left out)
    shots: dict[int, str] = field(default_factory=dict)  # each shot's events (events_json)
    table_s: float = 0.0  # hub time the part covered: the table time replayed
    cpu_s: float = 0.0  # this thread's CPU time for the replay
    frames: int = 0
    bad_frames: int = 0


@contextmanager
def local_part(url: str) -> Iterator[Path | None]:
    """A local path for the part at ``url`` whose ``.tx`` side file is readable beside it
    (copied out of object storage: it is small), or None if the part has none."""
    from fsspec.implementations.local import LocalFileSystem

    from ..link.recorder import SENT_SUFFIX

    fs, path = filesystem(url)
    tx = path.removesuffix(".bin") + SENT_SUFFIX
    if not fs.exists(tx):
        yield None
    elif isinstance(fs, LocalFileSystem):
        yield Path(path)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / "part.bin"
            fs.get_file(tx, str(local.with_suffix(SENT_SUFFIX)))
            yield local


def read_presses(url: str) -> list[Press]:
    """The referee's presses a part kept in its ``.tx`` side file (none without one)."""
    from ..link.recorder import recorded_presses

    with local_part(url) as path:
        return recorded_presses(path) if path is not None else []


def windows(source: BinaryIO, presses: list[Press]) -> Iterator[tuple[bytes, list[Press], bool]]:
    """The part in windows, each with its presses (offsets made relative), and whether last.

    The first window is one chunk, so the hub time at the part's start is
    known after it.  A press at a window's end belongs to the next window,
    where it is pressed before that window's first byte, as ``replay`` over
    the whole part presses it before the chunk starting there.
    """
    pending = sorted(presses)
    at = 0
    data = source.read(REPLAY_CHUNK)
    while True:
        ahead = source.read(WINDOW) if data else b""
        end = at + len(data)
        if not ahead:
            yield data, [(p - at, k, a) for p, k, a in pending], True
            return
        mine = [(p - at, k, a) for p, k, a in pending if p < end]
        pending = pending[len(mine) :]
        yield data, mine, False
        at, data = end, ahead


def replay_part(
    job: Job, rules: RulesConfig, carry: Pipeline | None = None
) -> tuple[PartResult, Pipeline | None]:
    """Replay ``job``'s part, continuing ``carry`` (the previous part's pipeline) if given.

    Returns the result and, unless the part is its recording's last, the
    pipeline for the next part.  Replayed without the cyclic garbage
    collector, as ``firmware-host replay`` runs (``no_cycle_collection``):
    what the pipeline makes is acyclic, and in a worker holding numba's
    kernels and Dask every full collection walks all of them again.
    """
    with _no_cycle_collection():
        return _replay_part(job, rules, carry)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The collector off for a task, back as it was after (the worker lives on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _replay_part(
    job: Job, rules: RulesConfig, carry: Pipeline | None
) -> tuple[PartResult, Pipeline | None]:
    started = time.thread_time()
    pipe = carry or Pipeline(rules)
    result = PartResult(job.recording, job.index, job.part.url, job.part.size)
    hub_start = pipe.events.timeline.hub_now if carry is not None else None
    before = pipe.decoder.stats()  # a carried pipeline counts from its recording's start
    fs, path = filesystem(job.part.url)
    presses = read_presses(job.part.url)
    shots: dict[int, list[Line]] = {}
    with fs.open(path, "rb") as source:
        for data, mine, last_window in windows(source, presses):
            step = replay(data, pipe=pipe, presses=mine, flush=job.last and last_window)
            _collect(result, shots, step.events, step.lines)
            if hub_start is None:
                hub_start = pipe.events.timeline.hub_now
    result.shots = {shot: events_json(events) for shot, events in shots.items()}
    stats = pipe.decoder.stats()
    result.frames = stats.frames - before.frames
    result.bad_frames = sum(stats.bad.values()) - sum(before.bad.values())
    result.table_s = max(0, pipe.events.timeline.hub_now - (hub_start or 0)) / 1e6
    result.cpu_s = time.thread_time() - started
    return result, (None if job.last else pipe)


def _collect(
    result: PartResult, shots: dict[int, list[Line]], events: list[Line], lines: list[Line]
) -> None:
    for ev in events:
        if ev.get("shot") is not None:
            shots.setdefault(int(ev["shot"]), []).append(ev)
    result.lines += [
        {k: line.get(k) for k in VERDICT_KEYS}
        for line in lines
        if line.get("kind") == "verdict" and not line.get("early")
    ]
