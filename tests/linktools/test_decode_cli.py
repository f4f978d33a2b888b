"""`firmware-host decode` and `dump` as a user runs them (subprocess, real files)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import termios

import pytest
from proc_util import forked

from firmware_host.cli.main import main
from protocol.catalogue import MESSAGES

pytestmark = pytest.mark.wall_s(15)  # alone, on an idle core: run first (conftest.py)


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return forked.run([*forked.PREFIX, *args], input=stdin, capture_output=True, timeout=120)


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
    shown = [line for line in lines if "type" in line and line["type"] != "UNKNOWN"]
    good = [line for line in shown if not line.get("duplicate")]
    bad = [line for line in lines if "error" in line]
    unknown = [line for line in lines if line.get("type") == "UNKNOWN"]
    # every golden frame is a line; the retransmitted CUE_CONTACT repeats a delivered seq:
    # marked, and counted under duplicates, not frames (EVENTS.md)
    assert len(shown) == len(vectors["frames"])
    (again,) = [line for line in shown if line.get("duplicate")]
    assert again["type"] == "CUE_CONTACT" and again["flags"] & 1
    assert summary["duplicates"] == 1
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


def _frames(*frames: tuple[str, int, int, int]) -> bytes:
    """(type, node, seq, flags) frames as a capture: cushion hits and cue contacts."""
    from protocol.framing import encode_frame

    fields = {
        "CUSHION_HIT": {"cushion": 1, "pos_mm": 2, "amplitude": 3},
        "CUE_CONTACT": {"duration_us": 900, "peak_force_dn": 40},
    }
    return b"".join(
        encode_frame(name, node=node, seq=seq, t_us=1_000_000 * seq, flags=flags, **fields[name])
        for name, node, seq, flags in frames
    )


WIRE = [("CUSHION_HIT", 1, 5, 0), ("CUSHION_HIT", 1, 5, 1), ("CUE_CONTACT", 3, 6, 0)]
WIRE += [("CUSHION_HIT", 1, 6, 0)]


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ([], [(1, 5, False), (1, 5, True), (3, 6, False), (1, 6, False)]),
        (["--node", "3"], [(3, 6, False)]),
        (["--node", "1", "--type", "CUSHION_HIT"], [(1, 5, False), (1, 5, True), (1, 6, False)]),
        (["--where", "seq >= 6"], [(3, 6, False), (1, 6, False)]),
        (["--where", "not duplicate and node == 'rails'"], [(1, 5, False), (1, 6, False)]),
        (["--where", "duplicate"], [(1, 5, True)]),
    ],
)
def test_decode_shows_every_frame_a_retransmission_marked_and_filters_only_lines(
    tmp_path, capsys, options, shown
):
    """Issue 11.1: a retransmission of a frame already delivered is a line with
    "duplicate": true, counted under duplicates (not frames); filters never change the
    summary."""
    capture = tmp_path / "dup.bin"
    capture.write_bytes(_frames(*WIRE))
    assert main(["decode", "--json", str(capture), *options]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    *frames, summary = lines
    got = [(f["node"], f["seq"], f.get("duplicate", False)) for f in frames]
    assert got == shown
    assert (summary["summary"]["frames"], summary["summary"]["duplicates"]) == (3, 1)
    assert main(["decode", str(capture), *options]) == 0
    text = capsys.readouterr().out
    assert text.count("DUPLICATE (already delivered)") == sum(d for _, _, d in shown)


def _holds(pid: int, path: str) -> bool:
    """Process ``pid`` has ``path`` open."""
    fds = f"/proc/{pid}/fd"
    try:
        return any(os.readlink(os.path.join(fds, fd)) == path for fd in os.listdir(fds))
    except OSError:
        return False


def _live_decode(args: list[str], feed, ready, lines: int) -> tuple[list[dict], int]:
    """``decode --json ARGS`` in its own process; once ``ready(pid)`` (it holds its input
    open, as it must to read it), ``feed()`` gives it bytes; once it printed ``lines``
    lines (or a minute passed), Ctrl-C.  Waiting on what the process did, not on a clock,
    keeps this right on a loaded machine."""
    import signal
    import threading
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "decode", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not ready(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        feed()
        while len(out) < lines and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert "Traceback" not in err, err
    return [json.loads(x) for x in out], proc.returncode


def test_follow_decodes_what_is_appended_to_a_capture_until_ctrl_c(tmp_path):
    capture = tmp_path / "growing.bin"
    first, rest = _frames(*WIRE[:2]), _frames(*WIRE[2:])
    capture.write_bytes(first)

    def grow() -> None:
        with capture.open("ab") as f:
            f.write(rest)

    lines, status = _live_decode(
        [str(capture), "--follow"], grow, lambda pid: _holds(pid, str(capture)), 4
    )
    *frames, summary = lines
    assert [(f["node"], f["seq"]) for f in frames] == [(1, 5), (1, 5), (3, 6), (1, 6)]
    assert summary["summary"]["frames"] == 3 and status == 0


def test_port_decodes_a_live_link_until_ctrl_c():
    master, slave = os.openpty()
    try:

        def send() -> None:
            os.write(master, _frames(*WIRE))

        def raw(pid: int) -> bool:
            """It holds the port and has made it raw: bytes sent before that would be
            read through the line discipline (a race a loaded machine lost)."""
            return (
                _holds(pid, os.ttyname(slave)) and not termios.tcgetattr(slave)[3] & termios.ICANON
            )

        lines, status = _live_decode(["--port", os.ttyname(slave)], send, raw, 4)
    finally:
        os.close(master)
        os.close(slave)
    *frames, summary = lines
    assert [f.get("duplicate", False) for f in frames] == [False, True, False, False]
    assert summary["summary"]["duplicates"] == 1 and status == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "give a CAPTURE (- for stdin) or --port URL"),
        (["x.bin", "--port", "loop://"], "give a CAPTURE (- for stdin) or --port URL"),
        (["-", "--follow"], "--follow needs a capture file"),
    ],
)
def test_decode_needs_one_input(args, says):
    done = run_cli("decode", *args)
    assert done.returncode == 2 and says in done.stderr.decode()
