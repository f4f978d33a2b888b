"""`stats` on recordings whose host times need reading with care (issue 30), each built here
from a virtual-table capture and the receive times a perfect host would have recorded:

* played at 10x (the built-in table's pace for `run --record`): said, and scaled;
* joined mid-stream: the backlog read at once, not taken for latency or drift;
* cut at its end: a problem, unless the next part holds the rest.

Every drift is checked against the crystal's true rate at its window's time (the virtual
clocks drift with temperature, ICD §7) and must lie within its printed uncertainty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_util import run_cli as cli

from firmware_host.link.recorder import RX_TIMES_DTYPE, read_rx_times
from firmware_host.virtual_table.capture import load_frame_truth

SPEED = 10
JOIN_S, BACKLOG_S = 60.0, 25.0  # the host opens the port 60 s in; 25 s had queued


def stats(capture: Path, status: int = 0) -> dict[str, Any]:
    done = cli("stats", "--json", str(capture))
    assert done.returncode == status, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 3-minute virtual match: its bytes, perfect receive times and its clocks."""
    out = tmp_path_factory.mktemp("timing")
    capture = out / "match.bin"
    done = cli("simulate", "--capture", str(capture), "--rx-times", str(out / "match.rxt"),
               "--frame-truth", str(out / "match.npz"), "--minutes", "3", "--seed", "5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    _, clocks = load_frame_truth(out / "match.npz")
    return {"data": capture.read_bytes(), "rx": read_rx_times(out / "match.rxt"), "clocks": clocks}


def write(path: Path, data: bytes, rx: np.ndarray) -> Path:
    path.write_bytes(data)
    rx.astype(RX_TIMES_DTYPE).tofile(path.with_suffix(".rxt"))
    return path


def true_ppm(clocks: dict[str, Any], node: int, host_s: float) -> float:
    """A crystal's rate against true time at ``host_s`` (the perfect host's clock)."""
    boot_s = float(clocks["boot_s"][0])
    return float(
        clocks["clock_ppm"][node] + clocks["clock_drift_ppm_per_s"][node] * (host_s - boot_s)
    )


def assert_drifts_within_their_uncertainty(
    report: dict[str, Any], clocks: dict[str, Any], t0_s: float
) -> None:
    """Every window of every node (against the host), t0_s: the host time of the report's 0."""
    checked = 0
    for node, entry in report["nodes"].items():
        for t_s, _, ppm, unc in entry.get("clock", {}).get("windows", []):
            truth = true_ppm(clocks, int(node), t0_s + t_s)
            assert abs(ppm - truth) <= unc, (node, t_s, ppm, unc, truth)
            assert unc < 2.0, (node, unc)  # an uncertainty that says something
            checked += 1
        if "clock" in entry:
            assert entry["clock"]["reference"] == "host"
    assert checked >= 7 * 2  # every node, more than one window each


def test_a_recording_played_at_10x_says_so_and_is_scaled(
    table: dict[str, Any], tmp_path: Path
) -> None:
    """The host saw the hub's 3 minutes in 18 s, each chunk up to 1 ms late (its scheduler)."""
    rx = table["rx"].copy()
    late = np.random.default_rng(1).exponential(200_000, len(rx)).astype(np.int64)
    rx["host_rx_ns"] = np.maximum.accumulate(rx["host_rx_ns"] // SPEED + late)
    report = stats(write(tmp_path / "x10.bin", table["data"], rx))
    assert report["speed"] == SPEED and report["problems"] == []
    assert any("a table played at 10x" in note for note in report["notes"])
    true_span = np.ptp(table["rx"]["host_rx_ns"]) / 1e9
    assert report["span_s"] == pytest.approx(true_span, abs=1)  # the table's time, not the host's
    hub_ppm = report["hub_vs_host_ppm"]["0"]
    assert hub_ppm == pytest.approx(true_ppm(table["clocks"], 0, 90), abs=1)  # not +9 000 000
    assert_drifts_within_their_uncertainty(
        report, table["clocks"], table["rx"]["host_rx_ns"][0] / 1e9
    )
    for entry in report["nodes"].values():
        if "latency" in entry:
            assert entry["latency"]["p95_ms"] < 50


def joined(table: dict[str, Any], held: int | None = None) -> tuple[bytes, np.ndarray, float]:
    """The capture a host makes that opens the port at JOIN_S while the hub has been writing
    since JOIN_S - BACKLOG_S: its first bytes (from mid-frame) all read at once, in 4 KiB
    reads 0.2 ms apart, then each chunk when it comes.  ``held``: the port held only that
    many bytes and the hub dropped the rest of the backlog (a pty's buffer, 64 KiB).
    Returns (bytes, .rxt, the true time of the capture's first byte)."""
    rx, data = table["rx"], table["data"]
    first = int(np.searchsorted(rx["host_rx_ns"], (JOIN_S - BACKLOG_S) * 1e9))
    start = int(rx["offset"][first]) + 7  # inside a frame
    queued = rx["host_rx_ns"] < JOIN_S * 1e9
    live = int(np.flatnonzero(~queued)[0])
    end = int(rx["offset"][live])  # the first byte read as it came
    # a full port takes no more writes: what it held ends where a write (a frame) ended
    kept = (
        data[start:end] if held is None else data[start : data.rindex(0, start, start + held) + 1]
    )
    burst = [(o, int(JOIN_S * 1e9) + 200_000 * i) for i, o in enumerate(range(0, len(kept), 4096))]
    after = rx[live:].copy()
    after["offset"] = after["offset"].astype(np.int64) + len(kept) - end
    out = np.concatenate((np.array(burst, RX_TIMES_DTYPE), after))
    return kept + data[end:], out, float(rx["host_rx_ns"][first]) / 1e9


def test_a_join_mid_stream_keeps_the_backlog_out_of_latency_and_drift(
    table: dict[str, Any], tmp_path: Path
) -> None:
    data, rx, t0 = joined(table)
    report = stats(write(tmp_path / "join.bin", data, rx))
    assert report["problems"] == []  # the partial first frame is no bad frame either
    notes = " | ".join(report["notes"])
    assert "the host joined mid-frame" in notes and "joined a running hub" in notes
    backlog = float(notes.split("frames (")[1].split(" s of hub time")[0])
    assert backlog == pytest.approx(BACKLOG_S, abs=1.0)
    assert report["bad"] == {}
    for entry in report["nodes"].values():
        if "latency" in entry:
            assert entry["latency"]["p95_ms"] < 50  # was 23 s, the backlog's wait
    assert_drifts_within_their_uncertainty(report, table["clocks"], t0)


def test_what_the_hub_dropped_while_nobody_read_is_no_link_fault(
    table: dict[str, Any], tmp_path: Path
) -> None:
    """The README's practice flow on a pty: the port held 64 KiB, the hub dropped the rest of
    what nobody read.  Its seq gaps and its silence are at the join, said in a note."""
    data, rx, t0 = joined(table, held=65536)
    report = stats(write(tmp_path / "join64k.bin", data, rx))
    assert report["problems"] == []
    note = next(n for n in report["notes"] if n.startswith("before the join nobody read"))
    assert "seq gaps at the join (node 0 (hub)" in note
    assert sum(e["lost_at_join"] for e in report["nodes"].values()) > 1000
    assert all(e["lost"]["count"] == 0 for e in report["nodes"].values())
    assert report["nodes"]["0"]["types"]["HEARTBEAT"]["max_gap_s"] > 15  # the silence is shown
    assert_drifts_within_their_uncertainty(report, table["clocks"], t0)


def test_a_capture_from_mid_stream_read_as_it_came_has_no_backlog(
    table: dict[str, Any], tmp_path: Path
) -> None:
    """The negative case: the same bytes with the times they really came at (a recorder
    started mid-stream while the host was reading all along): nothing had queued."""
    data, _, _ = joined(table)
    start = len(table["data"]) - len(data)
    rx = table["rx"][table["rx"]["offset"] >= start].copy()
    rx["offset"] -= start
    rx = np.concatenate((np.array([(0, rx["host_rx_ns"][0] - 1)], RX_TIMES_DTYPE), rx))
    report = stats(write(tmp_path / "prompt.bin", data, rx))
    assert report["backlog_frames"] == 0
    assert not any("joined a running hub" in note for note in report["notes"])


def test_a_cut_tail_is_a_problem(table: dict[str, Any], tmp_path: Path) -> None:
    data = table["data"]
    end = data.rindex(b"\x00", 0, len(data) - 1) + 1  # the last frame's start
    cut = data[: end + 9]  # nine bytes of it
    done = cli("stats", str(write(tmp_path / "cut.bin", cut, table["rx"])))
    assert done.returncode == 1
    assert (
        "the capture ends inside a frame: its last 9 bytes have no delimiter (cut)" in done.stdout
    )
    assert "no problems found" not in done.stdout


def test_a_part_cut_at_its_end_continues_in_the_next(table: dict[str, Any], tmp_path: Path) -> None:
    data = table["data"]
    middle = data.index(b"\x00", len(data) // 2) + 5
    first = tmp_path / "capture-20261202-140000-0001.bin"
    first.write_bytes(data[:middle])
    (tmp_path / "capture-20261202-140000-0002.bin").write_bytes(data[middle:])
    done = cli("stats", str(first))
    assert done.returncode == 0, done.stdout
    assert (
        "note: the capture ends inside a frame (4 bytes): the next part holds the rest"
        in done.stdout
    )
