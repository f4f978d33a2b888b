"""The virtual table's sensor model and hub, measured from its capture and its truth.

A host that works on the virtual table must work on the real one, so the
capture has to show every ICD §7 figure: these tests decode the bytes as a
host would and compare with the truth the simulator wrote beside them.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from firmware_host.cli.main import main
from firmware_host.virtual_table.capture import load_frame_truth, simulate, truth_lines
from firmware_host.virtual_table.clocks import WRAP
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import (
    ACK_BAD_ARGUMENT,
    ACK_OK,
    ACK_UNKNOWN,
    HostCommands,
    HubConfig,
    build_wire,
)
from firmware_host.virtual_table.scenarios import SCENARIOS, random_match
from firmware_host.virtual_table.sensors import (
    DAMAGED,
    FALSE_CLICK,
    LATE_BEACON,
    RING_DOWN,
    SENSOR_SETS,
    WRONG_COLOUR,
    acoustic,
    cue,
    lines,
    pockets,
    rails,
    tracker,
)
from firmware_host.virtual_table.truth import MOVING, OCCLUDED, MatchTruth
from protocol.catalogue import BY_NAME
from protocol.decoder import decode_capture
from protocol.framing import BadFrame, Message, UnknownFrame, parse_frame
from protocol.geometry import DEFAULT_TABLE

L, W = DEFAULT_TABLE.length_mm, DEFAULT_TABLE.width_mm
RIGHT = L - DEFAULT_TABLE.ball_mm / 2
SHOT_EVERY_S = 10.0


def polyline_truth(
    path: list[tuple[float, float, float]], events: list[dict], duration_s: float
) -> MatchTruth:
    """Ball 0 moves along a polyline (t, x, y); balls 1 and 2 rest, 1 near where the player stands."""
    pts = np.asarray(path, float)
    rest = {1: (700.0, 950.0), 2: (3000.0, 300.0)}

    def sample(t: np.ndarray):
        t = np.asarray(t, float)
        xy = np.zeros((len(t), 16, 2))
        state = np.zeros((len(t), 16), np.uint8)
        present = np.zeros((len(t), 16), bool)
        for ball, where in rest.items():
            xy[:, ball], present[:, ball] = where, True
        xy[:, 0, 0] = np.interp(t, pts[:, 0], pts[:, 1])
        xy[:, 0, 1] = np.interp(t, pts[:, 0], pts[:, 2])
        present[:, 0] = True
        step = np.searchsorted(pts[:, 0], t, side="right").clip(1, len(pts) - 1)
        still = (pts[step, 1] == pts[step - 1, 1]) & (pts[step, 2] == pts[step - 1, 2])
        state[:, 0] = np.where(still, 0, MOVING)
        return xy, state, present

    return MatchTruth(DEFAULT_TABLE, duration_s, events, sample, name="polyline")


def rolling_match(shots: int, speed_mps: float = 1.5) -> MatchTruth:
    """Ball 0 struck from (1000, 889) into the back cushion and back, once every 10 s."""
    path, events = [(0.0, 1000.0, 889.0)], []
    run = (RIGHT - 1000.0) / 1000 / speed_mps
    for k in range(shots):
        t0, shot = 1.0 + SHOT_EVERY_S * k, k + 1
        out_c = t0 + (L / 2 - 1000) / (RIGHT - 1000) * run
        back_c = t0 + run + (RIGHT - L / 2) / (RIGHT - 1000) * run
        path += [(t0, 1000.0, 889.0), (t0 + run, RIGHT, 889.0), (t0 + 2 * run, 1000.0, 889.0)]
        events += [
            {
                "t_s": t0,
                "type": "shot_start",
                "shot": shot,
                "cue_ball": 0,
                "balls": {},
                "frozen": {},
            },
            {
                "t_s": t0,
                "type": "cue_contact",
                "shot": shot,
                "ball": 0,
                "duration_us": 1234,
                "force_n": 80.0,
            },
            {"t_s": t0, "type": "_ball_start", "shot": shot, "ball": 0},
            {
                "t_s": out_c,
                "type": "line_cross",
                "shot": shot,
                "ball": 0,
                "line": "centre",
                "direction": "back",
            },
            {
                "t_s": t0 + run,
                "type": "cushion",
                "shot": shot,
                "ball": 0,
                "cushion": 3,
                "speed_mps": speed_mps,
            },
            {
                "t_s": back_c,
                "type": "line_cross",
                "shot": shot,
                "ball": 0,
                "line": "centre",
                "direction": "front",
            },
            {"t_s": t0 + 2 * run, "type": "_ball_stop", "shot": shot, "ball": 0},
            {
                "t_s": t0 + 2 * run,
                "type": "shot_end",
                "shot": shot,
                "balls": {},
                "certain": True,
                "paths": {},
            },
        ]
        if k % 5 == 4:
            events.append(
                {"t_s": t0 + 5.0, "type": "keypad", "shot": None, "key": "accept", "arg": 0}
            )
    path.append((SHOT_EVERY_S * shots + 1.0, 1000.0, 889.0))
    verdicts = [
        {"t_s": 1.0 + SHOT_EVERY_S * k + 2 * run + 0.1, "shot": k + 1, "verdict": "foul"}
        for k in range(shots)
    ]
    match = polyline_truth(path, sorted(events, key=lambda e: e["t_s"]), SHOT_EVERY_S * shots + 1.0)
    return replace(match, verdicts=verdicts)


@pytest.fixture(scope="module")
def match10():
    return random_match(seed=3, minutes=10)


@pytest.fixture(scope="module")
def ten_minutes(tmp_path_factory, match10):
    """A random 10-minute full-sensor match: capture and truth files, decoded as a host would."""
    out = tmp_path_factory.mktemp("sim")
    wire = simulate(
        match10,
        HubConfig(seed=7, near_wrap=True),
        out / "c.bin",
        out / "truth.jsonl",
        out / "frames.npz",
    )
    data = (out / "c.bin").read_bytes()
    frames, clocks = load_frame_truth(out / "frames.npz")
    lines = [json.loads(line) for line in (out / "truth.jsonl").read_text().splitlines()]
    return wire, decode_capture(data), frames, clocks, lines


def _messages(wire) -> list:
    return [parse_frame(chunk[:-1], i) for i, chunk in enumerate(wire.chunks)]


def test_ten_minute_capture_has_no_bad_frames_and_no_losses(ten_minutes):
    wire, decoded, frames, _, _ = ten_minutes
    assert decoded.stats.bad == {} and decoded.stats.lost == {} and decoded.stats.unknown == 0
    assert decoded.stats.frames == len(frames) == len(wire.chunks)
    assert set(decoded.stats.per_type) >= {
        "HELLO",
        "HEARTBEAT",
        "CLOCK_SYNC",
        "CUE_CONTACT",
        "CUSHION_HIT",
        "BALL_TRACK",
        "LINE_CROSS",
        "BALL_CLICK",
        "LOG",
    }


def test_ten_minute_capture_crosses_the_wrap_on_every_clock(ten_minutes):
    _, decoded, frames, _, _ = ten_minutes
    for node in np.unique(frames["node"]):  # a node's own frames show the wrap if they straddle it
        mine = frames[frames["node"] == node]
        wrapped = np.count_nonzero(np.diff(mine["t_us"].astype(np.int64)) < -(WRAP // 2))
        assert wrapped == int(mine["node_us"][0] < WRAP <= mine["node_us"][-1]), node
    assert np.count_nonzero(frames["node_us"][frames["node"] == 0] >= WRAP) > 0
    sync = decoded.tables["CLOCK_SYNC"]
    for peer in range(1, 8):
        peer_t = sync["peer_t_us"][sync["peer"] == peer].astype(np.int64)
        assert np.count_nonzero(np.diff(peer_t) < -(WRAP // 2)) == 1, peer


def test_frame_truth_matches_the_capture_byte_for_byte(ten_minutes):
    _, decoded, frames, _, _ = ten_minutes
    got = decoded.frames
    assert np.array_equal(got["offset"], frames["offset"])
    for name in ("node", "seq", "t_us", "msg_type"):
        assert np.array_equal(got[name], frames[name]), name


def test_arrival_order_differs_from_time_order_across_nodes_only(ten_minutes):
    _, _, frames, _, _ = ten_minutes
    stamp = frames["stamp_hub_us"]
    assert (np.diff(stamp) < -1000).sum() > 100  # frames of other nodes overtaken by ms
    for node in range(8):
        mine = frames[frames["node"] == node]
        assert np.all(np.diff(mine["seq"].astype(int)) % 65536 == 1), node  # seq order per node
    sensed = np.isfinite(frames["event_hub_us"]) & (
        frames["msg_type"] != BY_NAME["CLOCK_SYNC"].msg_type
    )
    delay = frames["wire_hub_us"][sensed] - frames["event_hub_us"][sensed]
    assert delay.min() >= 0 and delay.max() <= 30_000


def _unwrap(t: np.ndarray) -> np.ndarray:
    return t.astype(np.int64) + WRAP * np.concatenate(
        [[0], np.cumsum(np.diff(t.astype(np.int64)) < -WRAP // 2)]
    )


def test_every_clock_drift_fit_from_clock_sync_is_the_configured_one(ten_minutes):
    wire, decoded, _, clocks, _ = ten_minutes
    sync = decoded.tables["CLOCK_SYNC"]
    boot = wire.timeline.boots[0]
    for peer in range(1, 8):
        mine = sync[sync["peer"] == peer]
        hub = _unwrap(mine["t_us"]).astype(float)
        node = _unwrap(mine["peer_t_us"]).astype(float)
        x = (hub - hub[0]) / 1e6
        fit = np.polyfit(x, node - hub, 2)
        good = (
            np.abs(node - hub - np.polyval(fit, x)) < 500
        )  # the cue's late retries (1-5 ms) are outliers
        fit = np.polyfit(x[good], (node - hub)[good], 2)
        mid = x[good].mean()
        fitted_ppm = 2 * fit[0] * mid + fit[1]  # d(node - hub)/d(hub s) in µs/s
        t_mid = boot.boot_s + mid
        hub_rate = 1e6 + clocks["clock_ppm"][0] + clocks["clock_drift_ppm_per_s"][0] * t_mid
        node_rate = 1e6 + clocks["clock_ppm"][peer] + clocks["clock_drift_ppm_per_s"][peer] * t_mid
        assert fitted_ppm == pytest.approx((node_rate / hub_rate - 1) * 1e6, abs=0.05), peer


def test_clock_sync_delays_are_positive_and_the_cue_retries_5_percent(ten_minutes):
    _, _, frames, _, _ = ten_minutes
    sync = frames[frames["msg_type"] == BY_NAME["CLOCK_SYNC"].msg_type]
    delay = sync["event_hub_us"] - sync["stamp_hub_us"]
    assert delay.min() > 7
    late = sync["note"] == LATE_BEACON
    assert delay[late].min() > 900 and delay[late].max() < 5500
    cue_share = late.sum() / np.count_nonzero(delay > 100)
    assert 0.02 < cue_share < 0.09


def test_rates_of_the_periodic_frames(ten_minutes):
    wire, decoded, _, _, _ = ten_minutes
    seconds = wire.end_s - wire.start_s
    per_type = decoded.stats.per_type
    assert per_type["HEARTBEAT"] == pytest.approx(seconds, abs=2)
    assert per_type["BALL_TRACK"] == pytest.approx((seconds - 1.5) * 120, rel=0.002)
    sync = decoded.tables["CLOCK_SYNC"]
    counts = np.bincount(sync["peer"], minlength=8)
    assert counts[3] >= 10 * (seconds - 1) and all(
        counts[p] >= 4 * (seconds - 1) for p in (1, 2, 4, 5, 6, 7)
    )


@pytest.mark.parametrize(
    ("model", "sigma_us"),
    [(rails, 50), (pockets, 100), (cue, 10), (lines, 100), (acoustic, 30), (tracker, 100)],
)
def test_onset_jitter_is_the_datasheet_sigma(match10, model, sigma_us):
    jitter: list[np.ndarray] = []
    rng = np.random.default_rng(5)
    while sum(map(len, jitter)) < 300:
        batch = model(match10, rng) if model is not tracker else model(rolling_match(1), rng)
        plain = ~np.isin(batch.note, (FALSE_CLICK, RING_DOWN))  # their stamp is not an onset
        jitter.append((batch.stamp_s - batch.event_s)[plain] * 1e6)
    every = np.concatenate(jitter)
    assert np.std(every) == pytest.approx(sigma_us, rel=0.2)
    assert abs(np.mean(every)) < sigma_us / 4


def test_ring_down_retriggers_follow_their_impact(ten_minutes):
    _, decoded, frames, _, _ = ten_minutes
    hits = decoded.tables["CUSHION_HIT"]
    truth = frames[np.searchsorted(frames["offset"], hits["offset"])]
    ring = truth["note"] == RING_DOWN
    assert ring.sum() >= 5
    for i in np.flatnonzero(ring):
        # the impact it rings on: same physical instant, same cushion, not itself a retrigger
        impact = np.flatnonzero(
            ~ring
            & (truth["event_hub_us"] == truth["event_hub_us"][i])
            & (hits["cushion"] == hits["cushion"][i])
        )
        assert len(impact) == 1
        delay = truth["stamp_hub_us"][i] - truth["stamp_hub_us"][impact[0]]
        assert 0 < delay < 4000
        assert hits["amplitude"][i] < 0.4 * hits["amplitude"][impact[0]]


@pytest.mark.parametrize(("speed_mps", "reported"), [(0.06, True), (0.04, False)])
def test_impacts_under_5_cm_per_s_are_not_reported(speed_mps, reported):
    match = rolling_match(1, speed_mps=speed_mps)
    batch = rails(match, np.random.default_rng(0))
    assert (np.count_nonzero(batch.note != RING_DOWN) == 1) == reported


def test_amplitude_grows_with_normal_speed():
    amp = [
        np.median(rails(rolling_match(20, v), np.random.default_rng(1)).records["amplitude"])
        for v in (0.5, 2, 5)
    ]
    assert amp[0] < amp[1] < amp[2] <= 4095


def test_tracker_occlusions_come_only_around_strokes(ten_minutes):
    _, _, frames, _, lines = ten_minutes
    track = frames[frames["msg_type"] == BY_NAME["BALL_TRACK"].msg_type]
    _, decoded, _, _, _ = ten_minutes
    hidden = ((decoded.tables["BALL_TRACK"]["balls"]["state"] & OCCLUDED) != 0).any(1)
    assert hidden.sum() > 100
    strokes = np.array([line["t_us"] for line in lines if line.get("type") == "cue_contact"], float)
    t = track["event_hub_us"][hidden]
    lead = strokes[None, :] - t[:, None]  # a player leans in up to 2.5 s before and 0.4 s after
    assert np.all(((lead >= -0.45e6) & (lead <= 2.55e6)).any(1))


def test_tracker_occludes_balls_near_the_player_at_shot_time():
    wire = build_wire(rolling_match(3), HubConfig(seed=2))
    track = decode_capture(b"".join(wire.chunks)).tables["BALL_TRACK"]
    state = track["balls"]["state"]
    ball = track["balls"]["ball"]
    occluded = (state & OCCLUDED) != 0
    assert occluded.any()
    assert set(np.unique(ball[occluded])) == {1}  # the ball behind the cue ball; the far one never
    assert np.all(track["count"] == 3)
    moving = (state & MOVING != 0) & (ball == 0)
    assert 0.2 < moving.sum() / len(track) < 0.6


def test_tracker_positions_have_0_7_mm_noise():
    wire = build_wire(rolling_match(1), HubConfig(seed=3))
    data = decode_capture(b"".join(wire.chunks)).tables["BALL_TRACK"]
    x = data["balls"]["x"][:, 2].astype(float) / 10  # ball 2 rests at (3000, 300)
    assert np.std(x) == pytest.approx(0.7, rel=0.1) and np.mean(x) == pytest.approx(3000, abs=0.1)


@pytest.mark.parametrize("hz", [120.0, 240.0])
def test_tracker_rate_option(hz):
    wire = build_wire(rolling_match(1), HubConfig(seed=3, tracker_hz=hz))
    rows = wire.truth[wire.truth["msg_type"] == BY_NAME["BALL_TRACK"].msg_type]
    assert np.median(np.diff(rows["event_hub_us"])) == pytest.approx(1e6 / hz, rel=1e-3)


def test_line_curtain_reports_every_crossing(ten_minutes):
    _, decoded, _, _, lines = ten_minutes
    cross = decoded.tables["LINE_CROSS"]
    truth = [line for line in lines if line.get("type") == "line_cross"]
    reported = np.count_nonzero(cross["direction"] != 2)
    assert (
        abs(reported - len(truth)) <= 2
    )  # a ball stopping within 1 mm of a line may go either way
    assert set(np.unique(cross["line"])) == {0, 1}


def test_line_curtain_reports_both_crossings_with_occlusion_length():
    wire = build_wire(rolling_match(6), HubConfig(seed=2, sensors="middle"))
    cross = decode_capture(b"".join(wire.chunks)).tables["LINE_CROSS"]
    assert set(np.unique(cross["direction"])) <= {0, 1, 2}
    assert (
        np.count_nonzero(cross["direction"] == 1) == np.count_nonzero(cross["direction"] == 0) == 6
    )
    # 68 mm of ball body at 1.5 m/s shadows the curtain for ~45 ms
    assert np.median(cross["duration_us"]) == pytest.approx(68 / 1.5 * 1000, rel=0.03)
    assert np.all(cross["pos_mm"] == 889)


def test_clicks_for_contacts_and_about_one_false_click_a_minute(ten_minutes):
    _, _, frames, _, lines = ten_minutes
    clicks = frames[frames["msg_type"] == BY_NAME["BALL_CLICK"].msg_type]
    false = clicks["note"] == FALSE_CLICK
    assert 3 <= false.sum() <= 20
    contacts = [line for line in lines if line.get("type") == "ball_contact"]
    assert 0.95 * len(contacts) <= (~false).sum() <= len(contacts)
    jitter = clicks["stamp_hub_us"][~false] - clicks["event_hub_us"][~false]
    assert np.std(jitter) == pytest.approx(30, rel=0.3)


@pytest.mark.parametrize("sensors", list(SENSOR_SETS))
def test_sensor_sets_send_only_their_nodes_and_say_so_in_hello(sensors):
    wire = build_wire(rolling_match(1), HubConfig(sensors=sensors))
    msgs = _messages(wire)
    hello = msgs[0]
    assert hello.name == "HELLO"
    assert hello.fields["nodes_present"] == sum(1 << n for n in SENSOR_SETS[sensors])
    assert {m.node for m in msgs} <= set(SENSOR_SETS[sensors])
    assert {m.fields["peer"] for m in msgs if m.name == "CLOCK_SYNC"} == set(
        SENSOR_SETS[sensors]
    ) - {0}


@pytest.mark.parametrize("near_wrap", [True, False])
def test_clocks_cross_the_wrap_when_asked(near_wrap):
    wire = build_wire(rolling_match(6), HubConfig(seed=11, near_wrap=near_wrap))
    truth = wire.truth
    for node in np.unique(truth["node"]):
        mine = truth[truth["node"] == node]
        wrapped = np.count_nonzero(np.diff(mine["t_us"].astype(np.int64)) < 0)
        crossed = mine["node_us"][-1] >= WRAP > mine["node_us"][0]
        assert wrapped == int(crossed), node
        if (
            near_wrap and mine["node_us"][-1] - mine["node_us"][0] > 60e6
        ):  # clocks boot < 60 s from 2**32
            assert crossed, node


def test_truth_file_is_events_with_hub_times_and_verdicts(ten_minutes):
    _wire, _, _, _, lines = ten_minutes
    assert lines[0]["type"] == "boot" and lines[0]["nodes"] == list(map(str, lines[0]["nodes"]))
    assert not [line for line in lines if line.get("type", "").startswith("_")]
    assert all("t_s" not in line for line in lines)
    t = [line["t_us"] for line in lines]
    assert t == sorted(t)
    assert [line.get("type") for line in lines].count("boot") == 1 and "boot_id" in lines[0]


def test_truth_file_carries_the_intended_verdicts(tmp_path):
    simulate(rolling_match(3), HubConfig(), tmp_path / "c.bin", tmp_path / "t.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    verdicts = [line for line in lines if line.get("kind") == "verdict"]
    assert [v["shot"] for v in verdicts] == [1, 2, 3]
    cue = [line for line in lines if line.get("type") == "cue_contact"]
    build = build_wire(rolling_match(3), HubConfig())
    assert cue[0]["t_us"] == round(float(build.timeline.boots[0].clocks[0].ticks(1.0)))


def test_hub_reboot_resets_clocks_counters_and_says_hello_again():
    wire = build_wire(rolling_match(3), HubConfig(faults=FaultPlan(reboots_s=(12.0,))))
    msgs = _messages(wire)
    hellos = [i for i, m in enumerate(msgs) if m.name == "HELLO"]
    assert (
        len(hellos) == 2 and msgs[hellos[0]].fields["boot_id"] != msgs[hellos[1]].fields["boot_id"]
    )
    assert msgs[hellos[1]].seq == 0
    after = msgs[hellos[1] :]
    for node in {m.node for m in after}:
        assert next(m.seq for m in after if m.node == node) == 0, node
    lines = truth_lines(rolling_match(3), wire)
    assert [line["boot_id"] for line in lines if line.get("type") == "boot"] == [
        b.boot_id for b in wire.timeline.boots
    ]


def test_node_offline_and_back():
    wire = build_wire(rolling_match(3), HubConfig(faults=FaultPlan(offline=((4, 5.0, 9.0),))))
    msgs = _messages(wire)
    status = [(m.fields["peer"], m.fields["code"]) for m in msgs if m.name == "NODE_STATUS"]
    assert status == [(4, 1), (4, 0)]
    hub0 = wire.timeline.boots[0].hub_us
    quiet = [m for m in msgs if m.node == 4 and hub0(5.0) + 30_000 < m.t_us < hub0(9.0)]
    assert quiet == []
    beats = [m.fields["nodes_ok"] for m in msgs if m.name == "HEARTBEAT"]
    assert any(not b & (1 << 4) for b in beats) and beats[-1] & (1 << 4)


def test_wire_faults_make_counted_bad_frames_and_keep_every_other_frame():
    plan = FaultPlan(garbage_s=(3.0, 8.0), dropped_bytes_s=(5.0,))
    wire = build_wire(rolling_match(1), HubConfig(faults=plan))
    decoded = decode_capture(b"".join(wire.chunks))
    assert decoded.stats.bad_total >= 3
    good = wire.truth[wire.truth["note"] != DAMAGED]
    ok = decoded.frames[decoded.frames["status"] == 0]
    assert np.array_equal(np.sort(ok["offset"]), np.sort(good["offset"]))


def test_stalled_link_holds_frames_then_drops_beyond_the_buffer():
    wire = build_wire(rolling_match(1), HubConfig(faults=FaultPlan(stalls=((4.0, 7.0),))))
    hub0 = wire.timeline.boots[0].hub_us
    sent = wire.truth["wire_hub_us"]
    assert not np.any((sent > hub0(4.0)) & (sent < hub0(7.0) - 1))
    decoded = decode_capture(b"".join(wire.chunks))
    assert sum(decoded.stats.lost.values()) > 0
    beats = decoded.tables["HEARTBEAT"]
    assert beats["tx_dropped"][-1] == sum(decoded.stats.lost.values())


def test_random_faults_plan_resolves_to_one_of_each():
    plan = FaultPlan.parse("random").resolve(np.random.default_rng(0), 600.0, SENSOR_SETS["full"])
    assert len(plan.garbage_s) == len(plan.reboots_s) == len(plan.offline) == len(plan.stalls) == 1


@pytest.mark.parametrize(
    ("spec", "ok"),
    [
        ("garbage@3,drop@4.5", True),
        ("offline:4@60-75", True),
        ("noack@0-10", True),
        ("offline:9@1-2", False),
        ("stall@5-4", False),
        ("melt@3", False),
        ("reboot", False),
    ],
)
def test_fault_spec_parsing(spec, ok):
    if ok:
        assert FaultPlan.parse(spec) != FaultPlan()
    else:
        with pytest.raises(ValueError, match="bad fault"):
            FaultPlan.parse(spec)


def _host(name: str, seq: int, flags: int = 0, **fields) -> Message:
    spec = BY_NAME[name]
    return Message(name, spec.msg_type, 0x80, seq, 0, flags, fields)


@pytest.mark.parametrize(
    ("frame", "status"),
    [
        (_host("SET_INDICATOR", 1, state=3, rule=19, hold_ms=0), ACK_OK),
        (_host("SET_INDICATOR", 2, state=7, rule=0, hold_ms=0), ACK_BAD_ARGUMENT),
        (_host("PING", 3, token=5), ACK_OK),
        (_host("REQUEST_HELLO", 4), ACK_OK),
        (UnknownFrame(0x90, 0x80, 5, 0, 0, b""), ACK_UNKNOWN),
        (Message("KEYPAD", 0x16, 0x80, 6, 0, 0, {"key": 1, "arg": 0}), ACK_UNKNOWN),
    ],
)
def test_host_commands_are_acked_with_the_icd_status(frame, status):
    ack, _ = HostCommands().receive(frame, 0.0)
    assert ack == {"acked_seq": frame.seq, "acked_type": frame.msg_type, "status": status}


def test_bad_host_frames_are_counted_not_acked():
    commands = HostCommands()
    assert commands.receive(BadFrame("crc", 0, 9), 0.0) == (None, False)
    assert commands.rx_bad == 1


def test_repeated_seq_is_acked_but_applied_once():
    commands = HostCommands()
    commands.receive(_host("SET_INDICATOR", 9, state=3, rule=19, hold_ms=0), 0.0)
    commands.receive(_host("SET_INDICATOR", 10, state=2, rule=0, hold_ms=0), 0.1)
    ack, _ = commands.receive(_host("SET_INDICATOR", 9, flags=1, state=3, rule=19, hold_ms=0), 0.2)
    assert ack["status"] == ACK_OK and commands.lamp(0.3) == 2
    ack, _ = commands.receive(_host("SET_INDICATOR", 11, flags=1, state=5, rule=0, hold_ms=0), 0.4)
    assert commands.lamp(0.5) == 5  # a resend whose first copy never arrived is applied


def test_held_lamp_goes_back_to_its_previous_state():
    commands = HostCommands()
    commands.receive(_host("SET_INDICATOR", 1, state=1, rule=0, hold_ms=0), 0.0)
    commands.receive(_host("SET_INDICATOR", 2, state=3, rule=19, hold_ms=500), 1.0)
    assert (commands.lamp(1.4), commands.lamp(1.6)) == (3, 1)


def test_request_hello_asks_for_hello():
    assert HostCommands().receive(_host("REQUEST_HELLO", 1), 0.0) == (
        {"acked_seq": 1, "acked_type": 0x81, "status": ACK_OK},
        True,
    )


def test_pocket_colour_is_wrong_one_time_in_a_hundred(match10):
    rng = np.random.default_rng(8)
    batches = [pockets(match10, rng) for _ in range(3000)]
    colour = np.concatenate([b.records["colour"] for b in batches])
    wrong = np.concatenate([b.note for b in batches]) == WRONG_COLOUR
    assert 0.006 < wrong.mean() < 0.014
    right = colour[~wrong]
    assert set(np.unique(right)) <= {0, 1} and set(np.unique(colour[wrong])) <= {0, 1}


def test_simulate_command_writes_capture_and_truth(tmp_path):
    args = [
        "simulate",
        "--capture",
        str(tmp_path / "c.bin"),
        "--truth",
        str(tmp_path / "t.jsonl"),
        "--frame-truth",
        str(tmp_path / "f.npz"),
        "--minutes",
        "0.3",
        "--sensors",
        "middle",
    ]
    assert main(args) == 0
    decoded = decode_capture((tmp_path / "c.bin").read_bytes())
    frames, clocks = load_frame_truth(tmp_path / "f.npz")
    assert decoded.stats.bad == {} and decoded.stats.frames == len(frames)
    assert json.loads(clocks["config"][()])["sensors"] == "middle"
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["type"] == "boot"


@pytest.mark.parametrize(
    "bad",
    [
        ["--minutes", "0"],
        ["--faults", "melt@1"],
        ["--scenario", "no_such_thing"],
        ["--speed", "-1"],
    ],
)
def test_simulate_command_rejects_unusable_arguments(tmp_path, bad, capsys):
    assert main(["simulate", "--capture", str(tmp_path / "c.bin"), *bad]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(("argv", "status"), [(["--scenario", "list"], 0), (["--seed", "3"], 2)])
def test_simulate_needs_an_output_except_to_list_scenarios(argv, status, capsys):
    assert main(["simulate", *argv]) == status
    listed = capsys.readouterr().out.split()
    assert listed == (sorted(SCENARIOS) if status == 0 else [])
