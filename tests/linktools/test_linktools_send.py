"""`send` and `ping` against the virtual table on a real pseudo-terminal (ICD §5):
the ACK and its round trip; a silent table gets 3 resends, then a failure and status 1;
a wrong type, field, value or range is one line naming it and status 2."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from proc_util import run_cli as cli

from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, Wire, build_wire
from firmware_host.virtual_table.peer import VirtualHub
from firmware_host.virtual_table.scenarios import random_match

pytestmark = pytest.mark.wall_s(5)  # alone, on an idle core: run first (conftest.py)

MINUTES = 0.5


def wire(faults: FaultPlan) -> Wire:
    return build_wire(random_match(seed=2, minutes=MINUTES), HubConfig(seed=4, faults=faults))


@pytest.fixture(scope="module")
def healthy() -> Iterator[VirtualHub]:
    with VirtualHub(wire(FaultPlan())) as hub:
        yield hub


@pytest.fixture(scope="module")
def silent() -> Iterator[VirtualHub]:
    # silent from its boot (half a second before the match) to well after the match
    with VirtualHub(wire(FaultPlan(no_ack=((-10.0, 1000.0),)))) as hub:
        yield hub


ACKED = re.compile(r"ACK (\w+) seq (\d+): status 0 \(ok\), round trip (\d+\.\d\d) ms")


def test_send_prints_the_ack_and_its_round_trip(healthy: VirtualHub) -> None:
    done = cli("send", "--port", healthy.device, "--seq", "300", "SET_INDICATOR",
               "state=foul", "rule=18", "hold_ms=2000")  # fmt: skip
    assert done.returncode == 0, done.stderr
    name, seq, rtt = ACKED.search(done.stdout).groups()
    assert (name, seq) == ("SET_INDICATOR", "300") and 0 < float(rtt) < 50
    assert healthy.commands.indicator == 3  # the lamp the hub shows now: foul


def test_ping_prints_every_round_trip_and_their_distribution(healthy: VirtualHub) -> None:
    done = cli("ping", "--port", healthy.device, "--count", "5", "--interval", "0")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [ACKED.search(x).group(1) for x in lines[:5]] == ["PING"] * 5
    summary = re.search(r"5 PINGs, 5 answered, 0 without ACK; round trip "
                        r"min/median/p95/max ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", lines[5])  # fmt: skip
    q = [float(x) for x in summary.groups()]
    assert q == sorted(q) and q[-1] < 50


@pytest.mark.parametrize("argv", [["send", "PING", "token=7"], ["ping", "--count", "1"]])
def test_a_silent_table_gets_three_resends_then_a_failure(
    silent: VirtualHub, argv: list[str]
) -> None:
    done = cli(*argv, "--port", silent.device)
    assert done.returncode == 1
    assert done.stdout.count("resent PING seq 0 (flags bit 0") == 3
    assert "no ACK for PING seq 0 after 4 transmissions (3 resends, 50 ms apart)" in done.stdout


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["HELLO"], "HELLO: not a host command (one of SET_INDICATOR, REQUEST_HELLO, PING, SETUP_SIGNING)"),
        (["PING", "tok=1"], "PING has no field 'tok' (its fields: token)"),
        (["PING", "token=0x100000000"], "token=0x100000000: out of range, 0 to 4294967295 (u32)"),
        (["PING", "token=-1"], "token=-1: out of range"),
        (["PING"], "PING: token=VALUE is missing"),
        (["PING", "token"], "token: not FIELD=VALUE"),
        (["SET_INDICATOR", "state=red", "rule=0", "hold_ms=0"],
         "state=red: not a number or one of off, ready, legal, foul"),
        (["SET_INDICATOR", "state=3", "rule=256", "hold_ms=0"], "rule=256: out of range, 0 to 255"),
        (["REQUEST_HELLO", "token=1"], "REQUEST_HELLO has no field 'token' (its fields: none)"),
    ],
)  # fmt: skip
def test_a_wrong_command_is_one_line_naming_it(
    healthy: VirtualHub, words: list[str], says: str
) -> None:
    done = cli("send", "--port", healthy.device, *words)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"firmware-host send: {says}") and done.stderr.count("\n") == 1


def test_send_without_a_port_says_so() -> None:
    done = cli("send", "PING", "token=1")
    assert done.returncode == 2
    assert done.stderr == "firmware-host send: --port URL is needed: the table to send to\n"
