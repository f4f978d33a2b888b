"""The raw capture writer: exact bytes, readable rotation names, nothing lost on
close, SIGTERM or a kill between flushes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime

import numpy as np
import pytest

from firmware_host.link.recorder import CaptureRecorder, part_name, read_rx_times
from firmware_host.link.transport import SerialTransport

STARTED = datetime(2026, 11, 30, 13, 35, 0, tzinfo=UTC)


def stream(n: int, start: int = 0) -> bytes:
    """A recognisable byte stream (zeros included): byte i is i mod 251."""
    return (np.arange(start, start + n) % 251).astype(np.uint8).tobytes()


def parts(tmp_path) -> list[tuple[str, int]]:
    return [(p.name, p.stat().st_size) for p in sorted(tmp_path.glob("*.bin"))]


def test_part_names_sort_in_stream_order_and_carry_the_utc_start():
    local = STARTED.astimezone()  # the same instant in the machine's zone
    names = [part_name("capture", local, n) for n in (1, 2, 10, 9999)]
    assert names[0] == "capture-20261130-133500-0001.bin"
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("chunks", "max_bytes", "sizes"),
    [
        ([40] * 5, 100, [80, 80, 40]),  # a chunk that would overflow starts the next part
        ([40] * 5, 120, [120, 80]),  # exactly full stays
        ([250, 10], 100, [250, 10]),  # an oversized chunk gets a part to itself, never split
        ([40] * 5, None, [200]),  # no limit: one part
    ],
)
def test_rotation_by_size_between_chunks(tmp_path, chunks, max_bytes, sizes):
    data = stream(sum(chunks))
    with CaptureRecorder(tmp_path, max_bytes=max_bytes, started=STARTED) as rec:
        pos = 0
        for n in chunks:
            rec.write(data[pos : pos + n])
            pos += n
    assert parts(tmp_path) == [
        (f"capture-20261130-133500-{i:04d}.bin", size) for i, size in enumerate(sizes, 1)
    ]
    assert b"".join(p.read_bytes() for p in rec.paths) == data


def test_rotation_by_age_uses_the_injected_clock(tmp_path):
    now = [100.0]
    with CaptureRecorder(tmp_path, max_seconds=60, started=STARTED, clock=lambda: now[0]) as rec:
        for t in (100.0, 159.9, 160.0, 170.0, 220.0):
            now[0] = t
            rec.write(b"x")
    assert [size for _, size in parts(tmp_path)] == [2, 2, 1]


def test_an_empty_part_is_never_rotated_away(tmp_path):
    now = [0.0]
    with CaptureRecorder(tmp_path, max_seconds=1, started=STARTED, clock=lambda: now[0]) as rec:
        now[0] = 10.0
        rec.write(b"late")
    assert parts(tmp_path) == [("capture-20261130-133500-0001.bin", 4)]


def test_rx_times_side_file_maps_part_offsets_to_host_receive_times(tmp_path):
    with CaptureRecorder(tmp_path, rx_times=True, max_bytes=8, started=STARTED) as rec:
        for i, n in enumerate((3, 4, 5)):
            rec.write(stream(n), host_rx_ns=1_000 + i)
    first, second = (p.with_suffix(".rxt") for p in rec.paths)
    assert read_rx_times(first).tolist() == [(0, 1000), (3, 1001)]
    assert read_rx_times(second).tolist() == [(0, 1002)]


def test_rx_times_off_writes_no_side_file(tmp_path):
    with CaptureRecorder(tmp_path, started=STARTED) as rec:
        rec.write(b"abc", host_rx_ns=5)
    assert list(tmp_path.glob("*.rxt")) == []


def test_an_existing_recording_is_never_overwritten(tmp_path):
    with CaptureRecorder(tmp_path, started=STARTED) as rec:
        rec.write(b"first")
    with pytest.raises(FileExistsError):
        CaptureRecorder(tmp_path, started=STARTED)
    assert rec.path.read_bytes() == b"first"


def test_chunks_after_close_are_counted_not_written(tmp_path):
    rec = CaptureRecorder(tmp_path, started=STARTED)
    rec.write(b"in")
    rec.close()
    rec.write(b"late")
    rec.close()
    assert (rec.path.read_bytes(), rec.dropped_after_close) == (b"in", 1)


def test_the_transport_feeds_the_recorder_the_exact_stream(tmp_path):
    data = stream(3000)
    with (
        CaptureRecorder(tmp_path, rx_times=True, started=STARTED) as rec,
        SerialTransport("loop://", on_chunk=rec.record) as link,
    ):
        assert link.wait_open(2.0)
        for i in range(0, len(data), 500):
            link.write(data[i : i + 500])
        deadline = time.monotonic() + 2.0
        while rec.bytes_written < len(data) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert rec.path.read_bytes() == data
    times = read_rx_times(rec.path.with_suffix(".rxt"))
    assert times["offset"][0] == 0 and np.all(np.diff(times["offset"].astype(np.int64)) > 0)
    assert np.all(np.diff(times["host_rx_ns"]) >= 0)


# -- a process writing through the recorder, killed -------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from firmware_host.link.recorder import CaptureRecorder, exit_on_signals

    directory, mode = sys.argv[1], sys.argv[2]
    data = (np.arange(1 << 22) % 251).astype(np.uint8).tobytes()
    written = 0
    exit_on_signals()
    try:
        with CaptureRecorder(directory, flush_interval_s=0.05, flush_bytes=1 << 20) as rec:
            if mode == "burst":
                rec.write(data[:1234])
                written = 1234
                print(written, flush=True)
                time.sleep(60)  # killed in here, between writes
            while True:
                rec.write(data[written : written + 997])
                written += 997
                if written == 997:
                    print(written, flush=True)
                time.sleep(0.0005)
    finally:
        print("wrote", written, flush=True)
    """
)


def spawn(tmp_path, mode: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), mode], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert int(proc.stdout.readline())  # the child is writing
    return proc


def test_sigterm_closes_the_recording_with_every_byte_written(tmp_path):
    proc = spawn(tmp_path, "loop")
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=5)
    assert proc.returncode == 128 + signal.SIGTERM
    written = int(out.split()[-1])
    (path,) = tmp_path.glob("*.bin")
    got = path.read_bytes()
    # SIGTERM can land inside write(), after the bytes went in but before the child counted them.
    assert written <= len(got) <= written + 997
    assert got == stream(len(got))
    assert len(got) > 997


def test_a_kill_between_writes_loses_nothing_older_than_the_flush_interval(tmp_path):
    proc = spawn(tmp_path, "burst")
    time.sleep(0.3)  # several 50 ms flush intervals, no writes
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=5)
    (path,) = tmp_path.glob("*.bin")
    assert path.read_bytes() == stream(1234)
