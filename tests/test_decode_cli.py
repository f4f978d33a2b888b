"""`firmware-host decode` and `dump` as a user runs them (subprocess, real files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from protocol.catalogue import MESSAGES


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", *args],
        input=stdin,
        check=False,
        capture_output=True,
        timeout=120,
    )


@pytest.fixture
def vector_capture(tmp_path, vectors):
    frames = vectors["frames"] + vectors["bad_frames"] + vectors["unknown_type"]
    path = tmp_path / "vectors.bin"
    path.write_bytes(b"".join(bytes.fromhex(f["hex"]) for f in frames))
    return path


def test_decode_json_lines_follow_events_md(vector_capture, vectors):
    done = run_cli("decode", "--json", str(vector_capture))
    assert done.returncode == 1  # the capture holds bad frames: reported, finished
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    summary = lines.pop()["summary"]
    good = [line for line in lines if "type" in line and line["type"] != "UNKNOWN"]
    bad = [line for line in lines if "error" in line]
    unknown = [line for line in lines if line.get("type") == "UNKNOWN"]
    # the retransmitted CUE_CONTACT repeats a delivered seq: shown once
    assert len(good) == len(vectors["frames"]) - 1
    assert [b["error"] for b in bad] == [f["reason"] for f in vectors["bad_frames"]]
    assert all(set(b) == {"offset", "error", "length"} for b in bad)
    assert unknown[0]["msg_type"] == 0x7E and unknown[0]["payload_hex"] == "aabb"
    assert set(good[0]) >= {"offset", "node", "seq", "t_us", "flags", "type", "fields"}
    track = next(g for g in good if g["type"] == "BALL_TRACK")
    assert set(track["fields"]["balls"][0]) == {"ball", "state", "x", "y"}
    assert summary["frames"] == len(good) and summary["unknown"] == 1
    assert sum(summary["bad"].values()) == len(bad)
    assert set(summary) >= {"frames", "bad", "unknown", "lost"}
    offsets = [line["offset"] for line in lines]
    assert offsets == sorted(offsets)


def test_decode_reads_stdin_and_prints_an_aligned_table(vector_capture):
    done = run_cli("decode", "-", stdin=vector_capture.read_bytes())
    text = done.stdout.decode()
    assert "HELLO" in text and "BAD crc" in text and "UNKNOWN 0x7E" in text
    assert "frames decoded" in text


def test_decode_random_bytes_finishes_with_status_1_and_a_summary(tmp_path):
    path = tmp_path / "noise.bin"
    path.write_bytes(os.urandom(200_000))
    done = run_cli("decode", "--json", str(path))
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    summary = json.loads(done.stdout.decode().splitlines()[-1])["summary"]
    assert sum(summary["bad"].values()) > 100


@pytest.mark.parametrize(
    "args, names",
    [
        (["decode", "/no/such/capture.bin"], "/no/such/capture.bin"),
        (["decode", "--type", "NOPE", "-"], "NOPE"),
        (["decode"], "CAPTURE"),
    ],
)
def test_bad_arguments_get_one_line_naming_them_and_status_2(args, names):
    done = run_cli(*args, stdin=b"")
    assert done.returncode == 2
    err = done.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and names in err, err


def test_strict_stops_at_the_first_bad_frame(vector_capture):
    done = run_cli("decode", "--json", "--strict", str(vector_capture))
    assert done.returncode == 1
    lines = done.stdout.decode().splitlines()
    assert "error" in json.loads(lines[-1]) and "summary" not in lines[-1]


def test_dump_lists_every_message_and_field_from_the_catalogue():
    done = run_cli("dump", "--json")
    assert done.returncode == 0
    dump = json.loads(done.stdout)
    assert [m["name"] for m in dump["messages"]] == [s.name for s in MESSAGES]
    cushion = next(m for m in dump["messages"] if m["name"] == "CUSHION_HIT")
    assert [(f["name"], f["offset"]) for f in cushion["fields"]] == [
        ("cushion", 10),
        ("pos_mm", 11),
        ("amplitude", 13),
    ]
