"""A first start with nothing compiled: run says what it does, and the verdicts do not wait.

``run`` with an empty numba cache referees with the interpreted pipeline in a
worker while a background process compiles the kernels (docs/startup.md).
Here: stderr is never silent for more than 5 s before the first verdict and
the children all go on SIGTERM; the compiled pipeline, taking over at any
point, publishes exactly what a compiled run would have; the ACK sniffer
finds the decoder's ACKs; the warm-cache marker goes stale when it should.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from proc_util import children as child_pids

from firmware_host import warmup
from firmware_host.engine import AckSniffer, ColdStart, Compiled
from protocol.framing import encode_frame

ROOT = Path(__file__).resolve().parents[1]
MAX_SILENCE_S = 5.0


def test_a_first_start_is_never_silent_before_its_first_verdict(tmp_path: Path) -> None:
    """The README's main job on an empty cache: progress at least every 5 s, then a verdict."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    env.pop("NUMBA_DISABLE_JIT", None)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "run", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    err: list[tuple[float, str]] = []
    first_verdict = threading.Event()
    verdict_at: list[float] = []

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append((time.monotonic() - started, line.rstrip()))

    def read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line).get("kind") == "verdict" and not first_verdict.is_set():
                verdict_at.append(time.monotonic() - started)
                first_verdict.set()

    readers = [threading.Thread(target=read_err), threading.Thread(target=read_out)]
    for r in readers:
        r.start()
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while not first_verdict.is_set() and time.monotonic() < deadline and proc.poll() is None:
        children |= child_pids(proc.pid)
        time.sleep(0.05)
    children |= child_pids(proc.pid)
    proc.send_signal(signal.SIGTERM)  # no need to wait for the compile: it was seen going
    proc.wait(60)
    for r in readers:
        r.join(10)
    text = "\n".join(line for _, line in err)
    assert verdict_at, f"no verdict within 120 s:\n{text}"
    assert "Traceback" not in text, text
    assert proc.returncode == 128 + signal.SIGTERM, text
    assert "once per install" in text, text
    times = [0.0] + [t for t, _ in err if t < verdict_at[0]] + [verdict_at[0]]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) <= MAX_SILENCE_S, f"{max(gaps):.1f} s of silence:\n{text}"
    assert len(children) >= 3, "the virtual table, the interpreted worker and the warm-up"
    time.sleep(0.1)
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "children left"


# -- the switch to the compiled pipeline ---------------------------------------------------


class _Warmup:
    """Stands for warmup.Background: done when the test says so."""

    def __init__(self) -> None:
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode


def _chunks() -> list[tuple[bytes, int]]:
    from firmware_host.virtual_table import scenarios
    from firmware_host.virtual_table.hub import HubConfig, build_wire

    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(sensors="middle", seed=3))
    data = b"".join(wire.chunks)
    step = 2048
    return [(data[i : i + step], 10**9 + i * 20_000) for i in range(0, len(data), step)]


def _published(outcomes: list[Any]) -> list[dict[str, Any]]:
    return [item for o in outcomes for item in o.step.events + o.step.lines]


@pytest.fixture(scope="module")
def chunks() -> list[tuple[bytes, int]]:
    return _chunks()


@pytest.fixture(scope="module")
def compiled_run(chunks: list[tuple[bytes, int]]) -> list[dict[str, Any]]:
    engine = Compiled()
    out = []
    for data, rx in chunks:
        out += engine.feed(data, rx)
    return _published(out + engine.finish())


@pytest.mark.parametrize("switch_after", [0, 0.5, None])
def test_the_compiled_pipeline_takes_over_anywhere_and_publishes_the_same(
    chunks: list[tuple[bytes, int]], compiled_run: list[dict[str, Any]], switch_after: Any
) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-m", "firmware_host.interpreted"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    fake = _Warmup()
    engine = ColdStart(worker, fake)
    out = []
    try:
        for k, (data, rx) in enumerate(chunks):
            if switch_after is not None and k == int(switch_after * len(chunks)):
                fake.returncode = 0
            out += engine.feed(data, rx)
            if k % 4 == 0:
                time.sleep(0.01)  # let the worker answer some
                out += engine.idle(rx + 1_000_000)
        out += engine.finish()
    finally:
        engine.close()
    assert _published(out) == compiled_run
    assert all("ACK" not in o.tables for o in out), "ACKs are the sniffer's"
    if switch_after is None:
        assert engine.compiled is None and engine.decoder_stats()["frames"] > 0
    else:
        assert engine.compiled is not None and engine.disagreements == 0
    assert worker.wait(10) is not None


def test_the_ack_sniffer_finds_the_decoders_acks_however_the_bytes_are_cut() -> None:
    from protocol.decoder import StreamDecoder

    frames = [
        encode_frame("ACK", seq=1, t_us=10, acked_seq=7, acked_type=0x81, status=0),
        encode_frame("PING", node=0x80, seq=9, t_us=12500, token=0xDEADBEEF),
        b"\x13\x37garbage\x00",
        encode_frame("ACK", seq=2, t_us=20, acked_seq=8, acked_type=0x81, status=2),
        encode_frame("ACK", seq=3, t_us=30, acked_seq=9, acked_type=0x82, status=0)[:-3] + b"\x00",
        encode_frame("ACK", seq=4, t_us=40, acked_seq=10, acked_type=0x81, status=0),
    ]
    data = b"".join(frames)
    expected = [
        {k: int(rec[k]) for k in ("acked_seq", "acked_type", "status")}
        for rec in StreamDecoder().feed(data).tables["ACK"]
    ]
    assert [a["acked_seq"] for a in expected] == [7, 8, 10]
    for cut in range(len(data) + 1):
        sniffer = AckSniffer()
        got = sniffer.feed(data[:cut]) + sniffer.feed(data[cut:])
        assert got == expected, cut


def test_the_warm_marker_holds_only_for_the_same_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert warmup.marker_path() == tmp_path / warmup.MARKER
    assert not warmup.is_warm()
    warmup._write_marker(tmp_path / warmup.MARKER, warmup.fingerprint(), 1.0, warmup.CompileLog())
    assert warmup.is_warm()
    edited = [[*warmup._sources()[0][:2], 1]] + warmup._sources()[1:]
    monkeypatch.setattr(warmup, "_sources", lambda: edited)
    assert not warmup.is_warm(), "an edited source file: warm up again"
    (tmp_path / warmup.MARKER).write_text("{not json")
    assert not warmup.is_warm()
