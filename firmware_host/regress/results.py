"""The run's results as Parquet: one row per shot, written as recordings finish.

``OUT/results/`` is a Parquet dataset of batch files; DuckDB reads it as
``read_parquet('OUT/results/*.parquet')``, pandas as
``pd.read_parquet('OUT/results')``.  A batch file appears whole or not at
all (written beside, then renamed), and its footer lists the recordings it
completes, with what replaying each cost.  So a run killed at any moment
keeps every batch it wrote, and ``--resume`` reads the footers (not the
rows) to skip what is done; a recording is in exactly one batch file.

>>> with ResultWriter(Path("out")) as writer:          # doctest: +SKIP
...     writer.add("rec.bin", rows, {"bytes": 10, "table_s": 60.0, "cpu_s": 0.2})
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

RESULTS = "results"
FLUSH_ROWS = 20_000  # a batch file at least this often (rows) ...
FLUSH_S = 30.0  # ... or this often (seconds), so a stop loses little
META_KEY = b"firmware_host.regress.recordings"

Row = dict[str, Any]


def schema() -> Any:
    """One shot: where it is, what this run said, what the baseline said, and the change."""
    import pyarrow as pa

    verdict = [
        ("verdict", pa.string()),
        ("rules", pa.list_(pa.string())),
        ("clause", pa.string()),
        ("reason", pa.string()),
    ]
    return pa.schema(
        [
            ("recording", pa.string()),
            ("part", pa.string()),  # the part whose replay gave this run's verdict
            ("key", pa.string()),  # "12", "12'" (a second verdict), "-1" (outside a shot)
            ("shot", pa.int64()),
            ("t_us", pa.int64()),  # hub time of this run's verdict
            ("player", pa.int64()),
            *verdict,
            *[(f"baseline_{name}", kind) for name, kind in verdict],
            ("change", pa.string()),  # null: the same, or no baseline for this recording
            ("events", pa.string()),  # the shot's events as JSON, for its picture
            ("baseline_events", pa.string()),  # the baseline's, where it has them
        ]
    )


def results_dir(out: Path) -> Path:
    return out / RESULTS


def batch_files(out: Path) -> list[Path]:
    return sorted(results_dir(out).glob("*.parquet"))


def footers(out: Path) -> Iterator[tuple[Path, dict[str, dict[str, Any]]]]:
    """Each batch file and the recordings it completes, with their costs (footers only)."""
    import pyarrow.parquet as pq

    for path in batch_files(out):
        meta = pq.read_metadata(path).metadata or {}
        yield path, json.loads(meta.get(META_KEY, b"{}"))


def done_recordings(out: Path) -> dict[str, dict[str, Any]]:
    """Every recording the run in ``out`` completed, with what replaying it cost."""
    return {name: costs for _, done in footers(out) for name, costs in done.items()}


def read_rows(out: Path, columns: list[str] | None = None, where: Any = None) -> Iterator[Row]:
    """The rows of every batch, a batch at a time (``where``: a pyarrow filter expression)."""
    import pyarrow.dataset as ds

    if not batch_files(out):
        return
    dataset = ds.dataset(results_dir(out), format="parquet", schema=schema())
    for batch in dataset.to_batches(columns=columns, filter=where):
        yield from batch.to_pylist()


def change_counts(out: Path) -> tuple[int, Counter[str]]:
    """How many shots the results hold, and their changes by kind (one column read)."""
    import pyarrow.dataset as ds

    if not batch_files(out):
        return 0, Counter()
    column = ds.dataset(results_dir(out), format="parquet").to_table(columns=["change"])["change"]
    counts = Counter({v["values"].as_py(): v["counts"].as_py() for v in column.value_counts()})
    counts.pop(None, None)
    return len(column), counts


class ResultWriter:
    """Rows in, batch files out; a recording's rows always land in one file."""

    def __init__(self, out: Path, flush_rows: int = FLUSH_ROWS, flush_s: float = FLUSH_S) -> None:
        self.dir = results_dir(out)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.flush_rows = flush_rows
        self.flush_s = flush_s
        self._rows: list[Row] = []
        self._done: dict[str, dict[str, Any]] = {}
        self._since = time.monotonic()

    def add(self, recording: str, rows: list[Row], costs: dict[str, Any]) -> None:
        self._rows += rows
        self._done[recording] = costs
        if len(self._rows) >= self.flush_rows or time.monotonic() - self._since >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered as one batch file (nothing if nothing is buffered)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._since = time.monotonic()
        if not self._done:
            return
        table = pa.Table.from_pylist(self._rows, schema=schema()).replace_schema_metadata(
            {META_KEY: json.dumps(self._done).encode()}
        )
        name = f"batch-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, self.dir / name)  # whole or not at all
        self._rows, self._done = [], {}

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
