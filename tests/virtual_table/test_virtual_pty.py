"""The virtual table as a wire peer: a real pseudo-terminal any serial program can open.

These tests run in real time (the pty is the edge of the system, not a pure
core), at a raised ``speed`` to stay short.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
import serial

from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import ACK_BAD_ARGUMENT, ACK_OK, HubConfig, build_wire
from firmware_host.virtual_table.peer import VirtualHub
from firmware_host.virtual_table.scenarios import random_match
from protocol.framing import Message, encode_frame, parse_frame

pytestmark = pytest.mark.wall_s(15)  # alone, on an idle core: run first (conftest.py)

MINUTES = 0.5  # a short random match: break and a few shots


class Reader:
    """Frames from a serial port as they complete, with their arrival time."""

    def __init__(self, port: serial.Serial) -> None:
        self.port = port
        self.buffer = b""

    def frames(self, seconds: float) -> Iterator[tuple[float, object]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.buffer += self.port.read(max(1, self.port.in_waiting))
            *done, self.buffer = self.buffer.split(b"\x00")
            now = time.monotonic()
            for raw in filter(None, done):
                yield now, parse_frame(raw)

    def until(self, seconds: float, want) -> Message:
        for _, frame in self.frames(seconds):
            if isinstance(frame, Message) and want(frame):
                return frame
        raise AssertionError("not received in time")


def _set_indicator(seq: int, state: int, flags: int = 0, hold_ms: int = 0) -> bytes:
    return encode_frame(
        "SET_INDICATOR",
        node=0x80,
        seq=seq,
        flags=flags,
        t_us=0,
        state=state,
        rule=0,
        hold_ms=hold_ms,
    )


@pytest.fixture(scope="module")
def wire():
    return build_wire(random_match(seed=2, minutes=MINUTES), HubConfig(seed=4, sensors="full"))


@pytest.fixture
def hub(wire):
    with VirtualHub(wire, speed=4.0) as peer:
        yield peer


@pytest.fixture
def port(hub):
    with serial.Serial(hub.device, timeout=0.02) as p:
        yield p


def test_separate_process_serves_valid_frames_and_acks_set_indicator():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "firmware_host",
            "simulate",
            "--pty",
            "--seed",
            "2",
            "--minutes",
            str(MINUTES),
            "--speed",
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        device = proc.stdout.readline().strip()
        assert device.startswith("/dev/"), proc.stderr.read() if proc.poll() is not None else device
        with serial.Serial(device, timeout=0.02) as p:
            reader = Reader(p)
            got = [f for _, f in reader.frames(0.5)]
            assert len(got) > 20 and all(
                isinstance(f, Message) for f in got[1:]
            )  # the first may be cut
            p.write(_set_indicator(seq=41, state=3))
            ack = reader.until(1.0, lambda m: m.name == "ACK")
            assert (ack.fields["acked_seq"], ack.fields["acked_type"], ack.fields["status"]) == (
                41,
                0x80,
                ACK_OK,
            )
            beat = reader.until(1.0, lambda m: m.name == "HEARTBEAT")
            assert beat.fields["indicator"] == 3
    finally:
        proc.terminate()
        proc.wait(5)


def test_ack_within_20_ms_and_the_lamp_shows_in_heartbeat(port, hub):
    reader = Reader(port)
    list(reader.frames(0.1))
    delays = []
    for seq in range(5):
        sent = time.monotonic()
        port.write(_set_indicator(seq, state=2 + seq % 2))
        reader.until(0.5, lambda m, s=seq: m.name == "ACK" and m.fields["acked_seq"] == s)
        delays.append(time.monotonic() - sent)
    assert sorted(delays)[2] < 0.020
    assert reader.until(1.0, lambda m: m.name == "HEARTBEAT").fields["indicator"] == 2


@pytest.mark.parametrize(("state", "status"), [(4, ACK_OK), (9, ACK_BAD_ARGUMENT)])
def test_ack_status_follows_the_icd(port, state, status):
    port.write(_set_indicator(7, state=state))
    ack = Reader(port).until(1.0, lambda m: m.name == "ACK")
    assert ack.fields["status"] == status


def test_resend_with_the_same_seq_is_acked_again_but_applied_once(port, hub):
    reader = Reader(port)
    port.write(_set_indicator(20, state=3))
    reader.until(0.5, lambda m: m.name == "ACK")
    port.write(_set_indicator(21, state=5))
    reader.until(0.5, lambda m: m.name == "ACK")
    port.write(_set_indicator(20, state=3, flags=1))
    ack = reader.until(0.5, lambda m: m.name == "ACK")
    assert ack.fields["acked_seq"] == 20
    assert reader.until(1.0, lambda m: m.name == "HEARTBEAT").fields["indicator"] == 5


def test_acks_take_their_place_in_the_hub_seq_count(port):
    reader = Reader(port)
    list(reader.frames(0.2))
    for seq in range(3):
        port.write(encode_frame("PING", node=0x80, seq=seq, t_us=0, token=seq))
    port.write(encode_frame("REQUEST_HELLO", node=0x80, seq=3, t_us=0))
    hub_seqs, names = [], []
    for _, frame in reader.frames(0.6):
        if isinstance(frame, Message) and frame.node == 0:
            hub_seqs.append(frame.seq)
            names.append(frame.name)
    assert names.count("ACK") == 4 and "HELLO" in names
    assert all(b - a == 1 for a, b in itertools.pairwise(hub_seqs))


def test_playback_is_scheduled_from_one_start_time():
    # minimum sensors: few bytes, so the reader's own speed does not show in the timing
    wire = build_wire(random_match(seed=2, minutes=MINUTES), HubConfig(sensors="minimum"))
    with VirtualHub(wire, speed=8.0) as hub, serial.Serial(hub.device, timeout=0.02) as p:
        start = time.monotonic()
        beats = [
            (t, f)
            for t, f in Reader(p).frames(2.0)
            if isinstance(f, Message) and f.name == "HEARTBEAT"
        ]
    boot = wire.timeline.boots[0]
    late = [
        arrived - start - (beat.fields["uptime_s"] + boot.boot_s - wire.start_s) / 8.0
        for arrived, beat in beats
    ]
    assert len(beats) >= 14
    # A loaded machine may delay a read now and then, but lateness never accumulates.
    half = len(late) // 2
    assert np.median(late) < 0.05 and max(late) < 0.3
    assert abs(np.median(late[half:]) - np.median(late[:half])) < 0.03


def test_the_hub_finishes_when_the_scenario_ends(wire):
    hub = VirtualHub(wire, speed=200.0).start()
    try:
        deadline = time.monotonic() + 5
        while not hub.finished and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hub.finished
    finally:
        hub.close()


def test_the_device_is_a_real_tty():
    hub = VirtualHub(
        build_wire(random_match(seed=2, minutes=MINUTES), HubConfig(sensors="minimum"))
    )
    try:
        assert os.path.exists(hub.device)
        fd = os.open(hub.device, os.O_RDWR | os.O_NOCTTY)
        assert os.isatty(fd)
        os.close(fd)
    finally:
        hub.close()


@pytest.mark.parametrize(
    ("faults", "acked"), [(FaultPlan(), True), (FaultPlan(no_ack=((-1.0, 100.0),)), False)]
)
def test_no_ack_fault_applies_the_command_but_sends_no_ack(faults, acked):
    wire = build_wire(
        random_match(seed=2, minutes=MINUTES), HubConfig(sensors="minimum", faults=faults)
    )
    with VirtualHub(wire, speed=4.0) as hub, serial.Serial(hub.device, timeout=0.02) as p:
        reader = Reader(p)
        p.write(_set_indicator(3, state=4))
        names = [f.name for _, f in reader.frames(1.0) if isinstance(f, Message)]
    assert ("ACK" in names) == acked
    assert hub.commands.lamp(0.0) == 4


def test_loop_replays_the_match_as_a_hub_reboot():
    match = random_match(seed=2, minutes=0.1)
    first = build_wire(match, HubConfig(sensors="minimum", seed=1))
    hub = VirtualHub(
        first,
        speed=50.0,
        rewire=lambda n: build_wire(match, HubConfig(sensors="minimum", seed=1 + n)),
    )
    with hub, serial.Serial(hub.device, timeout=0.02) as p:
        hellos = [
            f for _, f in Reader(p).frames(1.5) if isinstance(f, Message) and f.name == "HELLO"
        ]
    assert len(hellos) >= 2
    assert len({h.fields["boot_id"] for h in hellos}) == len(hellos)
    assert all(h.seq == 0 for h in hellos)
