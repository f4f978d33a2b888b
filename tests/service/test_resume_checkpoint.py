"""A restart reads only what was recorded after the last checkpoint (docs/memory.md).

The daemon saves its pipeline at each frame start and every so many bytes
(firmware_host/checkpoint.py); a restart loads the checkpoint and replays only
the recording after it.  The match it rebuilds must be the one a replay of the
whole day rebuilds, and what it reads must not grow with the day: a 300 MB part
whose last checkpoint is near its end costs the bytes after the checkpoint
(bench/memory.py measures the time and peak RSS of exactly that case).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from firmware_host.checkpoint import Checkpoints, checkpoint_path, load_checkpoint
from firmware_host.pipeline import Pipeline
from firmware_host.service.resume import resume

CAPTURE = Path(__file__).resolve().parents[2] / "hil_tests" / "corpus" / "random_s1_0.5min.full.bin"
READ = 4096  # what one serial read brings


def _part(folder: Path, data: bytes, hole: int = 0) -> Path:
    """Today's first recording part: ``hole`` bytes never written (a sparse file: the
    part's start, before the checkpoint, is never read), then ``data``."""
    day = datetime.now(UTC).strftime("%Y%m%d")
    path = folder / f"capture-{day}-000000-0001.bin"
    with open(path, "wb") as out:
        out.truncate(hole)
        out.seek(hole)
        out.write(data)
    return path


def _live(data: bytes, part: Path, checkpoints: Checkpoints, base: int = 0) -> Pipeline:
    """The daemon: each read fed to the pipeline, then offered to the checkpoints."""
    pipe = Pipeline()
    for at in range(0, len(data), READ):
        pipe.feed(data[at : at + READ])
        end = min(at + READ, len(data))
        checkpoints.after_feed(pipe, part, base + end, end)
    return pipe


def _whole_day(part: Path) -> Pipeline:
    pipe = Pipeline()
    assert resume(pipe, [part]).verdicts > 0  # a match with shots judged, not an empty one
    return pipe


def test_a_restart_replays_only_the_bytes_after_the_checkpoint_and_rebuilds_the_same_match(
    tmp_path,
):
    data = CAPTURE.read_bytes()
    part = _part(tmp_path, data)
    checkpoints = Checkpoints(tmp_path, every=len(data) // 3)
    _live(data[: len(data) - 5000], part, checkpoints)  # killed 5000 bytes before the end
    assert checkpoints.saved >= 3
    whole = _whole_day(part)
    pipe = Pipeline()
    done = resume(pipe, [part], checkpoint_path(tmp_path))
    assert done.checkpoint is not None and done.checkpoint.startswith(part.name)
    assert 5000 <= done.bytes <= len(data) // 3 + 5000
    assert pipe.referee.state == whole.referee.state
    # the match goes on as if the whole day had been replayed
    assert pipe.flush().lines == whole.flush().lines


def test_a_300_mb_part_costs_only_what_follows_its_last_checkpoint(tmp_path):
    data = CAPTURE.read_bytes()
    keep = len(data) // 2  # the checkpoint is this far into the capture
    hole = 300_000_000 - (len(data) - keep)
    part = _part(tmp_path, data[keep:], hole=hole)
    checkpoints = Checkpoints(tmp_path, every=1 << 40)  # one save: the first feed's
    pipe = Pipeline()
    pipe.feed(data[:keep])
    checkpoints.after_feed(pipe, part, hole, keep)
    assert part.stat().st_size == 300_000_000
    reference = Pipeline()
    reference.feed(data[:keep])
    reference.feed(data[keep:])
    resumed = Pipeline()
    done = resume(resumed, [part], checkpoint_path(tmp_path))
    assert done.bytes == len(data) - keep
    assert resumed.referee.state == reference.referee.state
    assert resumed.flush().lines == reference.flush().lines


def test_a_frame_start_saves_a_checkpoint_at_once(tmp_path):
    data = CAPTURE.read_bytes()
    part = _part(tmp_path, data)
    checkpoints = Checkpoints(tmp_path, every=1 << 40)
    pipe = Pipeline()
    pipe.feed(data[:READ])
    checkpoints.after_feed(pipe, part, READ, READ)
    pipe.press("new_frame")
    pipe.feed(data[READ : 2 * READ])
    checkpoints.after_feed(pipe, part, 2 * READ, 2 * READ)
    assert checkpoints.saved == 2
    loaded = load_checkpoint(checkpoint_path(tmp_path), [part])
    assert loaded is not None
    assert loaded[1] == 2 * READ and loaded[2].referee.state.frame == 2


@pytest.mark.parametrize("how", ["group-writable", "garbage", "another part"])
def test_a_checkpoint_that_cannot_be_trusted_is_refused_and_the_whole_day_replayed(
    tmp_path, caplog, how
):
    data = CAPTURE.read_bytes()
    part = _part(tmp_path, data)
    checkpoints = Checkpoints(tmp_path, every=len(data) // 2)
    _live(data, part, checkpoints)
    path = checkpoint_path(tmp_path)
    if how == "group-writable":
        os.chmod(path, 0o660)  # a pickle anyone else may write runs their code: never loaded
    elif how == "garbage":
        path.write_bytes(b"\x80\x05not a pickle")
    else:
        part = part.rename(part.with_name(part.name.replace("-0001", "-0002")))
    with caplog.at_level(logging.WARNING):
        done = resume(Pipeline(), [part], path)
    assert done.checkpoint is None and done.bytes == len(data)
    assert str(path) in caplog.text


def test_a_signed_table_checkpoints_without_its_key_and_resumes_the_same_match(tmp_path):
    """With a table key the checkpoint pickles the pipeline without the key (it stays in its
    0600 file), and the restart's check, whose stored counters are past every recorded
    frame, still reads the recording: none of it is refused as replayed."""
    from firmware_host.cli.main import main as cli
    from firmware_host.keys import parse_require, read_key_file, write_key_file
    from protocol.signing import STORE_NAME, CounterStore, SignatureCheck, new_key

    key_file = tmp_path / "table.key"
    write_key_file(key_file, new_key())
    capture = tmp_path / "signed.bin"
    argv = ["simulate", "--capture", str(capture), "--minutes", "0.5", "--seed", "1"]
    assert cli([*argv, "--key-file", str(key_file)]) == 0
    data, key, require = capture.read_bytes(), read_key_file(key_file), parse_require("cue,keypad")
    folder = tmp_path / "rec"
    folder.mkdir()
    part = _part(folder, data)
    store = CounterStore(tmp_path / STORE_NAME)
    live = Pipeline(signing=SignatureCheck(key, require, store))
    checkpoints = Checkpoints(folder, every=len(data) // 3)
    for at in range(0, len(data) - 5000, READ):
        live.feed(data[at : at + READ])
        end = min(at + READ, len(data) - 5000)
        checkpoints.after_feed(live, part, end, end)
    assert checkpoints.saved >= 3
    assert key not in checkpoint_path(folder).read_bytes()
    assert live.decoder.signing.counts() == {}  # the table signed everything it had to

    whole = Pipeline(signing=SignatureCheck(key, require))
    assert resume(whole, [part]).verdicts > 0
    restarted = Pipeline(signing=SignatureCheck(key, require, store))
    done = resume(restarted, [part], checkpoint_path(folder))
    assert done.checkpoint is not None
    assert restarted.decoder.signing.counts() == {}  # nothing refused as replayed
    assert restarted.referee.state == whole.referee.state
    assert restarted.flush().lines == whole.flush().lines
