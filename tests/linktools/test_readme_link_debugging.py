"""The README's "Debugging the serial link" walk-through, run as a newcomer would run it.

Every command of the section's shell block runs in order in one directory,
against the virtual table on a pty as ``PORT`` (the block's ``PORT=`` line
names a real device); a command the block runs "until Ctrl-C" gets SIGINT
after a few seconds.  Each must finish as the section says and print what
it promises.  ``monitor`` is another helper's command: it runs once it exists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from outside_parts import require

pytestmark = pytest.mark.wall_s(35)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
SECTION = re.compile(r"^## Debugging the serial link\n(.*?)^## ", re.DOTALL | re.MULTILINE)
BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
RUN_FOR_S = {"monitor": 8.0, "run": 12.0}  # "until Ctrl-C": how long before the SIGINT, at least
RECORDED_BYTES = 40_000  # run: and until its recording holds this much (a loaded machine takes
# seconds to import and start it; the ACKs to its first frames must be in the recording)

# What each command must show: exit statuses allowed, and a pattern in its output.
PROMISES: dict[str, tuple[set[int], str]] = {
    "ports": ({0}, r"device|no serial ports"),
    "monitor": ({0, 130}, r"."),
    "run": ({130}, r""),
    "stats": ({0, 1}, r"problems? found"),
    "send": ({0}, r"ACK SET_INDICATOR seq \d+: status 0 \(ok\), round trip"),
    "ping": ({0}, r"20 PINGs, 20 answered, 0 without ACK; round trip min/median/p95/max"),
    # the ACKs to run's own frames (REQUEST_HELLO, the lamp): host time, body bytes
    "decode": ({0, 1}, r"<- +\d+\.\d{6} +\d+  hub +\d+ +\d+  ACK .*\n +body  01 04 00"),
    "pcap": ({0}, r"packets \([1-9]\d* sent by the host\), host times"),
    "dissector": ({0}, r""),
    "tshark": ({0}, r"TABLE .*SET_INDICATOR|TABLE .*REQUEST_HELLO"),
}


def commands() -> list[str]:
    section = SECTION.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert section, "the README has no 'Debugging the serial link' section"
    lines = BLOCK.search(section.group(1)).group(1).splitlines()
    return [line for line in lines if line.strip()]


def program(line: str) -> str:
    words = line.split()
    return words[1] if words[0] == "firmware-host" else words[0]


@pytest.fixture(scope="module")
def port() -> Iterator[str]:
    table = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "simulate", "--pty", "--loop", "--speed", "4",
         "--minutes", "10"],  # no reboot during the test (a reboot is a silent second)
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield table.stdout.readline().strip()
    finally:
        table.terminate()
        table.wait(10)


def test_the_section_names_every_step() -> None:
    steps = [program(line) for line in commands() if not line.startswith("PORT=")]
    assert steps == [
        "ports",
        "monitor",
        "run",
        "stats",
        "send",
        "ping",
        "decode",
        "pcap",
        "dissector",
        "tshark",
    ]


def _wait_recorded(folder: Path, proc: subprocess.Popen[str], limit_s: float = 90.0) -> None:
    """Until the first recording part holds RECORDED_BYTES (or ``proc`` ended)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        parts = list(folder.glob("capture-*-0001.bin"))
        if parts and parts[0].stat().st_size >= RECORDED_BYTES:
            return
        time.sleep(0.2)


def test_every_command_of_the_section_does_what_it_says(port: str, tmp_path: Path) -> None:
    require("tshark")
    env = {
        **os.environ,
        "PORT": port,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    ran = []
    for line in commands():
        if line.startswith("PORT="):
            continue  # the test's PORT is the virtual table
        name = program(line)
        if name == "monitor" and importlib.util.find_spec("firmware_host.commands.monitor") is None:
            continue
        proc = subprocess.Popen(["bash", "-c", line], cwd=tmp_path, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        if "until Ctrl-C" in line:
            time.sleep(RUN_FOR_S[name])
            if name == "run":
                _wait_recorded(tmp_path / "rec", proc)
            proc.send_signal(signal.SIGINT)  # bash -c runs one command: it is that command
        out, err = proc.communicate(timeout=120)
        statuses, shows = PROMISES[name]
        assert proc.returncode in statuses, (line, proc.returncode, err)
        assert "Traceback" not in err, (line, err)
        assert re.search(shows, out + err), (line, out[-2000:], err[-2000:])
        ran.append(name)
    assert {"run", "stats", "send", "ping", "decode", "pcap", "tshark"} <= set(ran)
    part = next(tmp_path.glob("rec/capture-*-0001.bin"))
    assert part.with_suffix(".rxt").exists() and part.with_suffix(".tx").exists()
