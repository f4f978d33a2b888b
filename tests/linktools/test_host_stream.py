"""`stats` of a recording with host receive times (.rxt) streams (linktools/hoststream.py):
the whole-capture report (`link_stats`), byte for byte, as JSON and as text, read in any
chunks; what cannot stream falls back to it with one line on stderr; and its peak
memory does not grow with the recording (issue 29: 6.9 GB on 1 GB)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proc_util import run_cli as cli
from test_link_timing import joined, write
from test_stats_stream import MB, chunks, peak_rss_mb

from firmware_host.commands.stats import WHOLE_WAY_MAX, _text
from firmware_host.jsonout import dumps
from firmware_host.link.recorder import RX_TIMES_DTYPE, read_rx_times
from firmware_host.linktools.envelope import Envelope
from firmware_host.linktools.hoststream import host_stats
from firmware_host.linktools.linkstats import link_stats
from firmware_host.linktools.ranks import Ranks
from firmware_host.timing.clock_model import envelope_line

pytestmark = pytest.mark.wall_s(150)  # alone, on an idle core: run first (conftest.py)

FAULTS = "stall@40-43,garbage@60,drop@80,reboot@100,forge-cue@70"


def whole_report(path: Path) -> dict[str, Any]:
    capture = np.frombuffer(path.read_bytes(), np.uint8)
    return link_stats(capture, read_rx_times(path.with_suffix(".rxt")))


def streamed(path: Path, size: int) -> dict[str, Any]:
    data = path.read_bytes()
    return host_stats(lambda: chunks(data, size), path.with_suffix(".rxt"))


def same_report(path: Path, sizes: tuple[int, ...] = (1 << 20, 65536, 9973)) -> dict[str, Any]:
    whole = whole_report(path)
    for size in sizes:
        assert dumps(streamed(path, size)) == dumps(whole), (path.name, size)
    return whole


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three virtual minutes with the receive times of a perfect host, and with faults (a
    stall, garbage, a lost frame, a reboot, a forged cue frame, a cue clock out of spec)."""
    out = tmp_path_factory.mktemp("host")
    for name, extra in (("match", ()), ("faulty", ("--faults", FAULTS, "--clock-ppm", "3=140"))):
        capture = out / f"{name}.bin"
        done = cli("simulate", "--capture", str(capture), "--rx-times",
                   str(capture.with_suffix(".rxt")), "--minutes", "3", "--seed", "5", *extra)  # fmt: skip
        assert done.returncode == 0, done.stderr
    match = out / "match.bin"
    return {"dir": out, "data": match.read_bytes(), "rx": read_rx_times(match.with_suffix(".rxt"))}


def made(table: dict[str, Any], name: str) -> Path:
    """The recordings test_link_timing.py reads with care: played at 10x, joined mid-stream
    (its .rxt a little out of order, as built there, and in order), the pty's 64 KiB join,
    a recorder started mid-stream, a capture cut inside a frame."""
    data, rx, out = table["data"], table["rx"], table["dir"]
    if name == "x10":
        rx = rx.copy()
        late = np.random.default_rng(1).exponential(200_000, len(rx)).astype(np.int64)
        rx["host_rx_ns"] = np.maximum.accumulate(rx["host_rx_ns"] // 10 + late)
    elif name.startswith("join"):
        data, rx, _ = joined(table, held=65536 if name == "join64k" else None)
        if name == "join_in_order":
            rx = rx.copy()
            rx["host_rx_ns"] = np.maximum.accumulate(rx["host_rx_ns"])
    elif name == "prompt":
        data, _, _ = joined(table)
        start = len(table["data"]) - len(data)
        rx = rx[rx["offset"] >= start].copy()
        rx["offset"] -= start
        rx = np.concatenate((np.array([(0, rx["host_rx_ns"][0] - 1)], RX_TIMES_DTYPE), rx))
    elif name == "cut":
        data = data[: data.rindex(b"\x00", 0, len(data) - 1) + 10]
    return write(out / f"{name}.bin", data, rx)


@pytest.mark.parametrize("name", ["x10", "join", "join_in_order", "join64k", "prompt", "cut"])
def test_recordings_read_with_care_report_the_same(table: dict[str, Any], name: str) -> None:
    report = same_report(made(table, name))
    assert report["clock"] == "host"
    if name.startswith("join"):
        assert report["backlog_frames"] > 0
    if name == "x10":
        assert report["speed"] == 10


def test_a_faulty_recording_reports_the_same(table: dict[str, Any]) -> None:
    report = same_report(table["dir"] / "faulty.bin")
    assert len(report["reboots"]) == 1 and report["nodes"]["3"]["latency"]["max_ms"] > 0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A part `run --record` wrote: the built-in table at 10x, a hub reboot, a lost frame
    (its hub stamps are a few ms out of order here and there, as a real hub's are)."""
    out = tmp_path_factory.mktemp("rec")
    done = cli("run", "--virtual", "--minutes", "2", "--speed", "10", "--seed", "3",
               "--faults", "reboot@60,drop@30", "--record", str(out), timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (part,) = out.glob("capture-*.bin")
    return part


def test_a_run_record_part_reports_the_same_on_the_command_line(recorded: Path) -> None:
    whole = same_report(recorded)
    assert whole["speed"] == 10 and len(whole["reboots"]) == 1
    done = cli("stats", "--json", str(recorded))
    assert done.stdout == dumps(whole) + "\n" and done.stderr == ""
    text = io.StringIO()
    _text(whole, text)
    done = cli("stats", str(recorded))
    assert done.stdout == text.getvalue() and done.stderr == ""


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(size=st.integers(2000, 1 << 20))
def test_any_chunk_size_reports_the_same(table: dict[str, Any], size: int) -> None:
    path = table["dir"] / "faulty.bin"
    assert dumps(streamed(path, size)) == dumps(whole_report(path))


def test_what_cannot_stream_takes_the_whole_way_with_one_line(
    table: dict[str, Any], tmp_path: Path
) -> None:
    """An .rxt whose offsets go back (no recorder writes one): the whole capture's report."""
    rx = table["rx"].copy()
    rx["offset"][[100, 101]] = rx["offset"][[101, 100]]
    path = write(tmp_path / "back.bin", table["data"], rx)
    done = cli("stats", "--json", str(path))
    assert done.stdout == dumps(whole_report(path)) + "\n"
    assert done.stderr == "stats: back.rxt: the .rxt's offsets go back: reading the whole capture\n"


def test_a_big_capture_beside_a_rxt_that_cannot_stream_is_reported_without_host_times(
    table: dict[str, Any], tmp_path: Path
) -> None:
    """The whole-capture way holds about 5 bytes a byte of capture: beside a gigabyte, a
    hostile .rxt would cost gigabytes. Over WHOLE_WAY_MAX the capture is the plain stats',
    in the plain stats' memory, and one line says why."""
    rx = table["rx"].copy()
    rx["offset"][[100, 101]] = rx["offset"][[101, 100]]
    data = table["data"] + bytes(WHOLE_WAY_MAX)  # zeros: no frame, skipped as noise
    path = write(tmp_path / "back.bin", data, rx)
    plain = tmp_path / "plain.bin"
    plain.write_bytes(data)
    done = cli("stats", "--json", str(path))
    assert done.stdout == cli("stats", "--json", str(plain)).stdout
    assert done.stderr == (
        "stats: back.rxt: the .rxt's offsets go back: host times not read"
        f" (the whole-capture way is for captures up to {WHOLE_WAY_MAX >> 20} MB)\n"
    )
    assert peak_rss_mb("stats", str(path)) < peak_rss_mb("stats", str(plain)) + 10


@pytest.mark.parametrize("kind", ["a directory", "a FIFO"])
def test_a_rxt_that_is_no_file_is_one_line_and_the_capture_still_reported(
    table: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    """A directory made a traceback, a FIFO would hang the read: the capture is reported as
    one without host times, and one line says why."""
    path = tmp_path / "odd.bin"
    path.write_bytes(table["data"])
    if kind == "a directory":
        path.with_suffix(".rxt").mkdir()
    else:
        os.mkfifo(path.with_suffix(".rxt"))
    done = cli("stats", "--json", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == dumps(link_stats(np.frombuffer(table["data"], np.uint8))) + "\n"
    assert done.stderr == f"stats: odd.rxt: {kind}: host times not read\n"


def test_every_pass_reads_the_capture_as_it_was_when_stats_began(tmp_path: Path) -> None:
    """A daemon appends to the part being read: five passes must see the same bytes."""
    from firmware_host.commands.stats import as_it_was

    path = tmp_path / "part.bin"
    path.write_bytes(bytes(range(256)) * 9000)
    read = as_it_was(str(path))
    with path.open("ab") as daemon:
        daemon.write(b"\x01\x02\x00" * 1000)
    assert b"".join(read()) == bytes(range(256)) * 9000


@pytest.mark.parametrize("merge", [False, True])
def test_an_envelope_fed_in_chunks_is_the_whole_one(merge: bool) -> None:
    """Samples at shared x (frames read in one chunk), collinear runs, a single x."""
    from firmware_host.linktools.drift import envelope_slope

    rng = np.random.default_rng(7)
    whole: Callable[[np.ndarray, np.ndarray], tuple[float, float]] = (
        envelope_slope if merge else lambda x, y: envelope_line(x - x[0], y)
    )
    for trial in range(300):
        n = int(rng.integers(1, 400))
        x = np.sort(rng.integers(0, max(2, n // 3), n)).astype(np.float64) * 1.7
        y = rng.choice([0.0, 1.0, -2.5], n) + (x * 0.001 if trial % 2 else 0.0)
        if not merge and len(np.unique(x)) < 2:
            continue
        fit = Envelope(merge)
        for part in np.array_split(np.arange(n), int(rng.integers(1, 6))):
            assert fit.feed(x[part], y[part])
        assert fit.line() == tuple(float(v) for v in whole(x, y)), trial


def test_an_envelope_keeps_its_hull_not_its_samples() -> None:
    """A clock's samples fed a minute at a time (a node's fit per boot, kept to the end of a
    long capture) leave a few points; a hull of every sample (a concave run) grows as it
    must, and is still the whole fit's.  A buffer grown to each feed's samples kept 1.2 MB
    a hub boot (issue 29: 215 MB on the bench's 1 GB, 183 MB on 100 MB)."""
    rng = np.random.default_rng(11)
    x = np.arange(200_000) * 1000.0
    y = rng.normal(0, 30, len(x)) - x * 3e-5  # a clock 30 ppm slow, µs of jitter
    fit = Envelope(merge=True)
    for part in np.array_split(np.arange(len(x)), 20):
        assert fit.feed(x[part], y[part])
    assert len(fit.hx) <= 64
    concave = -((x[:5000] - 2.5e6) ** 2) * 1e-9
    fit = Envelope(merge=False)
    for part in np.array_split(np.arange(5000), 9):
        assert fit.feed(x[part], concave[part])
    assert len(fit.hx) >= 5000 and fit.line() == envelope_line(x[:5000], concave)


def test_samples_out_of_order_reach_the_fit_in_order() -> None:
    """A busy node's late resends (older stamps, within a minute) and a node heard a few
    times an hour, whose unwrapped stamps step back by half an hour (the bench's 116-minute
    match: it fell back to the whole capture)."""
    from firmware_host.linktools.drift import envelope_slope
    from firmware_host.linktools.envelope import REORDER_KEEP, Reorder

    rng = np.random.default_rng(5)
    busy = np.arange(3 * REORDER_KEEP) * 10_000.0 + rng.integers(0, 3, 3 * REORDER_KEEP) * 1e6
    sparse = np.array([7.0e9, 7.07e9, 5.1e9, 7.2e9, 5.3e9, 7.26e9])
    for x in (busy, sparse):
        y = rng.normal(0, 50, len(x)) - x * 2e-5
        fit = Envelope(merge=True)
        order = Reorder(fit.feed)
        for part in np.array_split(np.arange(len(x)), 7):
            order.add(x[part], y[part])
        order.flush()
        assert fit.line() == envelope_slope(x, y)


def test_percentiles_from_buckets_are_numpys() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 5000))
        values = rng.exponential(rng.choice([0.002, 1.0, 40.0, 3000.0]), n) - 0.0005
        if trial % 3 == 0:
            values = np.round(values, 3)  # many at one value
        ranks = Ranks()
        for part in np.array_split(values, 4):
            ranks.count(part)
        assert not ranks.settle()  # the wanted buckets' values: kept in one pass more
        for part in np.array_split(values, 3):
            ranks.take(part)
        assert ranks.settle()
        assert ranks.percentiles().tolist() == np.percentile(values, [50, 95, 100]).tolist()


def test_peak_memory_does_not_grow_with_the_recording(tmp_path: Path) -> None:
    sizes = {}
    for minutes in (6, 70):  # about 5 and 40 MB of a full-sensor table, each with its .rxt
        path = tmp_path / f"{minutes}.bin"
        done = cli("simulate", "--capture", str(path), "--rx-times", str(path.with_suffix(".rxt")),
                   "--minutes", str(minutes), "--seed", "2", "--truth", os.devnull)  # fmt: skip
        assert done.returncode == 0, done.stderr
        sizes[minutes] = (path.stat().st_size / MB, peak_rss_mb("stats", str(path)))
    (small_mb, small), (big_mb, big) = sizes[6], sizes[70]
    assert big_mb > 35 and big_mb > 7 * small_mb, sizes
    # the whole capture's way grew by 7 bytes a byte of capture (+270 MB here)
    assert big - small < 15, sizes
