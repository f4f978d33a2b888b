"""The run: one Dask task per capture part, results taken as they finish, written as they come.

A recording's parts are a chain (part n continues part n−1's pipeline);
recordings are independent, so the cluster is kept busy with a window of
recordings in flight (:data:`IN_FLIGHT_PER_THREAD` per worker thread),
which also bounds what the scheduler and this client hold.  As each part
comes back (:func:`distributed.as_completed`) the progress moves; when a
recording's parts (and, with ``--against``, its baseline replay) are all
in, it is compared and its rows go to the Parquet writer.

A task that raises is retried (:data:`RETRIES`); a worker that dies costs
the task it was running, which the scheduler gives to another worker (up to
Dask's ``distributed.scheduler.allowed-failures`` deaths per task, then the
recording is reported as failed, not the run).  A failed recording is not
written, so ``--resume`` tries it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed

from rules import RulesConfig

from .baseline import BaselineError
from .compare import rows_of
from .corpus import Recording
from .progress import Progress
from .replaying import Job, PartResult, join_events, replay_part
from .results import ResultWriter

RETRIES = 2
IN_FLIGHT_PER_THREAD = 4

Line = dict[str, Any]
Shots = dict[int, str]  # each shot's events as a JSON array
StoredBaseline = Callable[[Recording], tuple[list[Line] | None, Shots]]


@dataclass
class Plan:
    """What to replay and what to compare it with."""

    recordings: list[Recording]
    rules: RulesConfig
    out: Path
    stored: StoredBaseline | None = None  # expectations or an earlier run (client side)
    python: str | None = None  # --against: the baseline's interpreter (worker side)


@dataclass
class _Flight:
    """A recording in flight: its futures still out, and what came back."""

    recording: Recording
    outstanding: int
    parts: dict[int, PartResult] = field(default_factory=dict)
    baseline: tuple[list[Line], Shots] | None = None
    error: str | None = None


@dataclass
class Outcome:
    written: int = 0  # recordings compared and written
    failed: dict[str, str] = field(default_factory=dict)  # recording -> why


def _replay_task(job: Job, rules: RulesConfig, before: Any = None) -> Any:
    """A part's result; with the pipeline for the next part unless it is the last."""
    result, carry = replay_part(job, rules, before[1] if before is not None else None)
    return result if job.last else (result, carry)


def _result_only(pair: tuple[PartResult, Any]) -> PartResult:
    """A part's result without the pipeline it hands on (that stays on the cluster)."""
    return pair[0]


def _baseline_task(recording: Recording, python: str) -> tuple[list[Line], Shots]:
    from .against import replay_elsewhere

    return replay_elsewhere(recording, python)


class _Runner:
    def __init__(self, client: Client, plan: Plan, writer: ResultWriter, progress: Progress):
        self.client, self.plan, self.writer, self.progress = client, plan, writer, progress
        self.token = uuid.uuid4().hex[:8]  # keys unique on a scheduler other runs share
        self.flights: dict[str, _Flight] = {}
        self.meaning: dict[Any, tuple[str, str, int]] = {}  # future key -> recording, what, part
        self.queue = iter(enumerate(plan.recordings))
        self.outcome = Outcome()
        self.done = as_completed()

    def submit(self, n: int, rec: Recording) -> None:
        flight = self.flights[rec.name] = _Flight(rec, len(rec.parts))
        before: Future | None = None
        for i, part in enumerate(rec.parts):
            job = Job(rec.name, i, part, last=i == len(rec.parts) - 1)
            key = f"regress-{self.token}-{n}-{i}"
            pair = self.client.submit(
                _replay_task, job, self.plan.rules, before, key=key, retries=RETRIES, pure=False
            )
            out = pair
            if not job.last:  # keep the pipeline on the cluster: fetch only the result
                out = self.client.submit(_result_only, pair, key=f"{key}-result", pure=False)
            self.track(out, rec.name, "part", i)
            before = pair
        if self.plan.python is not None:
            flight.outstanding += 1
            base = self.client.submit(
                _baseline_task,
                rec,
                self.plan.python,
                key=f"regress-{self.token}-{n}-baseline",
                retries=RETRIES,
                pure=False,
            )
            self.track(base, rec.name, "baseline", -1)

    def track(self, future: Future, recording: str, what: str, index: int) -> None:
        self.meaning[future.key] = (recording, what, index)
        self.done.add(future)

    def fill(self, window: int) -> None:
        while len(self.flights) < window:
            item = next(self.queue, None)
            if item is None:
                return
            self.submit(*item)

    def run(self, window: int) -> Outcome:
        self.fill(window)
        for future in self.done:
            name, what, index = self.meaning.pop(future.key)
            flight = self.flights[name]
            flight.outstanding -= 1
            try:
                value = future.result()
            except Exception as exc:  # noqa: BLE001 - any task's failure fails its recording only
                flight.error = flight.error or f"{type(exc).__name__}: {exc}"
                value = None
            future.release()
            if what == "part":
                size = flight.recording.parts[index].size
                self.progress.advance(size, value.table_s if value else 0.0, value is None)
                if value is not None:
                    flight.parts[index] = value
            elif value is not None:
                flight.baseline = value
            if flight.outstanding == 0:
                self.finish(self.flights.pop(name))
                self.fill(window)
        return self.outcome

    def finish(self, flight: _Flight) -> None:
        rec = flight.recording
        if flight.error is not None:
            self.outcome.failed[rec.name] = flight.error
            return
        parts = [flight.parts[i] for i in range(len(rec.parts))]
        lines = [(p.url, line) for p in parts for line in p.lines]
        texts: dict[int, list[str]] = {}
        for p in parts:  # a shot the rotation cut in two: its events from both parts
            for shot, events in p.shots.items():
                texts.setdefault(shot, []).append(events)
        shots = {shot: join_events(events) for shot, events in texts.items()}
        baseline: list[Line] | None
        if flight.baseline is not None:
            baseline, baseline_shots = flight.baseline
        elif self.plan.stored is not None:
            try:
                baseline, baseline_shots = self.plan.stored(rec)
            except BaselineError as exc:  # one bad expectation file fails its recording only
                self.outcome.failed[rec.name] = str(exc)
                return
        else:
            baseline, baseline_shots = None, {}
        rows = rows_of(rec.name, lines, shots, baseline, baseline_shots)
        costs = {
            "parts": len(parts),
            "bytes": rec.size,
            "table_s": round(sum(p.table_s for p in parts), 3),
            "cpu_s": round(sum(p.cpu_s for p in parts), 3),
            "frames": sum(p.frames for p in parts),
            "bad_frames": sum(p.bad_frames for p in parts),
            "baseline": baseline is not None,
        }
        self.writer.add(rec.name, rows, costs)
        self.outcome.written += 1


def replay_all(client: Client, plan: Plan, threads: int, progress: Progress) -> Outcome:
    """Replay and compare every recording of ``plan``; results into ``plan.out``."""
    with ResultWriter(plan.out) as writer:
        return _Runner(client, plan, writer, progress).run(max(8, IN_FLIGHT_PER_THREAD * threads))


REPORT_MAX = 1000  # changed shots drawn in the report; every one is in the results


def write_report(
    client: Client, out: Path, figures: dict[str, Any], limit: int = REPORT_MAX
) -> int:
    """``out/report.html``: the changed shots (at most ``limit``), drawn on the cluster."""
    import pyarrow.dataset as ds

    from .report import change_html, order, page
    from .results import read_rows

    rows = order(list(read_rows(out, where=ds.field("change").is_valid())))[:limit]
    futures = [
        client.submit(change_html, row, n, retries=RETRIES, pure=False)
        for n, row in enumerate(rows, 1)
    ]
    (out / "report.html").write_text(page(figures, client.gather(futures)), encoding="utf-8")
    return len(rows)
