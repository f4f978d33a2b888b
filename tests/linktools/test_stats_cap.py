"""`stats` lists the first LISTED offsets of a finding and counts them all (issue 29: a
hostile file of 5 M bad frames made a 171 MB report and 919 MB of RSS): the streamed
report still equals the whole-capture one byte for byte, and garbage costs no memory."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
from proc_util import run_cli as cli
from test_stats_stream import CORPUS, MB, chunks, peak_rss_mb
from test_text_lines import HELLO

from firmware_host.commands.stats import _text
from firmware_host.jsonout import dumps
from firmware_host.linktools.capped import LISTED
from firmware_host.linktools.linkstats import MAX_LISTED, link_stats
from firmware_host.linktools.statstream import stream_stats
from protocol.decoder import STATUS_NAMES, decode_capture
from protocol.framing import encode_frame
from protocol.kernels import BAD_COBS
from protocol.seqwindow import GAP

pytestmark = pytest.mark.wall_s(30)

CLEAN = CORPUS / "random_s1_0.5min.full.bin"
CUE = {"duration_us": 900, "peak_force_dn": 40}


def garbage(n_bytes: int, seed: int) -> bytes:
    """Random bytes with a delimiter every 20: a bad frame each, mostly (a bad CRC)."""
    data = bytearray(random.Random(seed).randbytes(n_bytes))
    data[19::20] = bytes(len(data[19::20]))
    return bytes(data)


def streamed_equals_whole(data: bytes) -> dict:
    """The report, checked the same streamed in two chunk sizes as on the whole capture."""
    whole = link_stats(np.frombuffer(data, np.uint8))
    for size in (1 << 20, 4093):
        assert dumps(stream_stats(lambda s=size: chunks(data, s))) == dumps(whole), size
    return whole


def test_more_bad_frames_than_listed_are_counted_and_the_first_listed() -> None:
    clean = CLEAN.read_bytes()
    data = clean + garbage(200_000, 1) + clean
    report = streamed_equals_whole(data)
    frames = decode_capture(np.frombuffer(data, np.uint8)).frames
    capped = 0
    for status in np.unique(frames["status"][frames["status"] >= BAD_COBS]).tolist():
        offsets = frames["offset"][frames["status"] == status].tolist()
        entry = report["bad"][STATUS_NAMES[status]]
        assert entry["count"] == len(offsets)
        assert entry["offsets"] == offsets[:LISTED] and len(entry["times_s"]) == len(
            offsets[:LISTED]
        )
        assert entry.get("listed", len(offsets)) == min(len(offsets), LISTED)
        problem = next(p for p in report["problems"] if p["offsets"] == entry["offsets"])
        assert problem["count"] == len(offsets) and problem.get("listed") == entry.get("listed")
        if len(offsets) > LISTED:
            capped += 1
            assert f"and {len(offsets) - MAX_LISTED} more)" in problem["text"]
    assert capped and sum(f"first {LISTED}" in note for note in report["notes"]) == 1
    text = io.StringIO()
    _text(report, text)
    assert f"first {LISTED}" in text.getvalue()


def gappy_node(n: int, resend_every: int) -> tuple[bytes, int]:
    """A HELLO, then the cue's frames with every other seq lost, every ``resend_every``-th
    lost one resent late (it fills its gap): the frames, and how many stay lost."""
    frames = [encode_frame("HELLO", node=0, seq=0, t_us=1, boot_id=1, **HELLO)]
    filled = 0
    for k in range(n):
        frames.append(encode_frame("CUE_CONTACT", node=3, seq=2 * k, t_us=1000 + k * 20_000, **CUE))
        if k and k % resend_every == 0:
            frames.append(encode_frame("CUE_CONTACT", node=3, seq=2 * k - 1, t_us=1000 + k * 20_000,
                                       flags=1, **CUE))  # fmt: skip
            filled += 1
    return b"".join(frames), (n - 1) - filled


def test_more_gaps_than_listed_are_counted_and_the_first_listed() -> None:
    data, lost = gappy_node(2 * LISTED + 500, 7)
    report = streamed_equals_whole(data)
    cue = report["nodes"]["3"]["lost"]
    frames = decode_capture(np.frombuffer(data, np.uint8)).frames
    gaps = frames[(frames["seq_mark"] == GAP) & (frames["node"] == 3)]["offset"].tolist()
    filled = {gaps[k - 1] for k in range(7, len(gaps) + 1, 7)}  # the gap before the k-th frame
    open_gaps = [o for o in gaps if o not in filled]
    assert cue["count"] == lost == len(open_gaps) and cue["gaps"] == len(open_gaps)
    assert cue["offsets"] == open_gaps[:LISTED] and cue["listed"] == LISTED
    assert cue["missing"] == [1] * LISTED
    problem = next(p for p in report["problems"] if "lost (seq gaps)" in p["text"])
    assert problem["count"] == lost and problem["listed"] == LISTED
    assert f"and {len(open_gaps) - MAX_LISTED} more)" in problem["text"]


def test_a_node_of_random_seqs_reports_the_same_streamed() -> None:
    """A hostile node: random seqs and resend flags (gaps, late resends, restarts) in a
    gap a frame, past the gaps kept for resends to fill."""
    rng = random.Random(3)
    frames = [encode_frame("HELLO", node=0, seq=0, t_us=1, boot_id=1, **HELLO)]
    frames += [encode_frame("CUE_CONTACT", node=3, seq=rng.randrange(1 << 16),
                            t_us=1000 + k * 20_000, flags=rng.choice((0, 1)), **CUE)
               for k in range(6000)]  # fmt: skip
    report = streamed_equals_whole(b"".join(frames))
    assert report["nodes"]["3"]["lost"]["listed"] == LISTED


def test_a_capture_under_the_cap_lists_everything() -> None:
    data, lost = gappy_node(50, 7)
    report = streamed_equals_whole(data + garbage(400, 2))
    cue = report["nodes"]["3"]["lost"]
    assert cue["count"] == lost == len(cue["offsets"]) and "listed" not in cue
    assert all("listed" not in p for p in report["problems"]) and all(
        "listed" not in e for e in report["bad"].values()
    )
    assert not any(f"first {LISTED}" in note for note in report["notes"])


def test_garbage_costs_no_memory(tmp_path: Path) -> None:
    """30 MB of garbage frames after a clean capture: the peak of a clean capture of the
    same size (the clean one over and over), where every bad frame's offset and time once
    cost some 100 bytes (+150 MB)."""
    clean = CLEAN.read_bytes()
    size = 30 * MB
    paths = {"clean": tmp_path / "clean.bin", "garbage": tmp_path / "garbage.bin"}
    paths["clean"].write_bytes(clean * (size // len(clean)))
    paths["garbage"].write_bytes(clean + garbage(size, 4))
    peaks = {name: peak_rss_mb("stats", "--json", str(path)) for name, path in paths.items()}
    assert peaks["garbage"] - peaks["clean"] < 20, peaks


def test_the_cli_caps_a_hostile_files_report(tmp_path: Path) -> None:
    path = tmp_path / "mixed.bin"
    path.write_bytes(CLEAN.read_bytes() + garbage(2 * MB, 5))
    done = cli("stats", "--json", str(path))
    assert done.returncode == 1 and len(done.stdout) < MB, len(done.stdout)  # 100 k bad frames


def forged_reboots(n: int) -> bytes:
    """``n`` boots, each a HELLO with a new boot_id, a HEARTBEAT counting one bad frame and a
    CLOCK_SYNC: a hostile file that once kept a reboot, a dict of counts and more per boot."""
    frames = []
    for k in range(n):
        t_us = 1000 * (k + 1)
        frames += [
            encode_frame("HELLO", node=0, seq=3 * k % 65536, t_us=t_us, boot_id=k + 1, **HELLO),
            encode_frame("HEARTBEAT", node=0, seq=(3 * k + 1) % 65536, t_us=t_us + 1,
                         uptime_s=0, nodes_ok=0xFF, rx_bad=1, tx_dropped=0, indicator=0),
            encode_frame("CLOCK_SYNC", node=0, seq=(3 * k + 2) % 65536, t_us=t_us + 2,
                         peer=3, peer_t_us=t_us),
        ]  # fmt: skip
    return b"".join(frames)


def test_more_reboots_than_listed_are_counted_and_the_first_listed() -> None:
    n = LISTED + 700
    data = forged_reboots(n)
    report = streamed_equals_whole(data)
    hello = decode_capture(np.frombuffer(data, np.uint8)).tables["HELLO"]
    first = [{"offset": int(o), "boot_id": int(i)}
             for o, i in zip(hello["offset"][1 : LISTED + 1], hello["boot_id"][1 : LISTED + 1])]  # fmt: skip
    assert report["reboots"] == first
    assert report["reboots_count"] == n - 1 and report["reboots_listed"] == LISTED
    problem = next(p for p in report["problems"] if p["text"].startswith("hub rebooted"))
    assert problem["count"] == n - 1 and problem["listed"] == LISTED
    assert f"and {n - 1 - MAX_LISTED} more)" in problem["text"]
    assert any(p["text"].startswith(f"the hub counted {n} bad frames") for p in report["problems"])


def test_reboots_under_the_cap_have_no_count_of_their_own() -> None:
    report = streamed_equals_whole(forged_reboots(5))
    assert len(report["reboots"]) == 4 and "reboots_count" not in report
    assert "reboots_listed" not in report


def test_forged_reboots_cost_no_memory(tmp_path: Path) -> None:
    """30 MB of forged reboots (a HELLO with a new boot_id, a HEARTBEAT and a CLOCK_SYNC
    each): the peak of a clean capture of the same size, where every reboot once kept its
    offset and boot_id as a dict, and every boot the hub's counts."""
    clean = CLEAN.read_bytes()
    size = 30 * MB
    forged = forged_reboots(5000)
    paths = {"clean": tmp_path / "clean.bin", "forged": tmp_path / "forged.bin"}
    paths["clean"].write_bytes(clean * (size // len(clean)))
    paths["forged"].write_bytes(forged * (size // len(forged)))
    peaks = {name: peak_rss_mb("stats", "--json", str(path)) for name, path in paths.items()}
    assert peaks["forged"] - peaks["clean"] < 20, peaks


def forged_drift(n: int) -> bytes:
    """``n`` boots, each a HELLO with a new boot_id and eight CLOCK_SYNCs of the cue over
    35 s of hub time: a drift window each, a row of the report's each once."""
    frames = []
    for k in range(n):
        frames.append(
            encode_frame("HELLO", node=0, seq=9 * k % 65536, t_us=1, boot_id=k + 1, **HELLO)
        )
        frames += [
            encode_frame("CLOCK_SYNC", node=0, seq=(9 * k + 1 + j) % 65536, t_us=5_000_000 * (j + 1),
                         peer=3, peer_t_us=7_000_000 + 5_000_000 * j + 3 * j)
            for j in range(8)
        ]  # fmt: skip
    return b"".join(frames)


@pytest.mark.parametrize(("boots", "cap"), [(12, 5), (5, 5)])
def test_more_drift_windows_than_listed_are_counted_and_the_first_listed(
    boots: int, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("linkstats", "statstream"):
        monkeypatch.setattr(f"firmware_host.linktools.{module}.WINDOWS_LISTED", cap)
    report = streamed_equals_whole(forged_drift(boots))
    clock = report["nodes"]["3"]["clock"]
    noted = [n for n in report["notes"] if f"more than {cap} drift windows" in n]
    assert len(noted) == (boots > cap)
    assert len(clock["windows"]) == min(boots, cap)
    assert clock.get("windows_count") == (boots if boots > cap else None)
    assert clock.get("windows_listed") == (cap if boots > cap else None)
