"""`ports`: the serial ports pyserial finds on this machine, one row each, and as JSON."""

from __future__ import annotations

import json

from proc_util import run_cli
from serial.tools import list_ports


def test_ports_lists_what_pyserial_finds() -> None:
    found = sorted(list_ports.comports(), key=lambda p: p.device)
    as_json = run_cli("ports", "--json")
    assert as_json.returncode == 0
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r["device"] for r in rows] == [p.device for p in found]
    for row, port in zip(rows, found, strict=True):
        vid_pid = None if port.vid is None else f"{port.vid:04X}:{port.pid:04X}"
        assert (row["vid_pid"], row["serial_number"], row["description"]) == (
            vid_pid,
            port.serial_number,
            port.description,
        )
    table = run_cli("ports").stdout.splitlines()
    if found:
        assert table[0].split() == ["device", "VID:PID", "serial", "number", "description"]
        assert [line.split()[0] for line in table[1:]] == [p.device for p in found]
    else:
        assert table == ["no serial ports found (is the hub plugged in and powered?)"]
