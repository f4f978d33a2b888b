"""``monitor`` as a person uses it: in a real terminal (tmux), on a capture and on a live pty.

The expectations come from the virtual table's frame truth, never from the
decoder under test: the true rate of a row is its frames' exact hub times,
the injected bad frames are the capture's bytes no true frame covers (cut at
their delimiters) plus the frames the faults damaged, and the lost frames
are the gaps in each node's true ``seq`` (the hub dropping in a stall) plus
the damaged frames.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from outside_parts import require

from firmware_host.link.recorder import RX_TIMES_DTYPE
from firmware_host.linkwatch.player import CapturePlayer
from firmware_host.linkwatch.tally import LinkTally, NodeHealth
from firmware_host.virtual_table.capture import load_frame_truth
from firmware_host.virtual_table.sensors import DAMAGED
from protocol.catalogue import BY_TYPE, FLAG_RETRANSMISSION, NODE_IDS, NODE_NAMES
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(65)  # alone, on an idle core: run first (conftest.py)

RATE_TOLERANCE = 0.05  # the bound on a shown rate against the true one
STEADY_FRAMES = 10  # rows with at least this many frames in the window are periodic
WINDOW_US = 5_000_000  # the monitor's rate window (tally.RATE_WINDOW_US)
CAPTURE_FAULTS = "garbage@10,drop@15,stall@20-23,garbage@40,reboot@45"
PTY_FAULTS = "garbage@4,drop@7,garbage@11"
MONITOR = [sys.executable, "-m", "firmware_host", "monitor"]
SIMULATE = [sys.executable, "-m", "firmware_host", "simulate"]

ROW = re.compile(r"^\s*(\w+)\s+([A-Z_]+)\s+(\d+)\s+([\d.]+)\s+[\d.]+ (?:s|min)\b")
NODE_ROW = re.compile(r"^\s*(\w+)\s+(\d+)(?: !)?\s+(\d+)\s+(?:-|[-\d.]+)\s+")
BAD = re.compile(r"bad frames: (.*?)  unknown")


@dataclass(frozen=True)
class Truth:
    """What the virtual table put on the wire, from its frame truth."""

    capture: Path
    rates: dict[tuple[str, str], float]  # (node, type) -> true Hz at the end of the stream
    bad: int
    lost: dict[str, int]


def _true_rates(frames: np.ndarray) -> dict[tuple[str, str], float]:
    """Each periodic row's rate over the window ending at its last frame, on true hub time."""
    rates = {}
    for node, msg_type in {(int(f["node"]), int(f["msg_type"])) for f in frames}:
        mine = frames[(frames["node"] == node) & (frames["msg_type"] == msg_type)]
        t = mine["stamp_hub_us"][mine["boot"] == mine["boot"][-1]]
        t = t[t > t[-1] - WINDOW_US]
        if len(t) >= STEADY_FRAMES:
            rates[NODE_NAMES[node], BY_TYPE[msg_type].name] = (len(t) - 1) * 1e6 / (t[-1] - t[0])
    return rates


def _truth(capture: Path, frame_truth: Path) -> Truth:
    data = capture.read_bytes()
    frames, _ = load_frame_truth(frame_truth)
    written = frames[frames["offset"] >= 0]
    covered = np.zeros(len(data), bool)
    for offset, length in zip(written["offset"].tolist(), written["length"].tolist()):
        covered[offset : offset + length] = True
    edges = np.flatnonzero(np.diff(np.concatenate(([0], (~covered).view(np.int8), [0]))))
    garbage = [data[a:b] for a, b in zip(edges[::2], edges[1::2])]
    damaged = written["note"] == DAMAGED
    bad = sum(len([p for p in g.split(b"\0") if p]) for g in garbage) + int(damaged.sum())
    received = written[~damaged]
    lost: dict[str, int] = {}
    for boot in np.unique(received["boot"]):
        for node in np.unique(received["node"]):
            seq = received["seq"][(received["boot"] == boot) & (received["node"] == node)]
            gaps = int((np.diff(seq.astype(np.int64)) % 65536 - 1).sum()) if len(seq) else 0
            if gaps:
                name = NODE_NAMES[int(node)]
                lost[name] = lost.get(name, 0) + gaps
    return Truth(capture, _true_rates(received), bad, lost)


def _simulate_capture(out: Path, minutes: float, faults: str, seed: int) -> Truth:
    capture, frame_truth = out / "match.bin", out / "match.npz"
    subprocess.run(
        [*SIMULATE, "--capture", str(capture), "--frame-truth", str(frame_truth)]
        + ["--minutes", str(minutes), "--faults", faults, "--seed", str(seed)],
        check=True,
    )
    return _truth(capture, frame_truth)


@pytest.fixture(scope="module")
def match(tmp_path_factory: pytest.TempPathFactory) -> Truth:
    """A one-minute full-sensor match with every kind of wire fault and a hub stall."""
    return _simulate_capture(tmp_path_factory.mktemp("monitor"), 1.0, CAPTURE_FAULTS, 3)


class Terminal:
    """One tmux server of our own (its own socket), 200 x 50, running one command."""

    def __init__(self, command: list[str]) -> None:
        require("tmux")
        self.socket = f"monitor-test-{uuid.uuid4().hex[:12]}"
        # the shell line stays after the command, with its exit status, for the test to read
        line = f"{shlex.join(command)}; echo exit status $?; sleep 60"
        self._tmux("new-session", "-d", "-x", "200", "-y", "50", line)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True
        ).stdout

    def screen(self, escapes: bool = False) -> str:
        """The pane's text; with ``escapes``, its colours as SGR sequences too."""
        return self._tmux("capture-pane", "-p", *(("-e",) if escapes else ()))

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def wait_for(self, ready: Callable[[str], bool], timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            screen = self.screen()
            if ready(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed what was awaited:\n{screen}")
            time.sleep(0.2)

    def wait_for_still(self, ready: Callable[[str], bool], timeout_s: float = 60.0) -> str:
        """The screen once ``ready`` and unchanged over half a second: a loaded machine can
        leave the view half redrawn (its new header over the last frame's rows) when read."""
        deadline = time.monotonic() + timeout_s
        screen = self.wait_for(ready, timeout_s)
        while True:
            time.sleep(0.5)
            again = self.screen()
            if again == screen and ready(again):
                return again
            assert time.monotonic() < deadline, f"the screen never held still:\n{again}"
            screen = again

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False, capture_output=True)


@contextmanager
def terminal(command: list[str]) -> Iterator[Terminal]:
    term = Terminal(command)
    try:
        yield term
    finally:
        term.close()


def rows(screen: str) -> dict[tuple[str, str], tuple[int, float]]:
    """The message rows on the screen: (node, type) -> (count, rate Hz)."""
    found = {}
    for line in screen.splitlines():
        if m := ROW.match(line):
            found[m[1], m[2]] = (int(m[3]), float(m[4]))
    return found


def nodes(screen: str) -> dict[str, int]:
    """The node rows on the screen: node -> lost frames."""
    found = {}
    for line in screen.splitlines():
        m = NODE_ROW.match(line)
        if m and m[1] in NODE_IDS:
            found[m[1]] = int(m[2])
    return found


def bad_total(screen: str) -> int:
    m = BAD.search(screen)
    assert m, screen
    return sum(int(n) for n in re.findall(r"\d+", m[1]))


def shows_bytes(screen: str) -> int:
    return int(re.search(r"(\d+) bytes", screen)[1])


def _assert_counts_and_rates(screen: str, truth: Truth) -> None:
    shown = rows(screen)
    assert truth.rates and set(truth.rates) <= set(shown), screen
    for key, rate in truth.rates.items():
        assert abs(shown[key][1] - rate) <= RATE_TOLERANCE * rate, (key, shown[key], rate)
    assert bad_total(screen) == truth.bad
    lost = {node: n for node, n in nodes(screen).items() if n}
    assert lost == truth.lost


def test_a_capture_played_faster_shows_true_rates_and_the_injected_losses(match: Truth) -> None:
    with terminal([*MONITOR, str(match.capture), "--speed", "15"]) as term:
        screen = term.wait_for_still(lambda s: "capture ended" in s)
        _assert_counts_and_rates(screen, match)
        assert "PAUSED" not in screen
        # the fields a row's newest frame changed are highlighted (yellow ground), old ones not
        coloured = {
            m[2]: line
            for line in term.screen(escapes=True).splitlines()
            if (m := ROW.match(re.sub(r"\x1b\[[0-9;]*m", "", line)))
        }
        assert re.search(r"43mframe=", coloured["BALL_TRACK"])
        assert "43m" not in coloured["HELLO"]  # the last boot was 15 s before the end

        # the capture has ended: each key's screen is read once whole (a loaded machine can
        # leave it half redrawn, the new header over the last view's rows)
        term.keys("c")  # only the rows that changed in the last seconds
        screen = term.wait_for_still(lambda s: "only rows changed" in s)
        assert ("tracker", "BALL_TRACK") in rows(screen) and ("hub", "HELLO") not in rows(screen)
        term.keys("c")

        term.keys("/", "tracker", "Enter")
        screen = term.wait_for_still(lambda s: "filter 'tracker'" in s)
        assert {node for node, _ in rows(screen)} == {"tracker"}

        term.keys("s", "s")  # node -> type -> rate
        screen = term.wait_for_still(lambda s: "sort rate" in s)
        term.keys("/", "Enter")  # an empty filter shows every row again
        screen = term.wait_for_still(lambda s: "filter" not in s.split("messages")[0])
        rates = [rate for _, rate in rows(screen).values()]
        assert len(rates) > 5 and rates == sorted(rates, reverse=True)

        term.keys("x")
        screen = term.wait_for_still(lambda s: "raw: the last" in s)
        hex_lines = re.findall(r"^\s*\d+ B  ((?:[0-9a-f]{2} )+)", screen, re.MULTILINE)
        assert len(hex_lines) >= 4, screen

        term.keys("q")
        term.wait_for(lambda s: "exit status 0" in s, 10)


def test_pause_holds_the_capture_and_resumes_where_it_stopped(match: Truth) -> None:
    with terminal([*MONITOR, str(match.capture), "--speed", "2"]) as term:
        term.wait_for(lambda s: rows(s).get(("tracker", "BALL_TRACK"), (0, 0))[0] > 200)
        term.keys("p")
        paused = term.wait_for(lambda s: "PAUSED" in s, 5)
        held = shows_bytes(paused)
        time.sleep(1.5)
        assert shows_bytes(term.screen()) == held
        term.keys("p")
        term.wait_for(lambda s: "PAUSED" not in s and shows_bytes(s) > held, 5)
        # the play went on from where it stopped: about a second more of the capture
        assert shows_bytes(term.screen()) < held + 20 * 15_500 * 2
        term.keys("q")
        term.wait_for(lambda s: "exit status 0" in s, 10)


def test_command_line_filters_select_rows_from_the_start(match: Truth) -> None:
    cmd = [*MONITOR, str(match.capture), "--speed", "30", "--node", "0", "--type", "clock_sync"]
    with terminal(cmd) as term:
        screen = term.wait_for_still(lambda s: "capture ended" in s)
        assert set(rows(screen)) == {("hub", "CLOCK_SYNC")}
        term.keys("q")
        term.wait_for(lambda s: "exit status 0" in s, 10)


def test_a_live_virtual_table_on_a_pty(tmp_path: Path) -> None:
    minutes, seed, speed = 0.5, 5, 2
    truth = _simulate_capture(tmp_path, minutes, PTY_FAULTS, seed)
    table = subprocess.Popen(
        [*SIMULATE, "--pty", "--wait-host", "--speed", str(speed), "--minutes", str(minutes)]
        + ["--faults", PTY_FAULTS, "--seed", str(seed)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        device = table.stdout.readline().strip()
        with terminal([*MONITOR, "--port", device]) as term:
            term.wait_for(lambda s: "link open" in s)
            fd = os.open(device, os.O_WRONLY | os.O_NOCTTY)  # the host's first frame boots it
            os.write(fd, encode_frame("PING", node=0x80, seq=1, t_us=0, token=1))
            os.close(fd)
            # live, mid-match: the rates of the periodic rows, on the senders' clocks
            live = term.wait_for(lambda s: rows(s).get(("tracker", "BALL_TRACK"), (0,))[0] > 2000)
            shown = rows(live)
            for key, rate in truth.rates.items():
                assert abs(shown[key][1] - rate) <= RATE_TOLERANCE * rate, (key, shown[key], rate)
            assert "PAUSED" not in live
            term.keys("p")
            paused = term.wait_for(lambda s: "PAUSED" in s, 5)
            time.sleep(1.0)
            assert rows(term.screen()) == rows(paused)  # the view holds; the reader goes on
            term.keys("p")
            assert table.stdout.readline().strip() == "match over"
            time.sleep(1.0)  # the last bytes reach the screen
            end = term.wait_for(lambda s: "PAUSED" not in s)
            assert bad_total(end) == truth.bad
            assert {node: n for node, n in nodes(end).items() if n} == truth.lost
            term.keys("q")
            term.wait_for(lambda s: "exit status 0" in s, 10)
    finally:
        table.terminate()
        table.wait(10)


# -- the pace of a capture, without a terminal -----------------------------------


class PacedTally(LinkTally):
    """A real tally that also notes when each chunk reached it (host clock) and at what time,
    and how long the player spent in it (what a loaded CPU makes the play fall behind by)."""

    def __init__(self) -> None:
        super().__init__()
        self.fed: list[tuple[float, int, int]] = []  # (host s, source ns, bytes)
        self.busy_s = 0.0

    def feed(self, data: bytes, now_ns: int) -> int:
        start = time.monotonic()
        self.fed.append((start, now_ns, len(data)))
        try:
            return super().feed(data, now_ns)
        finally:
            self.busy_s += time.monotonic() - start


def _play(path: Path, speed: float) -> tuple[PacedTally, float]:
    tally = PacedTally()
    player = CapturePlayer(str(path), tally, speed)
    start = time.monotonic()
    player.start()
    assert player.finished.wait(120)
    player.stop()
    return tally, time.monotonic() - start


def test_without_rxt_a_capture_plays_at_the_pace_of_its_hub_stamps(match: Truth) -> None:
    speed = 30.0
    frames, _ = load_frame_truth(match.capture.with_suffix(".npz"))
    hub = frames[frames["node"] == 0]
    # each boot's hub time runs from its first stamp to its last; a reboot is no wait
    span_s = sum(
        np.ptp(hub["stamp_hub_us"][hub["boot"] == boot]) / 1e6 for boot in np.unique(hub["boot"])
    )
    tally, elapsed = _play(match.capture, speed)
    assert sum(n for _, _, n in tally.fed) == match.capture.stat().st_size
    # never ahead of the stamps; behind them only by the time the tally took (on a loaded
    # machine, most of it waiting for a core) and one late wake-up: a wait that adds up
    # (sleeping a chunk's step after feeding it, or a wrong speed) would be seconds behind
    assert span_s / speed * 0.97 <= elapsed <= span_s / speed * 1.05 + tally.busy_s + 0.5


def test_with_rxt_each_chunk_comes_when_it_was_recorded(match: Truth, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    data = match.capture.read_bytes()[:200_000]
    cuts = np.sort(rng.choice(np.arange(1, len(data)), 29, replace=False))
    offsets = np.concatenate(([0], cuts))
    gaps_ns = rng.uniform(0.01, 0.2, len(offsets)) * 1e9
    rx = np.zeros(len(offsets), RX_TIMES_DTYPE)
    rx["offset"] = offsets
    rx["host_rx_ns"] = 5_000_000_000 + np.cumsum(gaps_ns).astype(np.int64)
    capture = tmp_path / "part.bin"
    capture.write_bytes(data)
    rx.tofile(capture.with_suffix(".rxt"))
    speed = 2.0
    tally, _ = _play(capture, speed)
    sizes = np.diff(np.append(offsets, len(data)))
    assert [n for _, _, n in tally.fed] == sizes.tolist()
    assert [ns for _, ns, _ in tally.fed] == rx["host_rx_ns"].tolist()  # the recorded time
    host = np.array([t for t, _, _ in tally.fed])
    late = (host - host[0]) - (rx["host_rx_ns"] - rx["host_rx_ns"][0]) / 1e9 / speed
    # never early; behind only by a wake-up and what the tally took (a loaded machine's wait)
    assert -0.01 <= late.min() and late.max() < 0.3 + tally.busy_s


@pytest.mark.parametrize(
    ("node", "drift_ppm", "uncertainty_us", "flags"),
    [
        (1, 99.0, 20.0, (False, False)),  # a rail and the hub both 49.5 ppm off: in the datasheet
        (1, -101.0, 20.0, (True, False)),  # more than two crystals of ±50 ppm can differ
        (3, 140.0, 20.0, (False, False)),  # the cue's crystal is ±100 ppm
        (3, 151.0, 20.0, (True, False)),
        (4, 1.0, 100.0, (False, False)),  # the ICD's bound on the mapping is 100 µs
        (4, 1.0, 100.5, (False, True)),
    ],
)
def test_node_flags_follow_the_datasheet(
    node: int, drift_ppm: float, uncertainty_us: float, flags: tuple[bool, bool]
) -> None:
    health = NodeHealth(node, 0, 0, 0.0, drift_ppm, uncertainty_us)
    assert (health.drift_flagged, health.uncertainty_flagged) == flags


# -- bad input: one line naming it, status 2 ---------------------------------------


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ((), "CAPTURE or --port"),
        (("x.bin", "--port", "loop://"), "CAPTURE or --port"),
        (("-",), "-:"),
        (("{tmp}/absent.bin",), "absent.bin"),
        (("{tmp}",), "{tmp}"),
        (("{capture}", "--type", "NOPE"), "--type NOPE"),
        (("{capture}", "--speed", "0"), "--speed"),
        (("{capture}", "--node", "300"), "--node"),
        (("--port", "loop://", "--speed", "3"), "--speed"),
        (("--port", "/dev/no-such-tty"), "/dev/no-such-tty"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    args: tuple[str, ...], names: str, match: Truth, tmp_path: Path
) -> None:
    fill = {"tmp": str(tmp_path), "capture": str(match.capture)}
    done = subprocess.run(
        [*MONITOR, *(a.format(**fill) for a in args)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and names.format(**fill) in done.stderr, done.stderr


# -- the tally's figures, fed directly -----------------------------------------------


def _tally_of(capture: Path, chunk: int = 4096) -> LinkTally:
    data = capture.read_bytes()
    tally = LinkTally()
    for i in range(0, len(data), chunk):
        tally.feed(data[i : i + chunk], i)  # source time: one ns a byte, never stale
    return tally


def test_rates_and_clocks_through_a_clock_wrap(tmp_path: Path) -> None:
    """Every clock starts just below 2**32: stamps wrap mid-capture, rates and drifts hold."""
    capture, frame_truth = tmp_path / "wrap.bin", tmp_path / "wrap.npz"
    subprocess.run(
        [*SIMULATE, "--capture", str(capture), "--frame-truth", str(frame_truth), "--near-wrap"]
        + ["--minutes", "0.5", "--seed", "2"],
        check=True,
    )
    frames, clocks = load_frame_truth(frame_truth)
    assert (np.diff(frames["t_us"][frames["node"] == 4].astype(np.int64)) < 0).any()  # wrapped
    snap = _tally_of(capture).snapshot()
    shown = {(NODE_NAMES[r.node], r.name): r.rate_hz for r in snap.rows}
    for key, rate in _true_rates(frames).items():
        assert shown[key] == pytest.approx(rate, rel=RATE_TOLERANCE), key
    ppm = clocks["clock_ppm"]
    for health in snap.nodes:
        if health.node:  # each node's crystal against the hub's, as the truth set them
            assert health.drift_ppm == pytest.approx(ppm[health.node] - ppm[0], abs=1.0)
            assert not health.drift_flagged and not health.uncertainty_flagged


def test_retransmissions_are_counted_per_node_delivered_or_not() -> None:
    def frame(seq: int, flags: int = 0) -> bytes:
        return encode_frame(
            "CUSHION_HIT",
            node=1,
            seq=seq,
            flags=flags,
            t_us=1000 * seq,
            cushion=1,
            pos_mm=100,
            amplitude=seq,
        )

    tally = LinkTally()
    # seq 2 arrives only as a retransmission; seq 3 arrives, then again as a retransmission
    tally.feed(frame(1) + frame(2, FLAG_RETRANSMISSION) + frame(3), 0)
    tally.feed(frame(3, FLAG_RETRANSMISSION) + frame(4) + b"\x01\x02\x03\x00", 1)
    snap = tally.snapshot()
    rails = {h.node: h for h in snap.nodes}[NODE_IDS["rails"]]
    assert (rails.retransmissions, rails.lost) == (2, 0)
    assert snap.duplicates == 1 and sum(snap.bad.values()) == 1
    (row,) = snap.rows
    assert (row.count, row.fields["amplitude"], row.changed) == (4, 4, frozenset({"amplitude"}))
