"""Fusion on hand-made hub-ordered rows: each decision beside its failing twin."""

from __future__ import annotations

import numpy as np
import pytest

from firmware_host.fusion.events import Fusion
from firmware_host.fusion.geometry import frozen_mask, geometry
from firmware_host.fusion.paths import simplify
from firmware_host.timing.rows import (
    C_HUB,
    C_TRACK,
    C_TYPE,
    N_COLS,
    NODE_SILENT,
    P0,
    col,
    pack_tracks,
    type_of,
)
from firmware_host.timing.timeline import Ordered
from protocol.geometry import DEFAULT_TABLE

MINIMUM, FULL = 0b1111, 0xFF
L, W, D = DEFAULT_TABLE.length_mm, DEFAULT_TABLE.width_mm, DEFAULT_TABLE.ball_mm


def row(t_us: int, name: str, **fields: int) -> np.ndarray:
    r = np.zeros(N_COLS, np.int64)
    r[C_HUB], r[C_TRACK] = t_us, -1
    r[C_TYPE] = type_of(name) if name != "NODE_SILENT" else NODE_SILENT
    for field, value in fields.items():
        r[P0 if name == "NODE_SILENT" else col(name, field)] = value
    return r


def hello(nodes: int) -> np.ndarray:
    return row(
        0,
        "HELLO",
        boot_id=7,
        nodes_present=nodes,
        table_length_mm=int(L),
        table_width_mm=int(W),
        ball_diameter_um=int(D * 1000),
    )


def fuse(rows: list[np.ndarray], tracks: np.ndarray | None = None, chunks: int = 1) -> list[dict]:
    """Rows through a Fusion, in ``chunks`` calls, then flushed."""
    fusion, out = Fusion(), []
    rows_a = np.array(rows)
    tracks = np.zeros((0, 16, 6), np.uint8) if tracks is None else tracks
    for part in np.array_split(np.arange(len(rows_a)), chunks):
        if not len(part):
            continue
        sub = rows_a[part].copy()
        has = sub[:, C_TRACK] >= 0
        sub_tracks = tracks[sub[has, C_TRACK]]
        sub[has, C_TRACK] = np.arange(has.sum())
        out += fusion.feed(Ordered.of(sub, sub_tracks), int(sub[-1, C_HUB]))
    return out + fusion.flush()


def of(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


@pytest.mark.parametrize(
    ("second", "kept"),
    [
        (
            {"t": 2_000, "cushion": 1, "amplitude": 300},
            False,
        ),  # ring-down: same cushion, soon, weak
        ({"t": 2_000, "cushion": 1, "amplitude": 500}, True),  # over 40 %: a new impact
        ({"t": 5_000, "cushion": 1, "amplitude": 300}, True),  # after 4 ms
        ({"t": 2_000, "cushion": 2, "amplitude": 300}, True),  # another cushion
    ],
)
def test_cushion_ring_down_is_one_impact(second, kept):
    rows = [
        hello(MINIMUM),
        row(1_000_000, "CUSHION_HIT", cushion=1, pos_mm=500, amplitude=1000),
        row(
            1_000_000 + second["t"],
            "CUSHION_HIT",
            cushion=second["cushion"],
            pos_mm=500,
            amplitude=second["amplitude"],
        ),
    ]
    assert len(of(fuse(rows), "cushion")) == (2 if kept else 1)


def test_without_tracker_no_ball_is_claimed_and_the_shot_ends_uncertain_after_quiet():
    rows = [
        hello(MINIMUM),
        row(1_000_000, "CUE_CONTACT", duration_us=1500, peak_force_dn=900),
        row(1_200_000, "CUSHION_HIT", cushion=3, pos_mm=800, amplitude=2000),
        row(1_500_000, "POCKET_DROP", pocket=2, colour=1, beam_us=4000),
        row(9_000_000, "KEYPAD", key=8, arg=0),
    ]
    events = fuse(rows)
    assert [e["type"] for e in events] == [
        "boot",
        "shot_start",
        "cue_contact",
        "cushion",
        "pocket",
        "shot_end",
        "keypad",
    ]
    start, cue, cushion, pocket, end, key = events[1:]
    assert start == {
        "t_us": 1_000_000,
        "type": "shot_start",
        "shot": 1,
        "cue_ball": None,
        "balls": {},
        "frozen": {},
    }
    assert cue["duration_us"] == 1500 and cue["force_n"] == 90.0
    assert cushion["ball"] is None and pocket == {
        **pocket,
        "ball": None,
        "colour": "coloured",
        "pocket": 2,
    }
    assert end == {
        "t_us": 1_500_000 + 4_000_000,
        "type": "shot_end",
        "shot": 1,
        "balls": {},
        "certain": False,
        "interrupted": False,
        "paths": {},
    }
    assert key == {"t_us": 9_000_000, "type": "keypad", "shot": None, "key": "new_frame", "arg": 0}


@pytest.mark.parametrize(("gap_us", "shots"), [(25_000, 1), (2_000_000, 2)])
def test_second_tip_contact_is_the_same_stroke_only_when_soon(gap_us, shots):
    rows = [
        hello(MINIMUM),
        row(1_000_000, "CUE_CONTACT", duration_us=1000, peak_force_dn=500),
        row(1_000_000 + gap_us, "CUE_CONTACT", duration_us=1000, peak_force_dn=500),
    ]
    events = fuse(rows)
    assert len(of(events, "shot_start")) == shots and len(of(events, "cue_contact")) == 2
    assert all(
        e["shot"] == (1 if i == 0 or shots == 1 else 2)
        for i, e in enumerate(of(events, "cue_contact"))
    )


def test_node_status_from_the_hub_and_from_silence():
    rows = [
        hello(FULL),
        row(1_000, "NODE_STATUS", peer=6, code=1, detail=0),
        row(2_000, "NODE_SILENT", node=3),
    ]
    got = of(fuse(rows), "node_status")
    assert got == [
        {
            "t_us": 1_000,
            "type": "node_status",
            "shot": None,
            "node": "acoustic",
            "status": "offline",
            "source": "hub",
        },
        {
            "t_us": 2_000,
            "type": "node_status",
            "shot": None,
            "node": "cue",
            "status": "offline",
            "source": "host",
        },
    ]


@pytest.mark.parametrize(
    ("x", "y", "cushions"),
    [
        (D / 2 + 1.0, 900.0, {0}),  # 1 mm off the front cushion: frozen (default gap 1.5 mm)
        (D / 2 + 2.0, 900.0, set()),  # 2 mm: not
        (1000.0, D / 2 + 0.5, {1}),  # left-front piece
        (3000.0, D / 2 + 0.5, {2}),  # left-back piece
        (D / 2 + 0.5, D / 2 + 0.5, {0, 1}),  # in the corner, against both
    ],
)
def test_frozen_against_cushions(x, y, cushions):
    mask = frozen_mask(geometry(), x, y)
    assert {c for c in range(6) if mask >> c & 1} == cushions


@pytest.mark.parametrize(
    ("points", "kept"),
    [
        ([(0, 0), (100, 0.5), (200, -0.5), (300, 0)], [0, 3]),  # noise under 2 mm: a straight run
        ([(0, 0), (100, 0), (200, 0), (200, 100), (200, 200)], [0, 2, 4]),  # a corner is kept
    ],
)
def test_paths_keep_corners_and_drop_noise(points, kept):
    x = np.array([p[0] for p in points], float)
    y = np.array([p[1] for p in points], float)
    keep = np.zeros(len(points), bool)
    simplify(x, y, 2.0, keep)
    assert np.flatnonzero(keep).tolist() == kept


def tracked_shot(frames_hz: float = 120.0):
    """Ball 0 struck at t = 1 s towards ball 5 at rest; 5 then runs into the back cushion.

    Returns rows (HELLO, tracker frames, tip contact, cushion hit) in hub order and tracks.
    """
    t0, v = 1_000_000, 2.0e-3  # mm/µs = 2 m/s
    x0, x5, y = 1000.0, 1500.0, W / 2
    t_contact = t0 + (x5 - D - x0) / v
    t_cushion = t_contact + (L - D / 2 - x5) / v
    t_stop = t_cushion + 300_000
    frames = np.arange(0, t_stop + 500_000, 1e6 / frames_hz).astype(np.int64) + 3_000

    def state(t):
        p0 = x0 + v * min(max(t - t0, 0), t_contact - t0)
        if t < t_contact:
            p5 = x5
        elif t < t_cushion:
            p5 = x5 + v * (t - t_contact)
        else:
            p5 = L - D / 2 - v * min(t - t_cushion, t_stop - t_cushion)
        return (p0, t0 < t < t_contact), (p5, t_contact < t < t_stop)

    cols = np.zeros((4, len(frames), 16), np.int64)
    rows = [hello(FULL)]
    for i, t in enumerate(frames):
        for j, (b, (x, moving)) in enumerate(zip((0, 5), state(t))):
            cols[:, i, j] = (b, int(moving), round(x * 10), round(y * 10))
        r = row(int(t), "BALL_TRACK", frame=i, count=2)
        r[C_TRACK] = i
        rows.append(r)
    rows.append(row(t0, "CUE_CONTACT", duration_us=1200, peak_force_dn=400))
    rows.append(row(int(t_cushion), "CUSHION_HIT", cushion=3, pos_mm=int(y), amplitude=2500))
    rows.sort(key=lambda r: r[C_HUB])
    return rows, pack_tracks(*cols), int(t_contact), int(t_cushion)


@pytest.mark.parametrize("chunks", [1, 37])
def test_with_tracker_struck_ball_contact_cushion_and_paths(chunks):
    rows, tracks, t_contact, _ = tracked_shot()
    events = fuse(rows, tracks, chunks)
    assert [e["t_us"] for e in events] == sorted(e["t_us"] for e in events)
    (start,) = of(events, "shot_start")
    assert start["cue_ball"] == 0 and set(start["balls"]) == {"0", "5"} and start["frozen"] == {}
    (contact,) = of(events, "ball_contact")
    assert contact["balls"] == [0, 5] and abs(contact["t_us"] - t_contact) < 1_000
    (cushion,) = of(events, "cushion")
    assert cushion["ball"] == 5 and cushion["cushion"] == 3
    (end,) = of(events, "shot_end")
    assert end["certain"] and not end["interrupted"] and set(end["paths"]) == {"0", "5"}
    # ball 5: start, the back cushion (the tracker frame nearest it: 2 m/s = 17 mm a frame), stop
    xs = [p[1] for p in end["paths"]["5"]]
    assert len(xs) <= 5 and max(xs) == pytest.approx(L - D / 2, abs=17)
    assert not of(events, "ball_moved")


def test_with_tracker_a_ball_that_starts_moving_by_itself_is_ball_moved():
    rows, tracks, _, _ = tracked_shot()
    rows = [r for r in rows if r[C_TYPE] != type_of("CUE_CONTACT")]  # no tip contact at all
    events = fuse(rows, tracks)
    assert [e["ball"] for e in of(events, "ball_moved")] == [0]
    assert not of(events, "shot_start")
