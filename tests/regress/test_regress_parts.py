"""A regression's replay of a part gives exactly what `replay` gives, without Dask in the way.

A rotated recording's parts are replayed one task each, the pipeline handed
from part to part (pickled, as Dask moves it between workers), and each
part is read in windows: the verdicts and events must be those of one
replay of the whole stream, the referee's presses (``.tx``) included.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from simulated import simulated

from firmware_host.cli.main import main
from firmware_host.link.recorder import CaptureRecorder, recorded_presses
from firmware_host.pipeline import REPLAY_CHUNK, replay
from firmware_host.regress import replaying
from firmware_host.regress.compare import kind, rows_of
from firmware_host.regress.corpus import CorpusError, find_recordings
from firmware_host.regress.replaying import Job, join_events, replay_part
from rules import RulesConfig

MINUTES = "1.5"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("match") / "m.bin"
    return simulated(path, "--seed", "7", "--minutes", MINUTES).read_bytes()


def _record(folder: Path, data: bytes, part_bytes: int, presses: dict[int, bytes]) -> list[Path]:
    """``data`` written as the daemon records it: rotated parts, host frames in ``.tx``."""
    folder.mkdir()
    with CaptureRecorder(folder, max_bytes=part_bytes, rx_times=True) as rec:
        at = 0
        for offset in sorted(presses) + [len(data)]:
            for start in range(at, offset, 3000):  # reads of a serial port's size
                rec.write(data[start : min(start + 3000, offset)], 0)
            at = offset
            if offset in presses:
                rec.write_sent(presses[offset], 0)
        return list(rec.paths)


def _keypad(key: str, arg: int) -> bytes:
    """A KEYPAD frame from the host's node, as the daemon sends a referee's press."""
    from protocol.catalogue import HOST_NODE, KEYPAD_CODES
    from protocol.framing import encode_frame

    return encode_frame("KEYPAD", node=HOST_NODE, key=KEYPAD_CODES[key], arg=arg)


def test_rotated_parts_chained_through_pickles_equal_one_replay(
    capture: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replaying, "WINDOW", 8 * REPLAY_CHUNK)  # many windows per part
    presses = {
        len(capture) // 3: _keypad("referee_foul", 15),
        5 * REPLAY_CHUNK: _keypad("referee_foul", 16),
    }
    parts = _record(tmp_path / "rotated", capture, len(capture) // 3 + 1000, presses)
    assert len(parts) >= 3
    (recording,) = find_recordings([str(tmp_path / "rotated")])
    assert [Path(p.url) for p in recording.parts] == parts  # one stream, in name order

    whole = tmp_path / "whole"
    joined = _record(whole, capture, 10 * len(capture), presses)[0]
    expected = replay(capture, presses=recorded_presses(joined))
    lines, shots, carry = [], {}, None
    for i, part in enumerate(recording.parts):
        last = i == len(recording.parts) - 1
        result, carry = replay_part(Job(recording.name, i, part, last), RulesConfig(), carry)
        carry = pickle.loads(pickle.dumps(carry))  # as Dask hands it to another worker
        lines += result.lines
        for shot, events in result.shots.items():
            shots.setdefault(shot, []).append(events)
    final = [
        {k: v.get(k) for k in replaying.VERDICT_KEYS}
        for v in expected.lines
        if v.get("kind") == "verdict" and not v.get("early")
    ]
    assert any(line["rules"] == ["15"] for line in final)  # the press was judged
    assert lines == final
    assert {shot: json.loads(join_events(texts)) for shot, texts in shots.items()} == {
        n: [e for e in expected.events if e.get("shot") == n]
        for n in {e["shot"] for e in expected.events if e.get("shot") is not None}
    }


def test_a_row_per_shot_and_the_kind_of_each_change() -> None:
    def v(shot, verdict, rules=(), clause=None):
        return {"shot": shot, "verdict": verdict, "rules": list(rules), "satisfied": clause}

    got = [("p1", v(1, "legal", clause="20(1)") | {"t_us": 5}), ("p1", v(2, "foul", ["18"]))]
    base = [v(1, "legal", clause="20(1)"), v(2, "legal", clause="20(2)(a)"), v(3, "foul", ["17"])]
    rows = rows_of("rec", got, {}, base)
    assert [(r["key"], r["change"]) for r in rows] == [
        ("1", None),
        ("2", "new foul (false-foul candidate)"),
        ("3", "shot only in the baseline"),
    ]
    assert rows[0]["part"] == "p1" and rows[0]["t_us"] == 5 and rows[0]["clause"] == "20(1)"
    assert all(r["change"] is None for r in rows_of("rec", got, {}, None))  # nothing to compare
    assert kind(v(1, "foul", ["18"]), v(1, "legal")) == "foul no longer called"
    assert kind(v(1, "legal"), v(1, "referee", ["20"])) == "now the referee's call"
    assert kind(v(1, "referee", ["20"]), v(1, "legal")) == "now decided by the sensors"
    assert kind(v(1, "foul", ["18"]), v(1, "foul", ["19.1"])) == "other rules or clause"


def test_a_corpus_without_captures_is_one_line(tmp_path: Path, capsys) -> None:
    with pytest.raises(CorpusError, match="no .bin capture"):
        find_recordings([str(tmp_path)])
    status = main(["hil", "regress", str(tmp_path / "nothing"), "-o", str(tmp_path / "out")])
    assert status == 2
    assert capsys.readouterr().err.strip().endswith("nothing: no such file or folder")


def _worker_settings() -> tuple[str | None, bool]:
    import os

    import dask

    return os.environ.get("MALLOC_TRIM_THRESHOLD_"), dask.config.get(
        "distributed.worker.profile.enabled"
    )


def test_the_local_clusters_workers_allocate_and_sample_as_the_command_line_does() -> None:
    """A local cluster's worker runs without the nanny's malloc trim threshold (which maps every
    large array afresh: about a tenth more CPU a part, docs/regress.md) and without Dask's
    stack sampler."""
    from firmware_host.regress.cluster import connect

    with connect(None, 1, "1GiB") as client:
        assert list(client.run(_worker_settings).values()) == [(None, False)]
