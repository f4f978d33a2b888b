"""A tracker flooding the link (issue 29 point 3): dropped by its rate limit, reported, and
refereed as a table without a tracker meanwhile; never a false foul, memory flat.

The flood is the virtual table's ``flood-tracker:RATE@FROM-TO`` fault: the tracker's own
frames (its node, seq counter and clock), 16 balls each at random places, all moving.
Its frames take no time on the virtual link (faults.py): 30 000 of them a second is
3.5 MB/s, beyond a 921 600-baud UART; the link stands for a USB one that carries them
beside the match, so the table's own frames leave when they would without the flood and
the verdicts of the two matches can be compared shot by shot.  Every figure is on the
match's clock (frames per match second, the flood's window), never the test's wall clock.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import pytest
from live_util import false_fouls
from proc_util import run_cli

from firmware_host.pipeline import Pipeline, replay
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire

SEED, MINUTES = 5, 0.5  # two shots, the first struck at 15 s and over at 26 s
# match seconds the tracker floods: the first shot's end and the table at rest after it,
# where the flood's moving balls made foul 17 before the limits (and foul 17 between shots)
FLOOD_S = (22.0, 25.0)
RSS_SLACK_KB = 20 * 1024
#: a loaded host reads the pty late, the table's buffer drops flood frames and the rate
#: seen can dip below the limit for a while: the flood then ends and starts again, truly
EPISODES_MAX = 5

pytestmark = pytest.mark.wall_s(45)  # three matches on ptys at once: run first (conftest.py)


@cache
def _match():
    return scenarios.random_match(seed=SEED, minutes=MINUTES)


def _replayed(rate: float | None):
    floods = ((rate, *FLOOD_S),) if rate else ()
    cfg = HubConfig(seed=SEED, faults=FaultPlan(floods=floods))
    pipe = Pipeline()
    step = replay(b"".join(build_wire(_match(), cfg).chunks), pipe=pipe)
    return step, pipe.decoder.stats()


@pytest.mark.parametrize("rate", [5_000.0, 30_000.0])
def test_a_flooded_tracker_is_set_aside_and_costs_no_false_foul(rate):
    """Replayed (the same pipeline as run): the flood's frames are counted per node, the
    tracker is 'flooded' from just before them to a second after, and no verdict is a
    foul the match without the flood did not have."""
    plain, plain_stats = _replayed(None)
    flooded, stats = _replayed(rate)
    assert plain_stats.over_rate == {}
    # the flood's frames and the tracker's own 120 a second while it floods and for the
    # second of calm after it, but the two its burst let through
    seconds = FLOOD_S[1] - FLOOD_S[0]
    dropped = rate * seconds + 120 * seconds
    assert dropped - 2 <= stats.over_rate["tracker"] <= dropped + 120 * 1.1
    status = [(e["node"], e["status"]) for e in flooded.events if e["type"] == "node_status"]
    assert status == [("tracker", "flooded"), ("tracker", "online")]
    assert false_fouls(flooded.lines, plain.lines) == []
    verdicts = [v for v in flooded.lines if v.get("kind") == "verdict"]
    assert len(verdicts) >= len([v for v in plain.lines if v.get("kind") == "verdict"]) - 1
    assert stats.lost == plain_stats.lost  # what the limit dropped is never called lost


def test_decode_stats_and_replay_name_the_flood(tmp_path):
    """The link tools on a flooded capture: decode marks each dropped frame OVER RATE and
    counts them in its summary, stats notes them, replay says so on stderr (decode and
    replay exit 1, as for any input that held errors)."""
    cfg = HubConfig(seed=SEED, faults=FaultPlan(floods=((5_000.0, 8.0, 8.2),)))
    capture = tmp_path / "flooded.bin"
    capture.write_bytes(b"".join(build_wire(_match(), cfg).chunks))
    decode = run_cli("decode", "--node", "4", str(capture))
    assert decode.returncode == 1, decode.stderr
    assert "OVER RATE (dropped: its node floods the link)" in decode.stdout
    assert "over rate from tracker" in decode.stdout
    stats = json.loads(run_cli("stats", "--json", str(capture)).stdout)
    assert stats["over_rate"]["tracker"] >= 1000  # a note, as seq conflicts are
    assert any("rate limit" in note for note in stats["notes"])
    replayed = run_cli("replay", str(capture))
    assert replayed.returncode == 1 and "beyond their node's rate limit" in replayed.stderr


def flood_episodes(log: str) -> int:
    """How many floods the log tells, each a start then its end; -1 if they do not pair."""
    said = re.findall(r"tracker (floods the link|keeps to its rate limit again)", log)
    n = len(said) // 2
    return n if said == ["floods the link", "keeps to its rate limit again"] * n else -1


def _run_daemon(faults: str | None) -> tuple[list[dict], str, int]:
    """``firmware-host run`` refereeing its virtual table on a pty; its verdict lines, its
    log, and its peak RSS (kB: VmHWM of the run process alone, not its virtual table's)."""
    cmd = [sys.executable, "-m", "firmware_host", "run", "--seed", str(SEED)]
    cmd += ["--minutes", str(MINUTES), "--speed", "2", "--json"]
    cmd += ["--faults", faults] if faults else []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as f:
                    hwm = [line for line in f if line.startswith("VmHWM:")]
                peak[0] = max(peak[0], int(hwm[0].split()[1]))
            except (OSError, IndexError):
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    out, err = proc.communicate(timeout=240)
    watcher.join()
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()], err, peak[0]


def test_run_on_a_pty_with_a_flooding_tracker_reports_it_and_stays_flat():
    """The real daemon on a real pty, the flood at 5 000 and 30 000 extra frames a second
    for 3 s of the match: no false foul, the flood in the log by episodes (each start
    and its end, never a line per frame dropped) and in the closing summary's counts, peak RSS within 20 MB of the match without
    the flood."""
    rates = (5_000, 30_000)
    faults = [None, *(f"flood-tracker:{rate}@{FLOOD_S[0]:g}-{FLOOD_S[1]:g}" for rate in rates)]
    with ThreadPoolExecutor(len(faults)) as pool:  # three tables at once: each its own pty
        (plain, _, plain_kb), *flooded = pool.map(_run_daemon, faults)
    assert [v for v in plain if v.get("kind") == "verdict"], "the daemon gave no verdict"
    for rate, (lines, err, kb) in zip(rates, flooded, strict=True):
        assert false_fouls(lines, plain) == [], rate
        assert flood_episodes(err) in range(1, EPISODES_MAX + 1), err
        assert kb - plain_kb <= RSS_SLACK_KB, (rate, kb, plain_kb)


@pytest.mark.parametrize("item", ["flood-tracker:0@1", "flood-tracker:nan@1", "flood-tracker:x@1"])
def test_a_bad_flood_item_is_one_line_and_status_2(item):
    with pytest.raises(ValueError, match="bad fault"):
        FaultPlan.parse(item)
    done = run_cli("run", "--faults", item)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"firmware-host run: --faults: bad fault '{item}'")
