"""`pcap` + the generated Lua `dissector`, read back by a real tshark and checked against
`decode --json`, field by field, for every message type, bad frames and a retransmission."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from outside_parts import require
from proc_util import run_cli as cli

from protocol.catalogue import MESSAGES
from protocol.framing import encode_frame


@pytest.fixture(autouse=True)
def _tshark() -> None:
    """Every test here reads with a real tshark: missing, each fails naming the package."""
    require("tshark")


EXPERT_OF_ERROR = {
    "crc": "bad_crc",
    "cobs": "cobs",
    "length": "length",
    "version": "version",
    "payload length": "payload_length",
}


@pytest.fixture
def every_frame(tmp_path: Path, vectors: dict[str, Any]) -> Path:
    """The ICD's golden frames (every message type, bad ones, an unknown type), a
    retransmission of one already delivered, and LOG text that is not ASCII."""
    frames = vectors["frames"] + vectors["bad_frames"] + vectors["unknown_type"]
    wire = b"\x00" + b"".join(bytes.fromhex(f["hex"]) for f in frames)
    wire += encode_frame("KEYPAD", seq=40, t_us=5, key=5, arg=255)
    wire += encode_frame("KEYPAD", seq=40, t_us=5, flags=1, key=5, arg=255)
    wire += encode_frame("LOG", node=3, seq=41, t_us=6, level=2, text="кий: 1.0 °C")
    path = tmp_path / "capture-20261202-140000-0001.bin"
    path.write_bytes(wire)
    return path


@pytest.fixture
def virtual_match(tmp_path: Path) -> Path:
    """A quarter-minute match on the virtual table with a garbage burst and a damaged frame."""
    path = tmp_path / "match.bin"
    done = cli("simulate", "--capture", str(path), "--minutes", "0.25", "--seed", "3",
               "--faults", "garbage@5,drop@9")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path


def tshark_packets(pcap: Path, lua: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "json", "--no-duplicate-keys"],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return [p["_source"]["layers"] for p in json.loads(done.stdout)]


def find(tree: Any, key: str) -> list[Any]:
    """Every value under ``key`` anywhere in tshark's JSON tree (expert info nests)."""
    if isinstance(tree, dict):
        return [v for k, v in tree.items() if k == key] + [
            x for v in tree.values() for x in find(v, key)
        ]
    if isinstance(tree, list):
        return [x for v in tree for x in find(v, key)]
    return []


def one(value: Any) -> Any:
    return value[0] if isinstance(value, list) else value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def shown_fields(layer: dict[str, Any], name: str) -> dict[str, Any]:
    """A message's payload fields as the dissector shows them, in decode's shape."""
    prefix = f"firmware_host.{name.lower()}."
    out: dict[str, Any] = {}
    for key, value in layer.items():
        if not key.startswith(prefix) or key.endswith("_tree"):
            continue
        field = key[len(prefix) :]
        if field == "balls":
            out["balls"] = [
                {k.rpartition(".")[2]: int(v) for k, v in ball.items()} for ball in as_list(value)
            ]
        elif field == "text":
            out["text"] = one(value)
        elif field != "count":
            out[field] = int(one(value), 0)
    if name == "BALL_TRACK":
        out.setdefault("balls", [])
    return out


@pytest.mark.parametrize("source", ["every_frame", "virtual_match"])
def test_tshark_shows_every_field_as_decode_does(
    tmp_path: Path, source: str, request: pytest.FixtureRequest
) -> None:
    capture: Path = request.getfixturevalue(source)
    lua, pcap = tmp_path / "firmware_host.lua", tmp_path / "out.pcapng"
    assert cli("dissector", "-o", str(lua)).returncode == 0
    done = cli("pcap", str(capture), "-o", str(pcap))
    assert done.returncode == 0, done.stderr
    decoded = [json.loads(x) for x in cli("decode", "--json", str(capture)).stdout.splitlines()]
    decoded.pop()  # the summary
    packets = tshark_packets(pcap, lua)
    by_offset = {int(one(p["pkt_comment"]["frame.comment"]).split()[-1]): p for p in packets}
    assert len(packets) == len(decoded) == len(by_offset)
    if source == "every_frame":
        assert {m.name for m in MESSAGES} <= {line.get("type") for line in decoded}
    assert any("error" in line for line in decoded)
    for line in decoded:
        layer = by_offset[line["offset"]]["firmware_host"]
        if "error" in line:
            assert find(layer, f"firmware_host.{EXPERT_OF_ERROR[line['error']]}"), line
            continue
        for key in ("node", "seq", "t_us", "flags"):
            assert int(layer[f"firmware_host.{key}"], 0) == line[key], (key, line)
        retx = bool(find(layer, "firmware_host.retransmission"))
        assert retx == bool(line["flags"] & 1), line
        assert layer["firmware_host.crc32.good"] == "1"
        if line["type"] == "UNKNOWN":
            assert int(layer["firmware_host.msg_type"], 0) == line["msg_type"]
            assert find(layer, "firmware_host.unknown_type")
            assert layer["firmware_host.payload"].replace(":", "") == line["payload_hex"]
            continue
        spec = next(m for m in MESSAGES if m.name == line["type"])
        assert int(layer["firmware_host.msg_type"], 0) == spec.msg_type
        assert shown_fields(layer, line["type"]) == line["fields"], line


def test_timestamps_are_the_hub_clock_from_the_recording_start(
    tmp_path: Path, every_frame: Path
) -> None:
    pcap = tmp_path / "out.pcapng"
    cli("pcap", str(every_frame), "-o", str(pcap))
    done = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.time_epoch"],
        capture_output=True,
        text=True,
        check=True,
    )
    epochs = [float(x) for x in done.stdout.split()]
    start = 1_796_220_000.0  # 2026-12-02 14:00:00 UTC, from the part's name
    # hub frames in the golden vectors: t_us 1000 (HELLO), then 1.0 s, 1.1 s, 1.2 s ...
    assert epochs[0] == pytest.approx(start) and epochs[2] == pytest.approx(start + 0.999)


def test_pcapng_blocks_are_well_formed(tmp_path: Path, every_frame: Path) -> None:
    """Block lengths agree at both ends and sum to the file (what any reader walks)."""
    pcap = tmp_path / "out.pcapng"
    cli("pcap", str(every_frame), "-o", str(pcap))
    data, at, kinds = pcap.read_bytes(), 0, []
    while at < len(data):
        kind, total = struct.unpack_from("<II", data, at)
        assert total % 4 == 0 and struct.unpack_from("<I", data, at + total - 4)[0] == total
        kinds.append(kind)
        at += total
    assert at == len(data) and kinds[:2] == [0x0A0D0D0A, 1] and set(kinds[2:]) == {6}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["pcap", "/nonexistent.bin", "-o", "x.pcapng"], "firmware-host pcap: /nonexistent.bin: "),
        (["dissector", "-o", "/nonexistent/dir/x.lua"], "firmware-host dissector: --output "),
    ],
)
def test_bad_paths_are_one_line_and_status_2(argv: list[str], says: str) -> None:
    done = cli(*argv)
    err = done.stderr
    assert done.returncode == 2 and err.startswith(says) and err.count("\n") == 1, err
