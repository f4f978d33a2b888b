"""`stats` on virtual-table captures: every injected fault named with the right count and
offset (checked against the simulator's frame truth, not against the decoder), the clocks'
rates against their true crystals, and nothing named on a clean capture."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_util import run_cli as cli

from firmware_host.linktools.linkstats import link_stats
from firmware_host.virtual_table.capture import load_frame_truth
from firmware_host.virtual_table.sensors import DAMAGED
from protocol.catalogue import BY_NAME
from protocol.decoder import decode_capture
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(20)  # alone, on an idle core: run first (conftest.py)

FAULTS = "stall@40-43,garbage@60,drop@80,reboot@100"
HELLO, HEARTBEAT = BY_NAME["HELLO"].msg_type, BY_NAME["HEARTBEAT"].msg_type


def simulate(tmp: Path, name: str, *extra: str) -> tuple[Path, np.ndarray, dict[str, Any]]:
    capture = tmp / f"{name}.bin"
    done = cli("simulate", "--capture", str(capture), "--rx-times", str(capture.with_suffix(".rxt")),
               "--frame-truth", str(tmp / f"{name}.npz"), "--minutes", "3", "--seed", "5", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    frames, clocks = load_frame_truth(tmp / f"{name}.npz")
    return capture, frames, clocks


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, dict[str, Any]]:
    return simulate(tmp_path_factory.mktemp("clean"), "clean")


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, dict[str, Any]]:
    return simulate(tmp_path_factory.mktemp("faulty"), "faulty", "--faults", FAULTS,
                    "--clock-ppm", "3=140")  # fmt: skip


@pytest.fixture(scope="module")
def report(faulty: tuple[Path, np.ndarray, dict[str, Any]]) -> dict[str, Any]:
    done = cli("stats", "--json", str(faulty[0]))
    assert done.returncode == 1, done.stderr  # problems found
    return json.loads(done.stdout)


def problems(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["text"].partition(" (at offset")[0]: p for p in report["problems"]}


def expected_losses(truth: np.ndarray) -> dict[int, list[int]]:
    """Per node, the offset of the frame after each seq gap, from the frames the hub sent
    (a frame damaged on the wire is lost too)."""
    sent = truth[truth["note"] != DAMAGED]
    out = {}
    for node in np.unique(sent["node"]).tolist():
        mine = sent[sent["node"] == node]
        step = (np.diff(mine["seq"].astype(np.int64)) - 1) % 65536
        step[mine["boot"][1:] != mine["boot"][:-1]] = 0
        if step.any():
            out[node] = mine["offset"][np.flatnonzero(step) + 1].tolist()
    return out


def test_a_clean_capture_names_no_problem(clean: tuple[Path, np.ndarray, dict[str, Any]]) -> None:
    done = cli("stats", str(clean[0]))
    assert done.returncode == 0, done.stdout
    assert done.stdout.endswith("\nno problems found\n")


def test_a_clean_capture_without_host_times_names_none_either(
    clean: tuple[Path, np.ndarray, dict[str, Any]], tmp_path: Path
) -> None:
    bare = tmp_path / "bare.bin"
    bare.write_bytes(clean[0].read_bytes())
    report = json.loads(cli("stats", "--json", str(bare)).stdout)
    assert report["clock"] == "hub" and report["problems"] == []


def test_clock_rates_are_the_true_crystals(clean: tuple[Path, np.ndarray, dict[str, Any]]) -> None:
    report = json.loads(cli("stats", "--json", str(clean[0])).stdout)
    true_ppm = clean[2]["clock_ppm"]
    assert report["hub_vs_host_ppm"]["0"] == pytest.approx(true_ppm[0], abs=0.5)
    for node in range(1, 8):
        clock = report["nodes"][str(node)]["clock"]
        assert clock["ppm"] == pytest.approx(true_ppm[node], abs=0.5)
        assert 0 < clock["uncertainty_ppm"] < 2  # every figure says how far it may be off


def test_the_out_of_spec_cue_clock_is_named(report: dict[str, Any]) -> None:
    named = [p for p in problems(report) if "drift" in p]
    assert len(named) == 1, named
    assert re.fullmatch(r"node 3 \(cue\): drift \+140 ±\d\.\d ppm, datasheet ±100", named[0])


def test_garbage_and_a_damaged_frame_are_bad_frames_at_their_offsets(
    report: dict[str, Any], faulty: tuple[Path, np.ndarray, dict[str, Any]]
) -> None:
    truth = faulty[1]
    ends = truth["offset"] + truth["length"]
    gap = np.flatnonzero(truth["offset"][1:] != ends[:-1])  # the garbage burst sits there
    assert len(gap) == 1
    burst = (int(ends[gap[0]]), int(truth["offset"][gap[0] + 1]))
    damaged = int(truth["offset"][truth["note"] == DAMAGED][0])
    offsets = sorted(o for reason in report["bad"].values() for o in reason["offsets"])
    assert offsets[0] == burst[0] and all(burst[0] <= o < burst[1] for o in offsets[:-1])
    assert offsets[-1] == damaged
    named = sum(p["count"] for text, p in problems(report).items() if "bad frame" in text)
    assert named == len(offsets)


def test_the_reboot_is_named_at_the_new_hello(
    report: dict[str, Any], faulty: tuple[Path, np.ndarray, dict[str, Any]]
) -> None:
    truth = faulty[1]
    hello = int(truth["offset"][(truth["boot"] == 1) & (truth["msg_type"] == HELLO)][0])
    assert problems(report)["hub rebooted 1 time"]["offsets"] == [hello]


def test_lost_frames_are_counted_per_node_at_their_gaps(
    report: dict[str, Any], faulty: tuple[Path, np.ndarray, dict[str, Any]]
) -> None:
    expected = expected_losses(faulty[1])
    assert expected  # the stall made the hub drop frames
    found = {int(n): e["lost"]["offsets"] for n, e in report["nodes"].items() if e["lost"]["count"]}
    assert found == expected
    total = sum(e["lost"]["count"] for e in report["nodes"].values())
    decoded = json.loads(cli("decode", "--json", str(faulty[0])).stdout.splitlines()[-1])
    assert total == sum(decoded["summary"]["lost"].values())
    # what the hub dropped in the stall, by its own count (its last HEARTBEAT before the
    # reboot), and the one frame spoilt on the wire
    reboot_at = problems(report)["hub rebooted 1 time"]["offsets"][0]
    damaged = int((faulty[1]["note"] == DAMAGED).sum())
    assert total == last_tx_dropped(faulty[0], reboot_at) + damaged


def last_tx_dropped(capture: Path, before: int) -> int:
    lines = [json.loads(x) for x in cli("decode", "--json", "--type", "HEARTBEAT",
                                         str(capture)).stdout.splitlines()[:-1]]  # fmt: skip
    return [x["fields"]["tx_dropped"] for x in lines if x["offset"] < before][-1]


def test_the_stall_is_named(
    report: dict[str, Any], faulty: tuple[Path, np.ndarray, dict[str, Any]]
) -> None:
    stalled = [t for t in problems(report) if t.startswith("no HEARTBEAT for")]
    assert len(stalled) == 1 and 3.0 <= float(stalled[0].split()[3]) < 4.5
    dropped = last_tx_dropped(faulty[0], problems(report)["hub rebooted 1 time"]["offsets"][0])
    said = f"the hub counted {dropped} frames dropped for lack of buffer (a stalled link)"
    assert said in problems(report)


def test_png_draws_drift_and_loss(
    faulty: tuple[Path, np.ndarray, dict[str, Any]], tmp_path: Path
) -> None:
    png = tmp_path / "link.png"
    done = cli("stats", "--png", str(png), str(faulty[0]))
    assert done.returncode == 1 and "node 3 (cue): drift +140 ±" in done.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "/nonexistent.bin: No such file"), (b"\x00\x01\x02\x00" * 50, "no valid frame")],
)
def test_an_unusable_capture_is_one_line_and_status_2(
    tmp_path: Path, content: bytes | None, says: str
) -> None:
    path = "/nonexistent.bin"
    if content is not None:
        path = str(tmp_path / "junk.bin")
        Path(path).write_bytes(content)
    done = cli("stats", path)
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1


def hit(seq: int, flags: int = 0) -> bytes:
    return encode_frame("CUSHION_HIT", seq=seq, t_us=seq * 1000, flags=flags, cushion=1,
                        pos_mm=2, amplitude=3)  # fmt: skip


@pytest.mark.parametrize(
    ("seqs", "lost_at", "missing"),
    [
        ([(0, 0), (1, 0), (3, 0), (4, 0)], [2], [1]),  # one gap, charged to the frame after it
        ([(65534, 0), (65535, 0), (1, 0), (2, 0)], [2], [1]),  # across the wrap
        ([(0, 0), (1, 0), (3, 0), (3, 1), (2, 1), (4, 0), (7, 0)], [6], [2]),  # a late resend fills
        ([(5, 0), (5, 1), (6, 0)], [], []),  # a duplicate is not a loss
    ],
)
def test_lost_frames_and_retransmissions_as_the_decoder_counts_them(
    seqs: list[tuple[int, int]], lost_at: list[int], missing: list[int]
) -> None:
    frames = [hit(s, f) for s, f in seqs]
    capture = b"\x00" + b"".join(frames)
    starts = np.cumsum([1] + [len(f) for f in frames])[:-1].tolist()
    node = link_stats(np.frombuffer(capture, np.uint8))["nodes"]["1"]
    assert node["lost"]["offsets"] == [starts[i] for i in lost_at]
    assert node["lost"]["missing"] == missing
    assert node["lost"]["count"] == sum(decode_capture(capture).stats.lost.values())
    retx = [starts[i] for i, (_, flags) in enumerate(seqs) if flags]
    assert node["retransmissions"] == {"count": len(retx), "offsets": retx}
