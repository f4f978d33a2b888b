"""`stats` streams its capture (linktools/statstream.py): the report of the whole-capture
computation, byte for byte, read in any chunks; and its peak memory does not grow with
the capture (issue 29: 478 MB on 75 MB, 6.9 GB on 1 GB)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from proc_util import run_cli as cli
from test_text_lines import marked_stream

from firmware_host.jsonout import dumps
from firmware_host.linktools.linkstats import link_stats
from firmware_host.linktools.statstream import stream_stats
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(20)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "hil_tests" / "corpus"
FAULTS = "stall@40-43,garbage@60,drop@80,reboot@100,forge-cue@70"
MB = 1_000_000


def chunks(data: bytes, size: int) -> Iterator[bytes]:
    return (data[at : at + size] for at in range(0, len(data), size))


def same_report(data: bytes, sizes: tuple[int, ...] = (1 << 20, 4096, 997)) -> None:
    whole = dumps(link_stats(np.frombuffer(data, np.uint8)))
    for size in sizes:
        assert dumps(stream_stats(lambda s=size: chunks(data, s))) == whole, size


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Three minutes with a stall, garbage, a lost frame, a reboot, resends and a cue
    clock out of its datasheet (no .rxt: the hub's clock)."""
    path = tmp_path_factory.mktemp("faulty") / "faulty.bin"
    done = cli("simulate", "--capture", str(path), "--minutes", "3", "--seed", "5",
               "--faults", FAULTS, "--clock-ppm", "3=140")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path.read_bytes()


def test_a_faulty_capture_reports_the_same_in_any_chunks(faulty: bytes) -> None:
    same_report(faulty)
    report = stream_stats(lambda: chunks(faulty, 4096))
    texts = " ".join(p["text"] for p in report["problems"])
    for words in ("bad frame", "hub rebooted 1 time", "lost (seq gaps)", "dropped for lack"):
        assert words in texts, words
    assert report["conflicts"] == {"cue": 1}  # the forged frame
    cue = report["nodes"]["3"]["clock"]
    assert len(cue["windows"]) >= 2 and 100 < cue["ppm"] < 180  # +140 against the hub's ±50


@pytest.mark.parametrize(
    "name", ["random_s1_0.5min.full.bin", "break_12_1_2.middle.bin", "push.minimum.bin"]
)
def test_corpus_captures_report_the_same(name: str) -> None:
    same_report((CORPUS / name).read_bytes())


def test_marks_joins_cut_frames_and_conflicts_report_the_same() -> None:
    """Gaps filled by late resends, a restart, a seq conflict, a reboot, a capture that
    starts inside a frame and ends inside one."""
    marks = marked_stream()
    beat = {"uptime_s": 5, "nodes_ok": 255, "rx_bad": 2, "tx_dropped": 3, "indicator": 0}
    beats = b"".join(encode_frame("HEARTBEAT", node=0, seq=s, t_us=s * 1_000_000, **beat)
                     for s in range(1, 9))  # fmt: skip
    same_report(marks[5:] + beats + marks + b"\x07\x01\x02", sizes=(1 << 20, 7, 64))


def test_stats_reads_stdin_as_a_file(faulty: bytes, tmp_path: Path) -> None:
    path = tmp_path / "faulty.bin"
    path.write_bytes(faulty)
    from_file = cli("stats", str(path))
    from_stdin = subprocess.run([sys.executable, "-m", "firmware_host", "stats", "-"],
                                input=faulty, capture_output=True, check=False)  # fmt: skip
    assert from_stdin.stdout.decode() == from_file.stdout and from_stdin.returncode == 1


def peak_rss_mb(*argv: str) -> float:
    """Peak RSS of a command as its own process (its ``ru_maxrss``), stdout to nowhere."""
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "firmware_host", *argv], stdout=sink)
        _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 1)
    return usage.ru_maxrss * 1024 / MB


def test_peak_memory_does_not_grow_with_the_capture(tmp_path: Path) -> None:
    sizes = {}
    for minutes in (6, 70):  # about 5 and 40 MB of a full-sensor table
        path = tmp_path / f"{minutes}.bin"
        done = cli("simulate", "--capture", str(path), "--minutes", str(minutes), "--seed", "2",
                   "--truth", os.devnull)  # fmt: skip
        assert done.returncode == 0, done.stderr
        sizes[minutes] = (path.stat().st_size / MB, peak_rss_mb("stats", str(path)))
    (small_mb, small), (big_mb, big) = sizes[6], sizes[70]
    assert big_mb > 35 and big_mb > 7 * small_mb, sizes  # the capture grew eightfold ...
    # ... the peak by a few MB (the decoder's own reads: the events command's grow alike),
    # where the whole capture's grew by 7 bytes a byte (+270 MB)
    assert big - small < 12, sizes
