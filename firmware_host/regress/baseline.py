"""What each recording's verdicts are compared with: the baseline.

Three kinds, as the command line names them:

* **stored expectations** (the default, or ``--baseline DIR`` of them):
  ``NAME.expect.json`` as the HIL corpus and ``hil add`` write them, beside
  each capture or at the same relative path in DIR.  Verdicts only, so the
  report shows the expected verdict in words and this run's picture.
* **a stored earlier run** (``--baseline OUT`` of an earlier ``hil regress
  -o OUT``): its Parquet rows, with each shot's events, so the report draws
  the picture before as well as after.
* **another version** (``--against GIT-REF-OR-VENV``): the same recordings
  replayed by that version's ``firmware-host replay --events`` on the
  workers, in its own interpreter (:mod:`.against`), events and all.

>>> Expectations(None).verdicts(recording)       # doctest: +SKIP
[{'shot': 1, 'verdict': 'foul', 'rules': ['19.1'], 'satisfied': None}]
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from .compare import line_of
from .corpus import Recording, filesystem
from .results import batch_files, footers

Line = dict[str, Any]
Shots = dict[int, str]  # each shot's events as a JSON array, as the rows keep them
EXPECT_SUFFIX = ".expect.json"
RUN_COLUMNS = ("recording", "shot", "t_us", "verdict", "rules", "clause", "reason", "events")


class BaselineError(ValueError):
    """A baseline that cannot be read (one line for the command to say)."""


class Expectations:
    """``NAME.expect.json`` files: beside the captures (``folder=None``) or in ``folder``."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.describe = (
            f"stored expectations in {folder}"
            if folder
            else "stored expectations beside each capture"
        )

    def verdicts(self, recording: Recording) -> tuple[list[Line] | None, Shots]:
        stem = recording.name.removesuffix(".bin")
        if self.folder is not None:
            url = f"{self.folder.rstrip('/')}/{stem}{EXPECT_SUFFIX}"
        else:
            first = recording.parts[0].url
            folder = first.rsplit("/", 1)[0] + "/" if "/" in first else ""
            url = folder + stem.rsplit("/", 1)[-1] + EXPECT_SUFFIX
        fs, path = filesystem(url)
        if not fs.exists(path):
            return None, {}
        try:
            with fs.open(path, "rt", encoding="utf-8") as f:
                data = json.load(f)
            return [dict(v) for v in data["verdicts"]], {}
        except (ValueError, KeyError, TypeError) as exc:
            raise BaselineError(f"{url}: not an expectation file ({exc})") from None


class EarlierRun:
    """The rows of an earlier ``hil regress -o DIR``: its own verdicts, and their events.

    Read a batch file at a time, as recordings ask for them (the footers say
    which file holds which recording), so a season's results are never all
    in memory; recordings come in about the order the earlier run wrote them.
    """

    def __init__(self, folder: str) -> None:
        self.describe = f"the earlier run in {folder}"
        self._file = {name: path for path, done in footers(Path(folder)) for name in done}
        self._loaded: tuple[Path | None, dict[str, tuple[list[Line], Shots]]] = (None, {})

    def verdicts(self, recording: Recording) -> tuple[list[Line] | None, Shots]:
        path = self._file.get(recording.name)
        if path is None:  # not in the earlier run: nothing to compare with
            return None, {}
        if self._loaded[0] != path:
            self._loaded = (path, self._read(path))
        return self._loaded[1].get(recording.name, ([], {}))  # no shots at all: none to compare

    def _read(self, path: Path) -> dict[str, tuple[list[Line], Shots]]:
        import pyarrow.parquet as pq

        found: dict[str, tuple[list[Line], Shots]] = defaultdict(lambda: ([], {}))
        for row in pq.read_table(path, columns=list(RUN_COLUMNS)).to_pylist():
            line = line_of(row)
            if line is None:  # a shot only its own baseline had
                continue
            lines, shots = found[row["recording"]]
            lines.append(line)
            if row["events"] and row["shot"] is not None:
                shots[row["shot"]] = row["events"]  # as it is: only a changed shot's is drawn
        return dict(found)


def stored(folder: str | None) -> Expectations | EarlierRun:
    """``--baseline DIR``: an earlier run if DIR holds its results, else expectation files."""
    if folder is not None:
        fs, path = filesystem(folder)
        if not fs.isdir(path):
            raise BaselineError(f"--baseline {folder}: no such folder")
        if batch_files(Path(folder)):
            return EarlierRun(folder)
    return Expectations(folder)
