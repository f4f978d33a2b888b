"""The run's progress on stderr: parts done, captures/s, table-hours replayed, the end.

On a terminal it is rich's live bar; in a log (CI, ``2> run.log``) it is one
plain line every :data:`LINE_S` seconds, so a person or a script can follow
it.  The estimated end is from the bytes left at the rate bytes have gone so
far: parts differ in size by hours, counts would mislead.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

LINE_S = 2.0


class Progress:
    """Call :meth:`advance` as each part's result arrives, :meth:`close` at the end."""

    def __init__(self, parts: int, total_bytes: int, stream: TextIO | None = None) -> None:
        self.parts, self.total_bytes = parts, total_bytes
        self.done = self.done_bytes = self.failed = 0
        self.table_s = 0.0
        self.started = time.monotonic()
        self.stream = stream or sys.stderr
        self._said = 0.0
        self._bar: Any = None
        if self.stream.isatty():
            self._bar = _rich_bar(self.stream, parts)

    @property
    def rate(self) -> float:
        """Parts (captures) finished per second so far."""
        return self.done / max(time.monotonic() - self.started, 1e-9)

    def eta_s(self) -> float | None:
        elapsed = time.monotonic() - self.started
        if not self.done_bytes:
            return None
        return (self.total_bytes - self.done_bytes) * elapsed / self.done_bytes

    def text(self) -> str:
        eta = self.eta_s()
        end = "?" if eta is None else time.strftime("%H:%M:%S", time.localtime(time.time() + eta))
        failed = f", {self.failed} failed" if self.failed else ""
        return (
            f"{self.done}/{self.parts} parts{failed}, {self.rate:.2f} captures/s, "
            f"{self.table_s / 3600:.2f} table-hours replayed, "
            f"ETA {'?' if eta is None else f'{eta:.0f} s'} (ends about {end})"
        )

    def advance(self, size: int, table_s: float, failed: bool = False) -> None:
        self.done += 1
        self.done_bytes += size
        self.table_s += table_s
        self.failed += failed
        if self._bar is not None:
            progress, task = self._bar
            progress.update(task, completed=self.done, status=self.text())
        elif time.monotonic() - self._said >= LINE_S or self.done == self.parts:
            self._said = time.monotonic()
            self.stream.write(f"firmware-host hil regress: {self.text()}\n")
            self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar[0].stop()


def _rich_bar(stream: TextIO, parts: int) -> tuple[Any, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    progress = Progress(
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        console=Console(file=stream),
    )
    task = progress.add_task("replay", total=parts, status="starting the workers")
    progress.start()
    return progress, task
