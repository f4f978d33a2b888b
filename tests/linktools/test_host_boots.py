"""`stats` of forged hub boots with host receive times (.rxt): nothing kept per ended boot but
what the report lists (issue 29: 6 MB of three-frame boots peaked at 405 MB, 31 MB of
nine-frame boots at 1.6 GB).  The hub's rate against the host is listed for the first
LISTED boots and counted for all; the streamed report is still the whole capture's, byte
for byte; a percentile in a crowded bucket is narrowed, not given up; and the peak does
not grow with the boots."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_util import run_cli as cli
from test_stats_stream import MB, ROOT, chunks

from firmware_host.commands.stats import _text
from firmware_host.jsonout import dumps
from firmware_host.link.recorder import read_rx_times
from firmware_host.linktools import ranks
from firmware_host.linktools.capped import LISTED
from firmware_host.linktools.hoststream import host_stats
from firmware_host.linktools.linkstats import link_stats

sys.path.insert(0, str(ROOT / "bench"))
import forged_boots  # bench/forged_boots.py: the same captures, bigger

pytestmark = pytest.mark.wall_s(25)


def forged(tmp_path: Path, boots: int, frames: int) -> Path:
    return forged_boots.write(tmp_path / f"forged-{boots}x{frames}.bin", boots, frames)


def same_report(path: Path, sizes: tuple[int, ...] = (1 << 20, 4093)) -> dict[str, Any]:
    """The whole capture's report, checked the same streamed in these chunk sizes."""
    data = path.read_bytes()
    whole = link_stats(np.frombuffer(data, np.uint8), read_rx_times(path.with_suffix(".rxt")))
    for size in sizes:
        streamed = host_stats(lambda s=size: chunks(data, s), path.with_suffix(".rxt"))
        assert dumps(streamed) == dumps(whole), size
    return whole


def test_more_boots_with_a_hub_rate_than_listed_are_counted_and_the_first_listed(
    tmp_path: Path,
) -> None:
    """Nine hub frames a boot: a hub-against-host fit each, once a rate each in the report."""
    n = LISTED + 150
    path = forged(tmp_path, n, 9)
    report = same_report(path)
    assert list(report["hub_vs_host_ppm"]) == [str(b) for b in range(LISTED)]
    assert list(report["hub_vs_host_uncertainty_ppm"]) == [str(b) for b in range(LISTED)]
    assert report["hub_vs_host_count"] == n and report["hub_vs_host_listed"] == LISTED
    assert sum(f"first {LISTED} boots" in note for note in report["notes"]) == 1
    text = io.StringIO()
    _text(report, text)
    assert f"the first {LISTED} of {n} boots shown" in text.getvalue()
    done = cli("stats", "--json", str(path))
    assert done.stdout == dumps(report) + "\n" and done.stderr == ""


def test_boots_under_the_cap_have_no_count_of_their_own(tmp_path: Path) -> None:
    report = same_report(forged(tmp_path, 5, 9))
    assert len(report["hub_vs_host_ppm"]) == 5 and "hub_vs_host_count" not in report
    assert "hub_vs_host_listed" not in report
    assert not any("boots (" in note for note in report["notes"])


@pytest.mark.parametrize(("boots", "frames"), [(3000, 1), (2000, 3), (300, 10)])
def test_forged_boots_report_the_same_streamed(tmp_path: Path, boots: int, frames: int) -> None:
    """HELLOs alone; HELLO, HEARTBEAT and CLOCK_SYNC; and ten frames, a drift window a boot."""
    report = same_report(forged(tmp_path, boots, frames), sizes=(1 << 20, 4093, 997))
    assert report.get("reboots_count", len(report["reboots"])) == boots - 1
    if frames == 10:
        assert report["nodes"]["3"]["clock"]["windows"]


@pytest.mark.parametrize("cap", [5, 10_000])
def test_drift_windows_of_ended_boots_report_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int
) -> None:
    """A drift window a boot: a listed window's row takes its boot's rate once the boot has
    ended (kept only for the boots of listed windows), the rest only count."""
    for module in ("linkstats", "statstream"):
        monkeypatch.setattr(f"firmware_host.linktools.{module}.WINDOWS_LISTED", cap)
    clock = same_report(forged(tmp_path, 300, 10), sizes=(1 << 20, 997))["nodes"]["3"]["clock"]
    assert len(clock["windows"]) == min(cap, 300)
    assert clock.get("windows_count") == (300 if cap < 300 else None)


def test_boots_spilled_to_disk_report_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each boot's frame count and latency envelope go to a temporary file a block at a time
    (a block of 7 records here, 16 384 in use): read back, the same report."""
    from firmware_host.linktools import spill

    monkeypatch.setattr(spill, "BLOCK", 7)
    same_report(forged(tmp_path, 400, 9))


def test_a_crowded_percentile_is_narrowed_not_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three frames a boot put two of every three latencies at 0: past half a million boots
    the 0 µs bucket held more than ranks.MAX_KEPT values and stats read the whole capture.
    With room for 50 values here, the buckets are narrowed in passes of their own."""
    monkeypatch.setattr(ranks, "MAX_KEPT", 50)
    same_report(forged(tmp_path, 2000, 3))


def test_percentiles_narrowed_in_any_room_are_numpys() -> None:
    """Many equal values, many within one µs, spread ones: the same figures whatever room
    the kept values have, in at most four narrowing passes more."""
    rng = np.random.default_rng(29)
    for trial in range(120):
        n = int(rng.integers(1, 4000))
        values = rng.exponential(rng.choice([0.002, 1.0, 3000.0]), n) - 0.0005
        if trial % 3 == 1:
            values = np.where(rng.random(n) < 0.7, 0.0, rng.uniform(0, 1e-3, n))
        elif trial % 3 == 2:
            values = rng.uniform(2e-4, 3e-4, n)
        for room in (ranks.MAX_KEPT, 40, 0):
            r, passes = ranks.Ranks(), 0
            for part in np.array_split(values, 3):
                r.count(part)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(ranks, "MAX_KEPT", room)
                while not r.settle():
                    passes += 1
                    for part in np.array_split(values, 2):
                        r.take(part)
            assert r.percentiles().tolist() == np.percentile(values, [50, 95, 100]).tolist()
            assert passes <= 5, (trial, room, passes)


#: a command's own peak RSS (KiB), measured by a small process that starts it
OWN_PEAK = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "print(os.wait4(p.pid, 0)[2].ru_maxrss)"
)


def own_peak_mb(*argv: str) -> float:
    """Peak RSS of ``firmware-host ARGV`` as a process of its own, started by a small one: a
    child of this test process reads this process's RSS as its own when that is higher
    (Linux keeps the larger at exec; the captures made here took 200 MB)."""
    done = subprocess.run([sys.executable, "-c", OWN_PEAK, sys.executable, "-m", "firmware_host",
                           *argv], capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
    return int(done.stdout) * 1024 / MB


def test_peak_memory_does_not_grow_with_the_boots(tmp_path: Path) -> None:
    """Four times the forged boots, nine hub frames each with its .rxt, both several reads
    long: the same peak, where every boot kept its hub fit, its latency fit and their
    unwrappers (about 10 kB a boot: 272 and 572 MB on main).  A first run, not measured,
    loads what a kernel compiled after a source edit would add (about 60 MB)."""
    own_peak_mb("stats", "--json", str(forged(tmp_path, 50, 9)))
    peaks = {}
    for boots in (10_000, 40_000):  # 2.1 and 8.5 MB: 178 and 184 MB
        peaks[boots] = own_peak_mb("stats", "--json", str(forged(tmp_path, boots, 9)))
    assert peaks[40_000] - peaks[10_000] < 15, peaks
