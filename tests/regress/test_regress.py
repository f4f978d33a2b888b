"""`hil regress` on a real Dask cluster on this machine: a `dask scheduler` and two `dask worker`
processes, 200 one-minute captures of the virtual table, a baseline with three shots edited.

The season test replays the 200 captures twice through the command line, as
a user would: once to make the baseline (an earlier run), then, after three
of its shots were edited, against it, while one worker is killed with a
task in flight.  Exactly the three edited shots must be reported, the run
must finish, and the report must show them in Chromium.

The season is a club's eight tables, two of them with the overhead tracker
(:data:`TABLE_SENSORS`): a tracker's minute costs twenty times the replay of
the other sensors', and an all-tracker season made this the suite's slowest
file (4.5 min on one core) without testing more of the cluster.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from proc_util import ROOT
from simulated import simulated
from web_util import chromium

pytestmark = pytest.mark.wall_s(70)  # alone, on an idle core: run first (conftest.py)

CAPTURES = 200
EDITED = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask() -> str:
    dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if dask is None:
        pytest.fail("needs the dask command: pip install -e '.[test]' (dask[distributed])")
    return dask


#: A club's eight tables, as clubs equip them: two with the overhead tracker, the rest with the
#: cushion, pocket and cue sensors (a tracker's minute is 1 MB and costs 20 times the replay)
TABLE_SENSORS = ("full", "full", "middle", "middle", "middle", "minimum", "minimum", "minimum")


def _matches(folder: Path, seeds: range) -> Path:
    """One-minute matches of the virtual table (`simulate --capture`, tests/simulated.py), eight
    tables' folders."""
    for seed in seeds:
        path = folder / f"table{seed % 8}" / f"match-{seed:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        simulated(path, "--seed", str(seed), "--minutes", "1", "--sensors", TABLE_SENSORS[seed % 8])
    return folder


@pytest.fixture(scope="session")
def season(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 one-minute matches, made once a session."""
    return _matches(tmp_path_factory.mktemp("season"), range(CAPTURES))


class Cluster:
    """A scheduler and its workers, each `dask worker` in a process group of its own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        port = self.address.rsplit(":", 1)[1]
        self.scheduler = self._start(
            "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"
        )
        self.workers = [self.add_worker(f"w{i}") for i in range(2)]

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{args[0]}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(
            [_dask(), *args],
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def add_worker(self, name: str) -> subprocess.Popen[bytes]:
        return self._start(
            "worker", self.address, "--host", "127.0.0.1", "--name", name, "--nthreads", "1",
            "--memory-limit", "2GiB", "--no-dashboard", "--local-directory", str(self.folder),
        )  # fmt: skip

    def client(self):
        from distributed import Client

        client = Client(self.address, timeout="60s")
        client.wait_for_workers(len(self.workers), timeout=180)
        return client

    def kill(self, worker: subprocess.Popen[bytes]) -> None:
        """The worker and its nanny, at once (a machine that lost power)."""
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)

    def close(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.workers, self.scheduler]:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        running.client().close()  # the scheduler up and both workers registered
        yield running
    finally:
        running.close()


def _regress(*args: str, log: Path) -> subprocess.Popen[str]:
    """The command as a user runs it; its progress lines go to ``log``."""
    return subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "hil", "regress", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )


def _parts_done(log: Path) -> int:
    """The last progress line's count: ``firmware-host hil regress: 41/200 parts, …``."""
    done = re.findall(r"hil regress: (\d+)/\d+ parts", log.read_text())
    return int(done[-1]) if done else 0


def _rows(out: Path) -> list[dict]:
    import pyarrow.dataset as ds

    return ds.dataset(out / "results", format="parquet").to_table().to_pylist()


#: What the baseline is edited to say, for a shot this run gives the first verdict
EDITS = (
    ("foul", {"verdict": "legal", "rules": [], "clause": "20(1)"}),  # now a new foul
    ("legal", {"verdict": "foul", "rules": ["19.1"], "clause": None}),  # foul no longer called
    ("legal", {"clause": "12.1(3)"}),  # another clause
)


def _edit_three(run: Path, baseline: Path) -> dict[tuple[str, str], str]:
    """A copy of ``run``'s results with three shots of three recordings edited (:data:`EDITS`);
    the edited shots and the kind of change each must be reported as."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (baseline / "results").mkdir(parents=True)
    kinds = ("new foul (false-foul candidate)", "foul no longer called", "other rules or clause")
    edited: dict[tuple[str, str], str] = {}
    todo = list(zip(EDITS, kinds, strict=True))
    for path in sorted((run / "results").glob("*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pylist()
        for row in rows:
            used = {recording for recording, _ in edited}
            if todo and row["shot"] is not None and row["recording"] not in used:
                (verdict, change), kind = todo[0]
                if row["verdict"] == verdict and row["clause"] != change.get("clause", "-"):
                    row.update(change)
                    edited[(row["recording"], row["key"])] = kind
                    todo.pop(0)
        pq.write_table(
            pa.Table.from_pylist(rows, schema=table.schema), baseline / "results" / path.name
        )
    assert not todo, f"the season had no shot to edit for {todo}"
    return edited


def test_a_season_on_a_cluster_reports_exactly_the_edited_shots_though_a_worker_dies(
    season: Path, cluster: Cluster, tmp_path: Path
) -> None:
    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    first = _regress(
        str(season), "--scheduler", cluster.address, "-o", str(tmp_path / "run1"), log=log1
    )
    out, _ = first.communicate(timeout=900)
    assert first.returncode == 0, log1.read_text()
    assert f"{CAPTURES} recordings ({CAPTURES} parts" in out and " 0 changed" in out
    edited = _edit_three(tmp_path / "run1", tmp_path / "baseline")

    # The second run, against the edited baseline; one worker dies with a task in flight.
    second = _regress(
        str(season), "--baseline", str(tmp_path / "baseline"), "--scheduler", cluster.address,
        "-o", str(tmp_path / "run2"), log=log2,
    )  # fmt: skip
    client = cluster.client()
    killed_at = None
    try:
        pids = client.run(os.getpid)
        deadline = time.monotonic() + 600
        while killed_at is None and time.monotonic() < deadline and second.poll() is None:
            done = _parts_done(log2)
            busy = [
                w
                for w, keys in client.processing().items()
                if any("regress-" in str(k) for k in keys)
            ]
            if done >= CAPTURES // 10 and busy:  # mid-run, and this worker has a part in hand
                victim = next(w for w in cluster.workers if _descends(pids[busy[0]], w.pid))
                cluster.kill(victim)
                cluster.workers[cluster.workers.index(victim)] = cluster.add_worker("w-new")
                killed_at = done
            time.sleep(0.2)
        out, _ = second.communicate(timeout=900)
    finally:
        client.close()
    assert killed_at is not None and killed_at < CAPTURES, "no worker was killed mid-run"
    progress = log2.read_text()
    assert second.returncode == 0, progress
    assert "captures/s" in progress and "ETA" in progress and "table-hours" in progress

    rows = _rows(tmp_path / "run2")
    first_rows = _rows(tmp_path / "run1")
    # every recording once, with all its shots: none lost to the dead worker, none twice
    assert Counter(r["recording"] for r in rows) == Counter(r["recording"] for r in first_rows)
    assert len({r["recording"] for r in rows}) == CAPTURES
    changed = {(r["recording"], r["key"]): r["change"] for r in rows if r["change"] is not None}
    assert changed == edited
    figures = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert figures["recordings"] == CAPTURES and figures["changed"] == EDITED
    assert not figures["failed"]
    assert list(figures["changes"]) == [  # false-foul candidates first
        "new foul (false-foul candidate)", "foul no longer called", "other rules or clause"
    ]  # fmt: skip
    _looks_right_in_chromium(tmp_path / "run2" / "report.html", edited, rows)


def _descends(pid: int, ancestor: int) -> bool:
    """``pid`` is ``ancestor`` or one of its descendants (a worker under its nanny)."""
    while pid > 1:
        if pid == ancestor:
            return True
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def _looks_right_in_chromium(page: Path, edited: dict, rows: list[dict]) -> None:
    from selenium.webdriver.common.by import By

    by_key = {(r["recording"], r["key"]): r for r in rows}
    browser = chromium()
    try:
        browser.get(page.as_uri())
        sections = browser.find_elements(By.CSS_SELECTOR, "section.change")
        shown = [(s.get_attribute("data-recording"), s.get_attribute("data-key")) for s in sections]
        assert set(shown) == set(edited) and len(shown) == EDITED
        assert edited[shown[0]] == "new foul (false-foul candidate)"  # the one to look at first
        for section in sections:
            row = by_key[
                (section.get_attribute("data-recording"), section.get_attribute("data-key"))
            ]
            before, after = section.find_elements(By.CSS_SELECTOR, ".side")
            assert row["baseline_verdict"].upper() in before.text.upper()
            assert row["verdict"].upper() in after.text.upper()
            for side in (before, after):  # the picture before and after, drawn from events
                picture = side.find_element(By.CSS_SELECTOR, ".picture svg")
                assert picture.size["width"] > 300 and picture.size["height"] > 150
        assert (
            browser.execute_script("return performance.getEntriesByType('resource').length") == 0
        )  # a self-contained file: nothing fetched
    finally:
        browser.quit()


def test_against_another_install_with_a_rotated_recording_then_resume(
    cluster: Cluster, tmp_path: Path
) -> None:
    """``--against VENV``: the same recordings replayed by another install's command line (here
    this very version, so nothing may change), a rotated recording joined for it; then
    ``--resume`` finds everything done, and the same OUT without it is refused."""
    from firmware_host.link.recorder import CaptureRecorder

    corpus = _matches(tmp_path / "corpus", range(1, 4))
    data = (corpus / "table3" / "match-003.bin").read_bytes()
    (corpus / "table3" / "match-003.bin").unlink()
    with CaptureRecorder(corpus / "table1", max_bytes=len(data) // 3 + 4000) as rec:
        for start in range(0, len(data), 4000):
            rec.write(data[start : start + 4000])
    assert len(rec.paths) == 3
    out = tmp_path / "out"
    argv = [str(corpus), "--against", sys.prefix, "--scheduler", cluster.address, "-o", str(out)]
    run = _regress(*argv, log=tmp_path / "against.log")
    stdout, _ = run.communicate(timeout=900)
    assert run.returncode == 0, (tmp_path / "against.log").read_text()
    assert "3 recordings (5 parts" in stdout and " 0 changed" in stdout
    rows = _rows(out)
    assert {r["recording"] for r in rows} == {
        "table1/match-001.bin", "table2/match-002.bin", f"table1/{rec.paths[0].name.rsplit('-', 2)[0]}"
    }  # fmt: skip
    decided = [r for r in rows if r["shot"] is not None]
    assert decided and all(r["events"] and r["baseline_verdict"] for r in decided)

    again = _regress(*argv, "--resume", log=tmp_path / "resume.log")
    stdout, _ = again.communicate(timeout=900)
    assert again.returncode == 0
    assert "resuming: 3 recordings done, 0 to go" in (tmp_path / "resume.log").read_text()
    assert len(_rows(out)) == len(rows)  # nothing replayed twice
    refused = _regress(*argv, log=tmp_path / "refused.log")
    refused.communicate(timeout=300)
    assert refused.returncode == 2
    assert "holds an earlier run" in (tmp_path / "refused.log").read_text()
