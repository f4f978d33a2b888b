"""Both directions in a recording: the recorder keeps what the host sent (``.tx``), the
daemon's command link writes every frame through it, and ``decode`` and ``pcap`` show the
lamp commands and their ACKs in order, each marked with its direction."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from live_util import referee_live
from outside_parts import require
from proc_util import run_cli as cli

from firmware_host.link.recorder import CaptureRecorder, read_sent
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.hub import HubConfig, build_wire
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(15)  # alone, on an idle core: run first (conftest.py)


def ping(seq: int, flags: int = 0) -> bytes:
    return encode_frame("PING", node=0x80, seq=seq, t_us=seq, flags=flags, token=seq)


def test_sent_frames_are_kept_beside_their_part_in_order(tmp_path: Path) -> None:
    with CaptureRecorder(tmp_path, rx_times=True, max_bytes=100) as rec:
        rec.write(b"\x00" * 60, host_rx_ns=10)
        rec.write_sent(ping(1), 11)
        rec.write_sent(ping(1, flags=1), 12)  # a resend is kept too
        rec.write(b"\x00" * 60, host_rx_ns=20)  # a new part
        rec.write_sent(ping(2), 21)
    first, second = rec.paths
    assert [(s.rx_offset, s.host_ns, s.data) for s in read_sent(first)] == [
        (60, 11, ping(1)),
        (60, 12, ping(1, flags=1)),
    ]
    assert [(s.rx_offset, s.data) for s in read_sent(second)] == [(60, ping(2))]


def test_write_sent_from_many_threads_keeps_every_frame_whole(tmp_path: Path) -> None:
    with CaptureRecorder(tmp_path) as rec:
        threads = [
            threading.Thread(target=lambda k=k: [rec.write_sent(ping(k * 100 + i), i) for i in range(100)])
            for k in range(4)
        ]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    sent = read_sent(rec.path)
    assert sorted(s.data for s in sent) == sorted(
        ping(k * 100 + i) for k in range(4) for i in range(100)
    )


def test_a_record_cut_short_by_a_crash_is_left_out(tmp_path: Path) -> None:
    with CaptureRecorder(tmp_path) as rec:
        rec.write(b"\x00", 1)
        rec.write_sent(ping(1), 5)
        rec.write_sent(ping(2), 6)
    tx = rec.path.with_suffix(".tx")
    tx.write_bytes(tx.read_bytes()[:-3])
    assert [s.data for s in read_sent(rec.path)] == [ping(1)]
    assert read_sent(tmp_path / "no-such-part.bin") == []


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A daemon refereeing two shots on the virtual table, recording."""
    folder = tmp_path_factory.mktemp("rec")
    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(seed=3))
    referee_live(wire, folder)
    (part,) = sorted(folder.glob("*.bin"))
    return part


def test_the_daemon_records_every_frame_it_sent(recording: Path) -> None:
    sent = read_sent(recording)
    names = [json.loads(x)["type"] for x in cli("decode", "--json", str(recording)).stdout.splitlines()[:-1]
             if json.loads(x).get("direction") == "host"]  # fmt: skip
    assert len(names) == len(sent) and "SET_INDICATOR" in names
    assert all(s.host_ns > 0 and s.data.endswith(b"\x00") for s in sent)


def test_decode_shows_each_lamp_command_then_its_ack(recording: Path) -> None:
    done = cli("decode", "--json", str(recording))
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    summary = lines.pop()["summary"]
    assert {line["direction"] for line in lines} == {"host", "table"}
    host = [i for i, line in enumerate(lines) if line["direction"] == "host"]
    assert summary["host_frames"] == len(host)
    for i in host:
        cmd = lines[i]
        assert cmd["node"] == 0x80 and cmd["host_ns"] > 0
        if cmd["type"] != "SET_INDICATOR":
            continue
        ack = next(x for x in lines[i + 1 :] if x.get("type") == "ACK"
                   and x["fields"]["acked_seq"] == cmd["seq"])  # fmt: skip
        between = lines[i + 1 : lines.index(ack)]
        assert not [x for x in between if x["direction"] == "host" and x["seq"] != cmd["seq"]]
    text = cli("decode", str(recording)).stdout.splitlines()
    assert sum(x.startswith("-> ") for x in text) == len(host)
    assert any(x.startswith("<- ") and "ACK" in x for x in text)


def test_pcap_of_a_recording_has_both_directions_in_host_time(
    recording: Path, tmp_path: Path
) -> None:
    require("tshark")
    pcap = tmp_path / "both.pcapng"
    assert cli("pcap", str(recording), "-o", str(pcap)).returncode == 0
    done = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.packet_flags_direction"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    times = [float(t) for t, _ in rows]
    assert times == sorted(times)
    assert sum(int(d, 0) == 2 for _, d in rows) == len(read_sent(recording))  # outbound


@pytest.mark.parametrize("rx_times", [True, False])
def test_any_host_frame_is_shown_in_its_place(tmp_path: Path, rx_times: bool) -> None:
    """A referee page press kept as a host KEYPAD (node 0x80) decodes like any frame; the
    order is by host time with a .rxt, by where the stream stood without one."""
    table = [encode_frame("HEARTBEAT", seq=s, t_us=s, uptime_s=s, nodes_ok=1, rx_bad=0,
                          tx_dropped=0, indicator=0) for s in range(3)]  # fmt: skip
    press = encode_frame("KEYPAD", node=0x80, seq=9, t_us=0, key=6, arg=16)
    with CaptureRecorder(tmp_path, rx_times=rx_times) as rec:
        rec.write(table[0], host_rx_ns=100)
        rec.write(table[1], host_rx_ns=200)
        rec.write_sent(press, 250)
        rec.write(table[2], host_rx_ns=300)
        rec.write_sent(ping(1), 400)
    lines = [json.loads(x) for x in cli("decode", "--json", str(rec.path)).stdout.splitlines()]
    summary = lines.pop()["summary"]
    assert [(x["direction"], x["type"]) for x in lines] == [
        ("table", "HEARTBEAT"),
        ("table", "HEARTBEAT"),
        ("host", "KEYPAD"),
        ("table", "HEARTBEAT"),
        ("host", "PING"),
    ]
    assert lines[2]["node"] == 0x80 and lines[2]["fields"] == {"key": 6, "arg": 16}
    assert summary["host_frames"] == 2 and summary["frames"] == 3
    assert "->" in cli("decode", "--node", "128", str(rec.path)).stdout
