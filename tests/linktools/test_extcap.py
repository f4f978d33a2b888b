"""`firmware-host extcap` as Wireshark uses it: a real tshark lists the interface and
captures a live virtual table (a pty) through it for a few seconds, dissecting live with
the generated dissector; every packet's fields equal `decode --json` of the same bytes.

Wireshark reads ``$WIRESHARK_EXTCAP_DIR`` only for a user without special privileges;
run as root (a container), the launcher goes into Wireshark's own extcap folder for the
test's duration instead (`extcap --install` with no folder picks the same).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from outside_parts import require
from proc_util import run_cli as cli
from test_linktools_wireshark import find, one, shown_fields

from firmware_host.commands.extcap import LAUNCHER, extcap_folder
from firmware_host.linktools.pcap import LINK_HEADER

pytestmark = pytest.mark.wall_s(15)  # alone, on an idle core: run first (conftest.py)

CAPTURE_S = 5


@pytest.fixture
def extcap_dir(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """Where the launcher goes, and tshark's environment."""
    require("tshark")
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.pop("WIRESHARK_EXTCAP_DIR", None)
        folder = Path(extcap_folder())
    else:
        folder = tmp_path / "extcap"
        env["WIRESHARK_EXTCAP_DIR"] = str(folder)
    placed = folder / LAUNCHER
    assert not placed.exists() or os.geteuid() != 0, f"{placed} is in use (another run?)"
    done = cli("extcap", "--install", str(folder), "--lua-dir", str(tmp_path / "lua"))
    assert done.returncode == 0, done.stderr
    try:
        yield tmp_path / "lua" / "firmware_host.lua", env
    finally:
        placed.unlink(missing_ok=True)


@pytest.fixture
def live_table() -> Iterator[str]:
    """The virtual table on a pseudo-terminal, playing without waiting for a host."""
    table = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "simulate", "--pty", "--loop", "--minutes", "1",
         "--seed", "4", "--speed", "2", "--faults", "garbage@3"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert table.stdout is not None
        yield table.stdout.readline().strip()
    finally:
        table.terminate()
        table.wait(10)


def pcapng_packets(path: Path) -> list[bytes]:
    """The packet data of every enhanced packet block (what tshark wrote)."""
    data, at, out = path.read_bytes(), 0, []
    while at < len(data):
        kind, total = struct.unpack_from("<II", data, at)
        if kind == 6:
            captured = struct.unpack_from("<I", data, at + 20)[0]
            out.append(data[at + 28 : at + 28 + captured])
        at += total
    return out


def test_wireshark_lists_the_interface_and_its_options(extcap_dir: tuple[Path, dict]) -> None:
    _, env = extcap_dir
    listed = subprocess.run(
        ["tshark", "-D"], check=False, capture_output=True, text=True, env=env
    ).stdout
    assert "firmware-host (Table sensor bus (any port or URL))" in listed
    prefs = subprocess.run(["tshark", "-G", "defaultprefs"], check=False, capture_output=True,
                           text=True, env=env).stdout  # fmt: skip
    assert "#extcap.firmware_host.port: " in prefs and "#extcap.firmware_host.baud: 921600" in prefs


def test_tshark_captures_a_live_table_through_the_extcap(
    extcap_dir: tuple[Path, dict], live_table: str, tmp_path: Path
) -> None:
    lua, env = extcap_dir
    out = tmp_path / "live.pcapng"
    done = subprocess.run(
        ["tshark", "-i", "firmware-host", "-o", f"extcap.firmware_host.port:{live_table}",
         "-a", f"duration:{CAPTURE_S}", "-X", f"lua_script:{lua}", "-P", "-w", str(out),
         "-T", "json", "--no-duplicate-keys"],
        check=False, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    live = [p["_source"]["layers"] for p in json.loads(done.stdout)]
    packets = pcapng_packets(out)
    assert len(live) == len(packets) > 200  # seconds of a full table
    # the stream the extcap read: each frame at its offset, the gaps between are delimiters
    heads = [LINK_HEADER.unpack_from(p) for p in packets]
    size = max(h[-1] + len(p) - LINK_HEADER.size for h, p in zip(heads, packets, strict=True))
    stream = bytearray(size)
    for (*_, offset), packet in zip(heads, packets, strict=True):
        stream[offset : offset + len(packet) - LINK_HEADER.size] = packet[LINK_HEADER.size :]
    capture = tmp_path / "stream.bin"
    capture.write_bytes(bytes(stream))
    decoded = [json.loads(x) for x in cli("decode", "--json", str(capture)).stdout.splitlines()]
    decoded.pop()  # the summary
    by_offset = {int(one(find(p, "firmware_host.offset"))): p for p in live}
    assert sorted(by_offset) == [line["offset"] for line in decoded]  # one packet a frame
    checked = set()
    for line in decoded:
        layer = by_offset.get(line["offset"])
        if layer is None or "error" in line:
            continue  # the partial frame a join starts inside; bad frames: checked below
        layer = layer["firmware_host"]
        for key in ("node", "seq", "t_us", "flags"):
            assert int(layer[f"firmware_host.{key}"], 0) == line[key], (key, line)
        assert shown_fields(layer, line["type"]) == line["fields"], line
        checked.add(line["type"])
    assert {"HEARTBEAT", "CLOCK_SYNC", "BALL_TRACK"} <= checked
    bad = [line for line in decoded if "error" in line and line["offset"] > 0]
    assert all(find(by_offset[b["offset"]], "_ws.expert") for b in bad)  # the garbage, marked
