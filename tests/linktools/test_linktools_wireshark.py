"""`pcap` + the generated Lua `dissector`, read back by a real tshark and checked against
`decode --json`, field by field, for every message type, bad frames and a retransmission;
the expert info of the decoder's sequence marks, value names and hex masks as tshark shows
them, and no packet comment flooding Expert Info."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from outside_parts import require
from proc_util import run_cli as cli

from protocol.catalogue import MESSAGES
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(20)  # alone, on an idle core: run first (conftest.py)


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
    """The ICD's golden frames (every message type, SETUP_SIGNING from §9's, bad ones, an
    unknown type), a retransmission of one already delivered, and LOG text that is not
    ASCII."""
    frames = vectors["frames"] + vectors["bad_frames"] + vectors["unknown_type"]
    frames += [f for f in vectors["signed_frames"]["frames"] if f["message"] == "SETUP_SIGNING"]
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
    by_offset = {int(one(find(p, "firmware_host.offset"))): p for p in packets}
    assert len(packets) == len(decoded) == len(by_offset)
    assert not any("pkt_comment" in p for p in packets)  # no comment per packet
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
        seq_expert = "duplicate" if line.get("duplicate") else "retransmission"
        retx = bool(find(layer, f"firmware_host.{seq_expert}") or find(layer, "firmware_host.late"))
        assert retx == bool(line["flags"] & 1), line
        assert layer["firmware_host.crc32.good"] == "1"
        if line["type"] == "UNKNOWN":
            assert int(layer["firmware_host.msg_type"], 0) == line["msg_type"]
            assert find(layer, "firmware_host.unknown_type")
            assert layer["firmware_host.payload"].replace(":", "") == line["payload_hex"]
            continue
        spec = next(m for m in MESSAGES if m.name == line["type"])
        assert int(layer["firmware_host.msg_type"], 0) == spec.msg_type
        fields = dict(line["fields"])
        if line["type"] == "SETUP_SIGNING":  # the table key: shown by neither (docs/security.md)
            assert fields.pop("key") == "<32 bytes, not shown>"
            assert not any("key" in name for name in layer), layer
        assert shown_fields(layer, line["type"]) == fields, line


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


def _hello(boot_id: int, seq: int = 0) -> bytes:
    return encode_frame("HELLO", seq=seq, t_us=10, fw_major=1, fw_minor=1, fw_patch=0, proto=1,
                        boot_id=boot_id, hub_serial=7, table_length_mm=3569,
                        table_width_mm=1778, ball_diameter_um=68000, nodes_present=0xFF)  # fmt: skip


def _key(seq: int, flags: int = 0) -> bytes:
    return encode_frame("KEYPAD", seq=seq, t_us=1000 + seq, flags=flags, key=1, arg=0)


#: (frame, the expert info tshark must show for it, or None)
SEQUENCE_STORY = [
    (b"\x11\x22\x33\x00", "joined"),  # the end of a frame the capture began inside
    (_hello(1), None),
    *((_key(s), None) for s in (0, 1, 2)),
    (_key(5), "2 frames of node keypad lost just before this one (seq gap)"),
    (_key(2, flags=1), "duplicate"),
    (_key(3, flags=1), "late"),
    (_key(6, flags=1), "retransmission"),  # the first copy to arrive: delivered
    (_key(1), "restart"),
    (_hello(2, seq=1), "reboot"),
    (_key(0), None),
    (_key(1)[:9], "cut"),  # the capture ends 9 bytes into a frame
]
EXPERT_TEXT = {
    "joined": "The capture began inside this frame (a join): not a bad frame",
    "duplicate": "Duplicate: a retransmission already delivered",
    "late": "Late retransmission: a frame counted lost has arrived",
    "retransmission": "Retransmission (flags bit 0), the first copy to arrive: delivered",
    "restart": "The node restarted its seq counter",
    "reboot": "Hub rebooted (a new boot_id): every clock and counter restarts",
    "cut": "Frame cut: the capture ends before its delimiter",
}


def _lua_and_pcap(tmp_path: Path, wire: bytes) -> tuple[Path, Path]:
    capture, lua, pcap = tmp_path / "story.bin", tmp_path / "fh.lua", tmp_path / "story.pcapng"
    capture.write_bytes(wire)
    assert cli("dissector", "-o", str(lua)).returncode == 0
    done = cli("pcap", str(capture), "-o", str(pcap))
    assert done.returncode == 0, done.stderr
    assert "the capture ends inside a frame: its last 9 bytes are the last packet" in done.stderr
    return lua, pcap


def test_expert_info_says_what_the_decoder_said_of_each_frame(tmp_path: Path) -> None:
    lua, pcap = _lua_and_pcap(tmp_path, b"".join(frame for frame, _ in SEQUENCE_STORY))
    packets = tshark_packets(pcap, lua)
    assert len(packets) == len(SEQUENCE_STORY)  # the cut tail is a packet too
    for packet, (_, expected) in zip(packets, SEQUENCE_STORY, strict=True):
        messages = [str(m) for m in find(packet, "_ws.expert.message")]
        if expected is None:
            assert messages == [], messages
        else:
            assert messages == [EXPERT_TEXT.get(expected, expected)], messages


def test_expert_info_is_a_summary_not_a_flood(tmp_path: Path) -> None:
    """`tshark -z expert` on a virtual match lists what happened, not one line per packet."""
    capture = tmp_path / "match.bin"
    done = cli("simulate", "--capture", str(capture), "--minutes", "0.5", "--seed", "3",
               "--faults", "garbage@5,drop@9,stall@12-14,reboot@20")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lua, pcap = tmp_path / "fh.lua", tmp_path / "match.pcapng"
    cli("dissector", "-o", str(lua))
    cli("pcap", str(capture), "-o", str(pcap))
    summary = subprocess.run(
        ["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-q", "-z", "expert"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    packets = int(subprocess.run(["capinfos", "-c", "-M", str(pcap)], capture_output=True,
                                 text=True, check=True).stdout.split()[-1])  # fmt: skip
    counts = [int(n) for n in re.findall(r"^\s+(\d+)\s+\w+\s+FIRMWARE_HOST", summary, re.MULTILINE)]
    assert "Comment" not in summary and packets > 5000
    assert 0 < sum(counts) < 100, summary  # the faults, not the packets
    assert "Hub rebooted" in summary and "lost just before this one" in summary


NODE_OF = {"LOG": 3}  # LOG may come from any node: the ICD names none


def _shown(pdml: str, field: str) -> list[str]:
    return [
        f.get("showname", "") for f in ET.fromstring(pdml).iter("field") if f.get("name") == field
    ]


#: (message, its fields, a field, how tshark must show it)
NAMED = [
    ("LOG", {"level": 2, "text": "hot"}, "log.level", "level: warning (2)"),
    ("CUSHION_HIT", {"cushion": 3, "pos_mm": 1, "amplitude": 2}, "cushion_hit.cushion",
     "cushion: back (3)"),
    ("POCKET_DROP", {"pocket": 4, "colour": 255, "beam_us": 9}, "pocket_drop.pocket",
     "pocket: right-middle (4)"),
    ("POCKET_DROP", {"pocket": 4, "colour": 255, "beam_us": 9}, "pocket_drop.colour",
     "colour: unknown (255)"),
    ("LINE_CROSS", {"line": 1, "pos_mm": 5, "direction": 2, "duration_us": 3},
     "line_cross.line", "line: house (1)"),
    ("LINE_CROSS", {"line": 1, "pos_mm": 5, "direction": 2, "duration_us": 3},
     "line_cross.direction", "direction: no crossing (2)"),
    ("HEARTBEAT", {"uptime_s": 1, "nodes_ok": 0xBE, "rx_bad": 0, "tx_dropped": 0,
                   "indicator": 3}, "heartbeat.nodes_ok", "nodes_ok: 0x00be"),
    ("HEARTBEAT", {"uptime_s": 1, "nodes_ok": 0xBE, "rx_bad": 0, "tx_dropped": 0,
                   "indicator": 3}, "heartbeat.indicator", "indicator: foul (3)"),
]  # fmt: skip
NODE_OF = {"LOG": 3}  # LOG may come from any node: the ICD names none


def test_value_names_and_masks_as_tshark_shows_them(tmp_path: Path) -> None:
    capture, lua, pcap = tmp_path / "named.bin", tmp_path / "fh.lua", tmp_path / "named.pcapng"
    frames = [encode_frame(m, node=NODE_OF.get(m), seq=i, t_us=5, **fields)
              for i, (m, fields, _, _) in enumerate(NAMED)]  # fmt: skip
    capture.write_bytes(b"\x00" + b"".join(frames))
    cli("dissector", "-o", str(lua))
    cli("pcap", str(capture), "-o", str(pcap))
    pdml = subprocess.run(["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "pdml"],
                          capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
    packets = ET.fromstring(pdml).findall("packet")
    assert len(packets) == len(NAMED)
    for packet, (_, _, field, shown) in zip(packets, NAMED, strict=True):
        names = [f.get("showname") for f in packet.iter("field")
                 if f.get("name") == f"firmware_host.{field}"]  # fmt: skip
        assert names == [shown], (field, names)
