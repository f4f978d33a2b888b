"""`decode`'s listing (issue 30) on a capture of known content built here: a hub, a rails
node and a tracker with clocks of their own, CLOCK_SYNC for each, a seq gap, a duplicate,
a bad frame and a hub reboot.  The time window on the hub's clock, the time column
(hub, host from the .rxt, relative, delta), --hex, --format csv, --where (parsed, never
evaluated), the sequence marks in the listing, and `diff A B`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from proc_util import run_cli as cli

from firmware_host.link.recorder import RX_TIMES_DTYPE
from protocol.framing import build_body, encode_frame

pytestmark = pytest.mark.wall_s(40)  # alone, on an idle core: run first (conftest.py)

HUB0_US = 1_000_000  # the hub's clock at the capture's t = 0
TRACKER0_US, TRACKER_PPM = 3_000_000_000, 30.0  # far from the hub's clock, and fast
RAILS0_US, RAILS_PPM = 500_000, -20.0
HOST0_NS = 7_000_000_000_000  # the host's monotonic clock at t = 0
ARRIVAL_US = 2_000  # every frame reaches the host 2 ms after its stamp
SPAN_S = 30
HITS = [  # (t_s, cushion, amplitude): the CUSHION_HITs
    (2.31, 2, 1500),
    (4.12, 2, 800),
    (6.77, 3, 2500),
    (12.5, 2, 1001),
    (25.6, 0, 3000),
]
LOST_TRACK = (40, 41)  # tracker frames never sent: a gap of 2
REBOOT_S = 28.0  # the hub reboots here (new boot_id; its clock starts again at 0)


@dataclass
class Known:
    path: Path
    frames: list[tuple[float, str, dict[str, Any], bytes]]  # (true t, type, header+fields, wire)


def hub_us(t: float) -> int:
    return round(HUB0_US + t * 1e6) if t < REBOOT_S else round((t - REBOOT_S) * 1e6)


def tracker_us(t: float) -> int:
    return round(TRACKER0_US + t * 1e6 * (1 + TRACKER_PPM * 1e-6)) % 2**32


def rails_us(t: float) -> int:
    return round(RAILS0_US + t * 1e6 * (1 + RAILS_PPM * 1e-6)) % 2**32


def hello(boot_id: int, seq: int, t: float) -> tuple[str, dict[str, Any]]:
    return "HELLO", {
        "seq": seq,
        "t_us": hub_us(t),
        "fw_major": 1,
        "fw_minor": 1,
        "fw_patch": 0,
        "proto": 1,
        "boot_id": boot_id,
        "hub_serial": 9,
        "table_length_mm": 3569,
        "table_width_mm": 1778,
        "ball_diameter_um": 68000,
        "nodes_present": 0b10011,
    }


def known_frames() -> list[tuple[float, str, dict[str, Any]]]:
    """Every frame the table sends, in the order it sends them (true time t in s)."""
    out: list[tuple[float, str, dict[str, Any]]] = [(0.0, *hello(0xB007, 0, 0.0))]
    seq = {0: 1, 1: 0, 4: 0}
    booted = False
    for k in range(SPAN_S * 20):  # every 50 ms
        t = k * 0.05
        if t >= REBOOT_S and not booted:
            booted, seq = True, {0: 1, 1: 0, 4: 0}
            out.append((t, *hello(0xB008, 0, t)))
        if k % 5 == 0:  # 4 Hz syncs of both nodes: the beacon arrives 10 us after it left
            for peer, clock in ((4, tracker_us), (1, rails_us)):
                fields = {
                    "seq": seq[0],
                    "t_us": hub_us(t),
                    "peer": peer,
                    "peer_t_us": clock(t + 10e-6),
                }
                out.append((t, "CLOCK_SYNC", fields))
                seq[0] += 1
        if k % 20 == 0:
            out.append(
                (
                    t,
                    "HEARTBEAT",
                    {
                        "seq": seq[0],
                        "t_us": hub_us(t),
                        "uptime_s": int(t),
                        "nodes_ok": 0x13,
                        "rx_bad": 0,
                        "tx_dropped": 0,
                        "indicator": 1,
                    },
                )
            )
            seq[0] += 1
        if k % 2 == 1:  # the tracker at 10 Hz, 50 ms after each sync
            if seq[4] not in LOST_TRACK or booted:
                balls = [{"ball": 0, "state": 1, "x": 10_000 + k, "y": 5_000}]
                out.append(
                    (
                        t,
                        "BALL_TRACK",
                        {"seq": seq[4], "t_us": tracker_us(t), "frame": k, "balls": balls},
                    )
                )
            seq[4] += 1
        for when, cushion, amplitude in HITS:
            if k * 50 <= round(when * 1000) < (k + 1) * 50:
                out.append(
                    (
                        when,
                        "CUSHION_HIT",
                        {
                            "seq": seq[1],
                            "t_us": rails_us(when),
                            "cushion": cushion,
                            "pos_mm": 100,
                            "amplitude": amplitude,
                        },
                    )
                )
                seq[1] += 1
    return out


def build(tmp: Path, name: str = "known.bin", rxt: bool = True) -> Known:
    wire, times, frames = [b"\x00"], [], []
    for t, msg, fields in known_frames():
        frame = encode_frame(msg, **fields)
        frames.append((t, msg, fields, frame))
        wire.append(frame)
        times.append(t)
        if msg == "CUSHION_HIT" and fields["cushion"] == 3:  # then the same again, resent
            again = encode_frame(msg, **(fields | {"flags": 1}))
            frames.append((t, msg, fields | {"flags": 1}, again))
            wire.append(again)
            times.append(t)
    bad = bytearray(encode_frame("CUSHION_HIT", seq=99, t_us=5, cushion=1, pos_mm=7, amplitude=9))
    bad[-3] ^= 0xFF  # the CRC's last byte: a bad frame with a readable header
    at = next(i for i, (t, *_) in enumerate(frames) if t > 15)
    frames.insert(at, (15.0, "BAD", {}, bytes(bad)))
    wire.insert(at + 1, bytes(bad))
    times.insert(at, 15.0)
    path = tmp / name
    path.write_bytes(b"".join(wire))
    if rxt:  # one read per frame, ARRIVAL_US after the frame's time
        lengths = np.array([1] + [len(w) for w in wire[1:]], np.int64)
        rx = np.zeros(len(wire), RX_TIMES_DTYPE)
        rx["offset"] = np.cumsum(lengths) - lengths
        rx["host_rx_ns"] = HOST0_NS + np.round((np.array([0.0, *times]) * 1e6 + ARRIVAL_US) * 1e3)
        rx.tofile(path.with_suffix(".rxt"))
    return Known(path, frames)


@pytest.fixture(scope="module")
def known(tmp_path_factory: pytest.TempPathFactory) -> Known:
    return build(tmp_path_factory.mktemp("listing"))


def decode_json(*args: str, status: int = 1) -> list[dict[str, Any]]:
    done = cli("decode", "--json", *args)
    assert done.returncode == status, done.stderr
    return [json.loads(x) for x in done.stdout.splitlines()][:-1]


def test_a_window_on_the_hubs_clock_for_one_node(known: Known) -> None:
    """`--time hub --from 10 --to 20 --node 4`: the tracker's frames whose true time is 9 to
    19 s (the hub's clock reads 10 s at t = 9 s); on the tracker's own clock, nothing."""
    lines = decode_json("--time", "hub", "--from", "10", "--to", "20", "--node", "4",
                        str(known.path))  # fmt: skip
    expected = [f["frame"] for t, m, f, _ in known.frames if m == "BALL_TRACK" and 9 <= t < 19]
    assert [x["fields"]["frame"] for x in lines] == expected and len(expected) == 100
    for line in lines:
        t = line["fields"]["frame"] * 0.05
        assert line["hub_s"] == pytest.approx(hub_us(t) / 1e6, abs=1e-4)
        assert line["hub_uncertainty_us"] < 100  # ICD §7
    text = cli("decode", "--time", "hub", "--from", "10", "--to", "20", "--node", "4",
               str(known.path)).stdout  # fmt: skip
    assert text.split("\n\n")[0].count("BALL_TRACK") == 100 and "hub s" in text.splitlines()[0]


def test_time_columns_host_relative_delta(known: Known) -> None:
    host = decode_json("--time", "host", "--type", "CUSHION_HIT", str(known.path))
    assert [x["host_s"] for x in host] == pytest.approx(
        [(HOST0_NS + (t * 1e6 + ARRIVAL_US) * 1e3) / 1e9
         for t, m, _, _ in known.frames if m == "CUSHION_HIT"], abs=1e-6)  # fmt: skip
    relative = decode_json("--time", "relative", "--type", "CUSHION_HIT", str(known.path))
    hits = [t for t, m, _, _ in known.frames if m == "CUSHION_HIT"]
    assert [x["relative_s"] for x in relative] == pytest.approx(hits, abs=1e-4)
    delta = decode_json("--time", "delta", "--type", "CUSHION_HIT", str(known.path))
    assert [x["delta_s"] for x in delta] == pytest.approx([0.0, *np.diff(hits)], abs=1e-4)
    # relative carries on across the reboot from the last hub stamp before it (27.75 s: the
    # hub's clock says nothing of how long it was down), never back to 0
    after = decode_json("--time", "relative", "--from", "1", "--type", "HELLO", str(known.path))
    assert [x["relative_s"] for x in after] == pytest.approx([REBOOT_S - 0.25])


def test_time_host_needs_the_rxt(known: Known, tmp_path: Path) -> None:
    bare = build(tmp_path, "bare.bin", rxt=False)
    done = cli("decode", "--time", "host", str(bare.path))
    assert done.returncode == 2 and "bare.rxt is missing" in done.stderr
    assert done.stderr.count("\n") == 1


def test_sequence_marks_in_the_listing(known: Known) -> None:
    lines = decode_json(str(known.path))
    gap = [x for x in lines if "lost_before" in x]
    assert [(x["node"], x["seq"], x["lost_before"]) for x in gap] == [(4, 42, 2)]
    assert [x["type"] for x in lines if x.get("reboot")] == ["HELLO"]
    assert [(x["type"], x["seq"]) for x in lines if x.get("duplicate")] == [("CUSHION_HIT", 2)]
    text = cli("decode", str(known.path)).stdout
    assert "GAP: 2 lost before it" in text and "REBOOT" in text
    assert "DUPLICATE (already delivered)" in text and "hub reboots    1" in text


def test_hex_shows_a_frames_body_and_a_bad_frames_bytes(known: Known) -> None:
    lines = decode_json("--hex", "--where", "cushion == 3 and not duplicate", str(known.path))
    (hit,) = lines
    frame = next(w for t, m, f, w in known.frames if m == "CUSHION_HIT" and f["cushion"] == 3)
    assert hit["hex"] == frame.hex()
    body = build_body("CUSHION_HIT", **next(f for _, m, f, _ in known.frames
                                            if m == "CUSHION_HIT" and f["cushion"] == 3))  # fmt: skip
    text = cli("decode", "--hex", "--where", "cushion == 3 and not duplicate",
               str(known.path)).stdout  # fmt: skip
    shown = " | ".join(p.hex(" ") for p in (body[:10], body[10:-4], body[-4:]))
    assert f"body  {shown}" in text
    bad = [x for x in decode_json("--hex", str(known.path)) if "error" in x]
    assert len(bad) == 1 and bad[0]["error"] == "crc"
    assert bad[0]["header"] == {"version": 1, "msg_type": 0x11, "node": 1, "flags": 0,
                                "seq": 99, "t_us": 5}  # fmt: skip
    text = cli("decode", "--hex", str(known.path)).stdout
    assert "header (not checked)  version=1 msg_type=17 node=1 flags=0 seq=99 t_us=5" in text


def test_csv_has_a_column_per_field(known: Known) -> None:
    done = cli("decode", "--format", "csv", "--type", "CUSHION_HIT", "--time", "hub",
               str(known.path))  # fmt: skip
    assert done.returncode == 1 and "frames decoded" in done.stderr  # the summary: stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert list(rows[0])[:10] == ["hub_s", "offset", "status", "node", "type", "seq", "t_us",
                                  "flags", "mark", "seq_gap"]  # fmt: skip
    assert {"cushion", "pos_mm", "amplitude", "payload_hex"} <= set(rows[0])
    assert "x_mm" not in rows[0]  # only the fields of the types shown
    expected = [(c, a) for _, c, a in HITS]
    got = [(int(r["cushion"]), int(r["amplitude"])) for r in rows if r["status"] == "ok"]
    assert got == expected
    assert [r["status"] for r in rows].count("duplicate") == 1
    track = list(csv.DictReader(io.StringIO(
        cli("decode", "--format", "csv", "--type", "BALL_TRACK", str(known.path)).stdout)))  # fmt: skip
    assert track[0]["balls"] == f"0:{10_000 + 1},5000/1"


@pytest.mark.parametrize(
    ("where", "amplitudes"),
    [
        ("amplitude>1000 and cushion==2", [1500, 1001]),
        ("amplitude > 1000 and cushion == 'left-back'", [1500, 1001]),  # ICD §6 names
        ("type == 'CUSHION_HIT' and not amplitude <= 1000", [1500, 2500, 2500, 1001, 3000]),
        ("cushion in (0, 3) and not duplicate", [2500, 3000]),
        ("1000 < amplitude < 2600 and mark != 'first'", [2500, 2500, 1001]),
        (
            "type == 'cushion_hit' and node == 'rails' and t_us > 0 and seq_gap == 0",
            [1500, 800, 2500, 2500, 1001, 3000],
        ),
    ],
)
def test_where_selects_on_fields(known: Known, where: str, amplitudes: list[int]) -> None:
    lines = decode_json("--where", where, str(known.path))
    assert [x["fields"]["amplitude"] for x in lines] == amplitudes


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("__import__('os').system('touch {marker}')", "not a comparison"),
        ("amplitude.__class__ == 1", "not a number, a string"),
        ("amplitud > 3", "amplitud: no such field"),
        ("cushion == 'nowhere'", "no such name"),
        ("amplitude + 1 > 3", "not a number"),
        ("amplitude >", "not an expression"),
        ("[x for x in ()] == 1", "not a number"),
        ("lambda: 1", "not a comparison"),
    ],
)
def test_where_is_parsed_never_evaluated(
    known: Known, tmp_path: Path, where: str, says: str
) -> None:
    marker = tmp_path / "ran"
    done = cli("decode", "--where", where.format(marker=marker), str(known.path))
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, (
        done.stderr
    )
    assert not marker.exists()


def test_diff_names_frames_only_in_one_and_fields_that_differ(known: Known, tmp_path: Path) -> None:
    wire = known.path.read_bytes()
    hit = next(w for t, m, f, w in known.frames if m == "CUSHION_HIT" and f["amplitude"] == 800)
    fields = next(f for t, m, f, w in known.frames if m == "CUSHION_HIT" and f["amplitude"] == 800)
    changed = encode_frame("CUSHION_HIT", **(fields | {"amplitude": 801}))
    dropped = next(w for t, m, f, w in known.frames if m == "HEARTBEAT" and f["uptime_s"] == 20)
    extra = encode_frame("KEYPAD", seq=0, t_us=123, key=8, arg=0)
    b = tmp_path / "b.bin"
    b.write_bytes(wire.replace(hit, changed).replace(dropped, b"") + extra)
    done = cli("diff", str(known.path), str(b))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert [x for x in lines if x.startswith("only in A")] == [
        (f"only in A  offset {wire.index(dropped):>10}  hub HEARTBEAT seq={dropped_seq(known)} "
        f"t_us={hub_us(20.0)} uptime_s=20 nodes_ok=19 rx_bad=0 tx_dropped=0 indicator=1")]  # fmt: skip
    assert [x.split("  ")[-1] for x in lines if x.startswith("only in B")] == [
        "keypad KEYPAD seq=0 t_us=123 key=8 arg=0"]  # fmt: skip
    (differs,) = [x for x in lines if x.startswith("differs")]
    assert differs.endswith(": amplitude 800 -> 801")
    as_json = [
        json.loads(x) for x in cli("diff", "--json", str(known.path), str(b)).stdout.splitlines()
    ]
    summary = as_json.pop()["summary"]
    assert (summary["differ"], summary["only_in_a"], summary["only_in_b"]) == (1, 1, 1)
    assert summary["bad_a"] == summary["bad_b"] == {"crc": 1}
    (change,) = [x for x in as_json if "differs" in x]
    assert change["fields"] == {"amplitude": [800, 801]}
    same = cli("diff", str(known.path), str(known.path))
    assert same.returncode == 0 and same.stdout.strip().endswith("the same frames")


def dropped_seq(known: Known) -> int:
    return next(f["seq"] for t, m, f, w in known.frames if m == "HEARTBEAT" and f["uptime_s"] == 20)


def test_diff_matches_frames_wherever_each_capture_began(known: Known, tmp_path: Path) -> None:
    """A recorder that joined later holds a tail of the other's frames: only in A, no more."""
    wire = known.path.read_bytes()
    late = tmp_path / "late.bin"
    late.write_bytes(wire[len(wire) // 2 :])
    found = [
        json.loads(x) for x in cli("diff", "--json", str(known.path), str(late)).stdout.splitlines()
    ]
    summary = found.pop()["summary"]
    assert summary["only_in_b"] <= 1 and summary["differ"] == 0  # B's first frame may be cut
    assert summary["only_in_a"] > 100
