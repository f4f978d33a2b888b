"""Recording retention (issue 15.5): N days or N GB kept, oldest first, never the live part."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from proc_util import forked

from firmware_host.service.retention import DAY_S, prune

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_800_000_000.0


def parts(folder: Path, *specs: tuple[str, int, float]) -> list[Path]:
    """(name stem, bytes, age in days) -> a .bin part with a .rxt beside it."""
    made = []
    for stem, size, age in specs:
        bin_ = folder / f"capture-{stem}.bin"
        bin_.write_bytes(b"\0" * size)
        bin_.with_suffix(".rxt").write_bytes(b"\0" * 16)
        os.utime(bin_, (NOW - age * DAY_S, NOW - age * DAY_S))
        made.append(bin_)
    return made


DAYS = [("20260101-000000-0001", 1000, 40.0), ("20260115-000000-0001", 1000, 20.0)]
DAYS += [("20260201-000000-0001", 1000, 1.0)]

CASES = [
    # keep_days, keep_bytes, which of the three parts survive
    (None, None, [0, 1, 2]),
    (30.0, None, [1, 2]),  # older than 30 days: the first
    (50.0, None, [0, 1, 2]),  # twin: nothing that old
    (None, 2100, [1, 2]),  # 3 x 1016 bytes > 2100: the oldest goes
    (None, 3100, [0, 1, 2]),  # twin: it all fits
    (30.0, 1100, [2]),  # both bounds
]


@pytest.mark.parametrize(("keep_days", "keep_bytes", "kept"), CASES)
def test_prune_deletes_the_oldest_parts_beyond_either_bound(tmp_path, keep_days, keep_bytes, kept):
    made = parts(tmp_path, *DAYS)
    gone = prune(tmp_path, keep_days, keep_bytes, NOW)
    assert gone == [p for i, p in enumerate(made) if i not in kept]
    assert sorted(tmp_path.iterdir()) == sorted(
        x for i in kept for x in (made[i], made[i].with_suffix(".rxt"))
    )


def test_the_part_being_written_is_never_deleted(tmp_path):
    made = parts(tmp_path, *DAYS)
    gone = prune(tmp_path, 0.5, 10, NOW, writing=[made[2]])
    assert gone == made[:2] and made[2].exists()


def test_run_keeps_the_recordings_within_the_bound(tmp_path):
    (old,) = parts(tmp_path, ("20200101-000000-0001", 1_000_000, 2000.0))
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "run", "--scenario", "double_hit"]
        + ["--speed", "10", "--record", str(tmp_path), "--record-keep-gb", "0.0005"],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    time.sleep(0.1)
    left = sorted(p.name for p in tmp_path.glob("*.bin"))
    assert not old.exists() and len(left) == 1 and left[0].startswith("capture-20"), left
