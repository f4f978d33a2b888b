"""``monitor``'s clocks and counts where they were wrong (issue 30), on captures built here:

* a cue at +180 ppm shows +180 (the fit was clamped at the datasheet's 157.5), flagged;
* nodes heard only in CLOCK_SYNC (pockets, keypad) get a row;
* a sparse row reads its rate (a key press every 20 s is 0.05 Hz, not 0.00);
* the partial frame a join starts inside is not a bad frame;
* every drift is within its printed uncertainty of the truth: on a capture, on a 10x
  recording played at its recorded pace, on a join.

The truth is the virtual table's: each crystal's rate at the capture's end (they drift with
temperature, ICD §7), node against hub.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_util import run_cli as cli
from rich.console import Console
from test_monitor import MONITOR, terminal

from firmware_host.link.recorder import read_rx_times
from firmware_host.linkwatch.monitor_app import ViewState, render
from firmware_host.linkwatch.player import CapturePlayer
from firmware_host.linkwatch.tally import LinkTally, Snapshot
from firmware_host.virtual_table.capture import load_frame_truth
from protocol.catalogue import NODE_IDS
from protocol.framing import encode_frame

DRIFT_ROW = re.compile(
    r"^\s*(\w+)\s+(\d+)(?: !)?\s+(\d+)\s+[-\d.]+\s+([-+]\d+\.\d) ±(\d+\.\d)( !)?", re.MULTILINE
)


def simulate(out: Path, *extra: str, minutes: float = 1.0) -> tuple[Path, dict[str, Any]]:
    capture = out / "match.bin"
    done = cli("simulate", "--capture", str(capture), "--frame-truth", str(out / "match.npz"),
               "--rx-times", str(out / "match.rxt"), "--minutes", str(minutes), "--seed", "3",
               *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return capture, load_frame_truth(out / "match.npz")[1]


@pytest.fixture(scope="module")
def cue_180(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A minute of play with the hub's crystal exact and the cue's at +180 ppm."""
    out = tmp_path_factory.mktemp("cue180")
    return simulate(out, "--clock-ppm", "0=0", "--clock-ppm", "3=180")


def true_drift(clocks: dict[str, Any], node: int, t_s: float) -> float:
    """A node's rate against the hub's at true time ``t_s`` (ppm)."""
    boot_s = float(clocks["boot_s"][0])
    ppm = clocks["clock_ppm"] + clocks["clock_drift_ppm_per_s"] * (t_s - boot_s)
    return float((1 + ppm[node] * 1e-6) / (1 + ppm[0] * 1e-6) - 1) * 1e6


def assert_drifts_within_uncertainty(snap: Snapshot, clocks: dict[str, Any], t_s: float) -> None:
    shown = {h.node: h for h in snap.nodes if h.drift_ppm is not None}
    assert set(shown) == set(range(1, 8)), shown  # every node's clock, sensors or not
    for node, h in shown.items():
        truth = true_drift(clocks, node, t_s)
        assert h.drift_uncertainty_ppm is not None
        assert abs(h.drift_ppm - truth) <= h.drift_uncertainty_ppm, (node, h, truth)


def fed(data: bytes, chunk: int = 4096) -> LinkTally:
    tally = LinkTally()
    for i in range(0, len(data), chunk):
        tally.feed(data[i : i + chunk], i)
    return tally


def test_the_monitor_shows_a_cue_at_180_ppm_and_a_row_for_every_clock(
    cue_180: tuple[Path, dict[str, Any]],
) -> None:
    capture, clocks = cue_180
    with terminal([*MONITOR, str(capture), "--speed", "30"]) as term:
        screen = term.wait_for_still(lambda s: "capture ended" in s)
        term.keys("q")
        term.wait_for(lambda s: "exit status 0" in s, 10)
    rows = {m[1]: m for m in DRIFT_ROW.finditer(screen.split("nodes (")[1])}
    assert {"pockets", "keypad"} <= set(rows), screen  # heard only in CLOCK_SYNC
    messages = screen.split("nodes (")[0]
    assert not re.search(r"^\s*(pockets|keypad)\s", messages, re.MULTILINE)  # no frame of theirs
    cue = rows["cue"]
    drift, unc = float(cue[4]), float(cue[5])
    assert abs(drift - true_drift(clocks, 3, 60)) <= unc and cue[6] == " !", cue[0]
    assert abs(drift - 180) < 2  # was clamped at +157.5
    for name, row in rows.items():
        if name != "cue":
            node = NODE_IDS[name]
            assert abs(float(row[4]) - true_drift(clocks, node, 60)) <= float(row[5]), row[0]
            assert row[6] is None  # within the datasheet


def test_a_10x_recording_played_at_its_pace_and_a_join(
    cue_180: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    capture, clocks = cue_180
    data, rx = capture.read_bytes(), read_rx_times(capture.with_suffix(".rxt"))
    fast = rx.copy()
    fast["host_rx_ns"] //= 10  # what `run --record` of the built-in table (10x) writes
    recording = tmp_path / "x10.bin"
    recording.write_bytes(data)
    fast.tofile(recording.with_suffix(".rxt"))
    tally = LinkTally()
    player = CapturePlayer(str(recording), tally, 5.0)  # 6 s of recording in about 1 s
    player.start()
    assert player.finished.wait(60)
    player.stop()
    end_s = float(rx["host_rx_ns"][-1]) / 1e9
    assert_drifts_within_uncertainty(tally.snapshot(), clocks, end_s)

    start = data.index(b"\x00", len(data) // 3) - 11  # a join, 11 bytes before a delimiter
    joined = fed(data[start:]).snapshot()
    assert joined.joined_bytes == 11 and joined.bad == {}
    assert_drifts_within_uncertainty(joined, clocks, end_s)


def test_the_partial_frame_at_a_join_is_no_bad_frame() -> None:
    keypad = encode_frame("KEYPAD", seq=1, t_us=5, key=1, arg=0)
    snap = fed(keypad[6:] + keypad).snapshot()  # joined six bytes into a frame
    assert snap.joined_bytes == len(keypad) - 7 and snap.bad == {} and snap.frames == 1
    screen = _screen(snap)
    assert (
        "bad frames: none" in screen and f"joined mid-frame: the first {len(keypad) - 7}" in screen
    )
    # the negative case: the same bytes after a delimiter are a frame, and a bad one
    snap = fed(b"\x00" + keypad[6:] + keypad).snapshot()
    assert snap.joined_bytes == 0 and sum(snap.bad.values()) == 1


def _screen(snap: Snapshot) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(snap, ViewState("test"), 200))
    return out.getvalue()


def test_a_sparse_row_reads_its_rate() -> None:
    """A key press every 20 s of the keypad's clock: 0.05 Hz, '-' before the second one,
    and 0 once silent for three of its intervals."""
    presses = [encode_frame("KEYPAD", seq=i, t_us=20_000_000 * i, key=1, arg=0) for i in range(5)]
    tally = LinkTally()
    tally.feed(presses[0], 0)
    (row,) = tally.snapshot().rows
    assert row.rate_hz is None and re.search(
        r"keypad\s+KEYPAD\s+1\s+-\s", _screen(tally.snapshot())
    )
    for i, press in enumerate(presses[1:], 1):
        tally.feed(press, i * 20_000_000_000)  # the source clock: one press each 20 s
    (row,) = tally.snapshot().rows
    assert row.rate_hz == pytest.approx(0.05)
    assert re.search(r"keypad\s+KEYPAD\s+5\s+0\.05\s", _screen(tally.snapshot()))
    assert tally.snapshot(now_ns=4 * 20_000_000_000 + 59_000_000_000).rows[0].rate_hz > 0
    assert tally.snapshot(now_ns=4 * 20_000_000_000 + 61_000_000_000).rows[0].rate_hz == 0.0


def test_drift_uncertainty_covers_the_truth_as_the_stream_goes(
    cue_180: tuple[Path, dict[str, Any]],
) -> None:
    """At every quarter of the capture, not only at its end."""
    capture, clocks = cue_180
    data = capture.read_bytes()
    rx = read_rx_times(capture.with_suffix(".rxt"))
    for part in (0.25, 0.5, 0.75):
        cut = int(len(data) * part)
        t_s = float(rx["host_rx_ns"][np.searchsorted(rx["offset"], cut) - 1]) / 1e9
        assert_drifts_within_uncertainty(fed(data[:cut]).snapshot(), clocks, t_s)
