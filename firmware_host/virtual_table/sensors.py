"""The sensor model: what each node of the table would report about a :class:`MatchTruth`.

Every figure of ICD §7 is applied here (onset jitter, ring-down, soft impacts,
wrong colours, tracker noise and occlusion, curtain durations, missed and
false clicks).  The output is one :class:`Batch` per message type: records of
the catalogue's own dtype (:func:`protocol.layout.layout`) with the payload
filled in, plus, per frame, the true instant the node's clock stamped it and
the true instant of the physical event behind it.  Clock readings, ``seq``
and arrival order are the hub's business (:mod:`.hub`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from protocol.catalogue import BY_NAME, KEYPAD_CODES, PROTOCOL_VERSION
from protocol.layout import layout

from .truth import MOVING, OCCLUDED, MatchTruth

SENSOR_SETS: dict[str, tuple[int, ...]] = {
    "minimum": (0, 1, 2, 3),
    "middle": (0, 1, 2, 3, 5, 6),
    "full": (0, 1, 2, 3, 4, 5, 6, 7),
}

# Frame notes in the frame truth: why a frame is special.
# FLOODED: a frame of a tracker gone wrong (faults.py flood-tracker), no sensing behind it.
PLAIN, RING_DOWN, FALSE_CLICK, LATE_BEACON, WRONG_COLOUR, NEAR_LINE, DAMAGED, FLOODED = range(8)

# ICD §7 figures.
RAILS_JITTER_S, RING_DOWN_S, RING_DOWN_MAX, SOFT_IMPACT_MPS = 50e-6, 4e-3, 0.40, 0.05
POCKET_JITTER_S, WRONG_COLOUR_P = 100e-6, 0.01
CUE_JITTER_S, CUE_RESOLUTION_US = 10e-6, 10
TRACK_SIGMA_MM, TRACK_JITTER_S = 0.7, 100e-6
LINE_JITTER_S, LINE_EITHER_WAY_MM = 100e-6, 1.0
CLICK_JITTER_S, CLICK_SIGMA_MM, SOFT_MISS_P, FALSE_CLICKS_PER_S = 30e-6, 30.0, 0.01, 1 / 60
# Spec-silent choices (docs/virtual-table-sensors.md).
RING_DOWN_P = 0.35  # chance an impact rings on; each ring-on adds 1-2 retriggers
SOFT_CONTACT_MPS = 0.3  # a ball-ball contact under this relative speed is "soft"
OCCLUSION_RADIUS_MM, PLAYER_BEHIND_MM = 300.0, 400.0
OCCLUSION_BEFORE_S, OCCLUSION_AFTER_S = (1.0, 2.5), (0.15, 0.4)
# a camera phased at a contact (tests): a frame within this of it; the phase is set this long
# before the shot's tip contact
CONTACT_PHASE_S, CONTACT_PHASE_LEAD_S = 150e-6, 0.05
U16 = 65535


@dataclass
class Batch:
    """Frames of one message type, payload filled, header ``t_us``/``seq`` not yet.

    ``stamp_s`` is the true time at which the sending node's clock was read
    (the event plus the sensor's jitter); ``event_s`` the true time of the
    physical event (NaN where there is none, e.g. a false click's noise is
    its own event); ``latency_s`` how long after the stamp the hub has the
    frame in its queue; ``note`` one of the frame-note codes above.
    """

    msg_type: int
    records: np.ndarray
    stamp_s: np.ndarray
    event_s: np.ndarray
    latency_s: np.ndarray
    note: np.ndarray

    def __len__(self) -> int:
        return len(self.records)

    @classmethod
    def build(
        cls,
        name: str,
        node: int | np.ndarray,
        stamp_s: np.ndarray,
        event_s: np.ndarray,
        latency_s: np.ndarray,
        note: np.ndarray | int = PLAIN,
        **fields: Any,
    ) -> Batch:
        """Records of message ``name`` with its header constants and payload ``fields``."""
        spec = BY_NAME[name]
        n = len(stamp_s)
        records = np.zeros(n, layout(spec.msg_type).dtype)
        records["version"] = PROTOCOL_VERSION
        records["msg_type"] = spec.msg_type
        records["node"] = node
        for key, value in fields.items():
            records[key] = value
        notes = np.broadcast_to(np.asarray(note, dtype=np.uint8), (n,)).copy()
        return cls(
            spec.msg_type,
            records,
            np.asarray(stamp_s, float),
            np.asarray(event_s, float),
            np.asarray(latency_s, float),
            notes,
        )


def events_of(truth: MatchTruth, kind: str) -> list[dict[str, Any]]:
    return [e for e in truth.events if e["type"] == kind]


def _positions(truth: MatchTruth, t_s: np.ndarray, balls: np.ndarray) -> np.ndarray:
    """(n, 2) centre of ball ``balls[i]`` at ``t_s[i]``, in mm."""
    if len(t_s) == 0:
        return np.zeros((0, 2))
    xy, _, _ = truth.sample(np.asarray(t_s, float))
    return xy[np.arange(len(t_s)), balls]


def _u16(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, U16).astype(np.uint16)


def _amplitude(rng: np.random.Generator, speed_mps: np.ndarray, scale: float) -> np.ndarray:
    """Peak ADC counts growing with impact speed, with shot-to-shot spread."""
    raw = (
        scale * np.power(np.maximum(speed_mps, 0.0), 0.8) * rng.lognormal(0.0, 0.1, len(speed_mps))
    )
    return np.clip(np.rint(raw), 1, 4095).astype(np.uint16)


def _latency(rng: np.random.Generator, n: int, low_ms: float, high_ms: float) -> np.ndarray:
    return rng.uniform(low_ms, high_ms, n) * 1e-3


def rails(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """CUSHION_HIT: soft impacts unreported, amplitude from normal speed, ring-down retriggers."""
    hits = [e for e in events_of(truth, "cushion") if e.get("speed_mps", 1.0) >= SOFT_IMPACT_MPS]
    t = np.array([e["t_s"] for e in hits], float)
    cushion = np.array([e["cushion"] for e in hits], np.int64)
    speed = np.array([e.get("speed_mps", 1.0) for e in hits], float)
    xy = _positions(truth, t, np.array([e["ball"] for e in hits], np.int64))
    pos = np.where(np.isin(cushion, (0, 3)), xy[:, 1], xy[:, 0]) if len(hits) else np.zeros(0)
    amp = _amplitude(rng, speed, 1200.0)
    stamp = t + rng.normal(0.0, RAILS_JITTER_S, len(t))
    # Ring-down: 1-2 further onsets on the same cushion, within 4 ms, under 40 % amplitude.
    rings = np.where(rng.random(len(t)) < RING_DOWN_P, rng.integers(1, 3, len(t)), 0)
    src = np.repeat(np.arange(len(t)), rings)
    delay = np.sort(rng.uniform(0.3e-3, RING_DOWN_S * 0.95, len(src)))
    ring_amp = np.maximum(amp[src] * rng.uniform(0.05, RING_DOWN_MAX * 0.97, len(src)), 1)
    order = np.argsort(np.concatenate([stamp, stamp[src] + delay]), kind="stable")
    cat = lambda a, b: np.concatenate([a, b])[order]
    n_all = len(t) + len(src)
    return Batch.build(
        "CUSHION_HIT",
        1,
        cat(stamp, stamp[src] + delay),
        cat(t, t[src]),
        _latency(rng, n_all, 0.2, 3.0),
        note=cat(np.full(len(t), PLAIN), np.full(len(src), RING_DOWN)),
        cushion=cat(cushion, cushion[src]),
        pos_mm=_u16(cat(pos, pos[src])),
        amplitude=cat(amp, ring_amp.astype(np.uint16)),
    )


def pockets(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """POCKET_DROP: beam jitter, colour wrong 1 % of the time, beam time from speed."""
    drops = events_of(truth, "pocket")
    t = np.array([e["t_s"] for e in drops], float)
    ball = np.array([e["ball"] for e in drops], np.int64)
    speed = np.array([e.get("speed_mps", 1.0) for e in drops], float)
    colour = np.where(ball == 0, 1, 0)
    wrong = rng.random(len(t)) < WRONG_COLOUR_P
    # The beam sits in the throat: the ball crosses it falling (~1 m/s) as well as rolling.
    beam_us = 68e3 / np.hypot(speed, 1.0) if len(t) else np.zeros(0)
    return Batch.build(
        "POCKET_DROP",
        2,
        t + rng.normal(0.0, POCKET_JITTER_S, len(t)),
        t,
        _latency(rng, len(t), 0.2, 3.0),
        note=np.where(wrong, WRONG_COLOUR, PLAIN),
        pocket=[e["pocket"] for e in drops],
        colour=np.where(wrong, 1 - colour, colour),
        beam_us=_u16(beam_us),
    )


def cue(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """CUE_CONTACT: start jitter 10 µs, duration in 10 µs steps capped at 65535."""
    contacts = events_of(truth, "cue_contact")
    t = np.array([e["t_s"] for e in contacts], float)
    duration = np.array([e["duration_us"] for e in contacts], float)
    force = np.array([e["force_n"] for e in contacts], float)
    return Batch.build(
        "CUE_CONTACT",
        3,
        t + rng.normal(0.0, CUE_JITTER_S, len(t)),
        t,
        _latency(rng, len(t), 2.0, 12.0),  # radio relay
        duration_us=_u16(np.rint(duration / CUE_RESOLUTION_US) * CUE_RESOLUTION_US),
        peak_force_dn=_u16(force * 10.0),
    )


def _line_x(truth: MatchTruth, line: str | int) -> float:
    centre = line in ("centre", 0)
    return truth.table.centre_line_x if centre else truth.table.house_line_x


def _curtain_us(
    truth: MatchTruth, t: np.ndarray, ball: np.ndarray, line_x: np.ndarray
) -> np.ndarray:
    """How long the ball body shadowed the curtain around each event (capped at 65535 µs)."""
    step = 0.25e-3
    offsets = np.arange(-0.07, 0.07 + step, step)
    n, m = len(t), len(offsets)
    if n == 0:
        return np.zeros(0)
    xy, _, _ = truth.sample((t[:, None] + offsets[None, :]).ravel())
    x = xy[np.arange(n * m), np.repeat(ball, m), 0].reshape(n, m)
    inside = np.abs(x - line_x[:, None]) < truth.table.ball_mm / 2
    mid = m // 2
    # contiguous run through the event's own sample
    left = np.where(~inside[:, :mid][:, ::-1].any(1), mid, np.argmin(inside[:, :mid][:, ::-1], 1))
    right = np.where(~inside[:, mid:].all(1), np.argmin(inside[:, mid:], 1), m - mid)
    return (left + right) * step * 1e6


def lines(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """LINE_CROSS for centre and house lines, same-side returns as direction 2.

    A ball that stops with its centre within 1 mm of a line may have its last
    report on that line turned either way (ICD §7): half of them are.
    """
    crossings = events_of(truth, "line_cross") + events_of(truth, "_line_touch")
    crossings.sort(key=lambda e: e["t_s"])
    t = np.array([e["t_s"] for e in crossings], float)
    ball = np.array([e["ball"] for e in crossings], np.int64)
    line = np.array([0 if e["line"] in ("centre", 0) else 1 for e in crossings], np.int64)
    direction = np.array(
        [
            2 if e["type"] == "_line_touch" else (0 if e["direction"] == "front" else 1)
            for e in crossings
        ],
        np.int64,
    )
    line_x = np.array([_line_x(truth, e["line"]) for e in crossings], float)
    note = np.zeros(len(t), np.uint8)
    stops = events_of(truth, "_ball_stop")
    stop_xy = _positions(
        truth,
        np.array([e["t_s"] for e in stops], float),
        np.array([e["ball"] for e in stops], np.int64),
    )
    for stop, (x, _) in zip(stops, stop_xy, strict=True):
        for which, lx in ((0, truth.table.centre_line_x), (1, truth.table.house_line_x)):
            mine = np.flatnonzero((ball == stop["ball"]) & (line == which) & (t <= stop["t_s"]))
            if abs(x - lx) < LINE_EITHER_WAY_MM and len(mine) and rng.random() < 0.5:
                i = mine[-1]
                # a crossing seen as a return, or a return seen as a crossing onto the ball's side
                direction[i] = 2 if direction[i] != 2 else int(x >= lx)
                note[i] = NEAR_LINE
    xy = _positions(truth, t, ball)
    return Batch.build(
        "LINE_CROSS",
        5,
        t + rng.normal(0.0, LINE_JITTER_S, len(t)),
        t,
        _latency(rng, len(t), 0.2, 3.0),
        note=note,
        line=line,
        pos_mm=_u16(xy[:, 1]) if len(t) else np.zeros(0),
        direction=direction,
        duration_us=_u16(_curtain_us(truth, t, ball, line_x)),
    )


def acoustic(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """BALL_CLICK: onset jitter, TDOA position noise, 1 % of soft contacts missed, false clicks."""
    contacts = events_of(truth, "ball_contact")
    speed = np.array([e.get("speed_mps", 1.0) for e in contacts], float)
    heard = ~((speed < SOFT_CONTACT_MPS) & (rng.random(len(contacts)) < SOFT_MISS_P))
    contacts = [e for e, h in zip(contacts, heard, strict=True) if h]
    speed = speed[heard]
    t = np.array([e["t_s"] for e in contacts], float)
    pair = np.array([e["balls"] for e in contacts], np.int64).reshape(-1, 2)
    where = (_positions(truth, t, pair[:, 0]) + _positions(truth, t, pair[:, 1])) / 2
    n_false = rng.poisson(FALSE_CLICKS_PER_S * truth.duration_s)
    t_false = rng.uniform(0.0, truth.duration_s, n_false)
    where_false = rng.uniform((0, 0), (truth.table.length_mm, truth.table.width_mm), (n_false, 2))
    t_all = np.concatenate([t, t_false])
    order = np.argsort(t_all, kind="stable")
    xy = np.concatenate([where, where_false]) + rng.normal(0.0, CLICK_SIGMA_MM, (len(t_all), 2))
    amp = np.concatenate(
        [_amplitude(rng, speed, 1500.0), rng.integers(20, 300, n_false).astype(np.uint16)]
    )
    return Batch.build(
        "BALL_CLICK",
        6,
        (t_all + rng.normal(0.0, CLICK_JITTER_S, len(t_all)))[order],
        t_all[order],
        _latency(rng, len(t_all), 0.2, 3.0),
        note=np.concatenate([np.full(len(t), PLAIN), np.full(n_false, FALSE_CLICK)])[order],
        x_mm=_u16(xy[order, 0]),
        y_mm=_u16(xy[order, 1]),
        amplitude=amp[order],
    )


def _occlusion(
    truth: MatchTruth, rng: np.random.Generator, t: np.ndarray, xy: np.ndarray
) -> np.ndarray:
    """(frames, 16) bool: balls a player leaning over the cue ball hides around each stroke."""
    hidden = np.zeros(xy.shape[:2], bool)
    strokes = [e for e in events_of(truth, "cue_contact") if e.get("ball") is not None]
    if not strokes:
        return hidden
    t_c = np.array([e["t_s"] for e in strokes], float)
    ball = np.array([e["ball"] for e in strokes], np.int64)
    before = _positions(truth, t_c, ball)
    after = _positions(truth, t_c + 0.05, ball)
    heading = after - before
    norm = np.hypot(heading[:, 0], heading[:, 1])
    random_dir = rng.uniform(0, 2 * np.pi, len(t_c))
    unit = np.where(
        (norm > 1e-6)[:, None],
        heading / np.maximum(norm, 1e-9)[:, None],
        np.stack([np.cos(random_dir), np.sin(random_dir)], 1),
    )
    player = before - unit * PLAYER_BEHIND_MM
    start = t_c - rng.uniform(*OCCLUSION_BEFORE_S, len(t_c))
    end = t_c + rng.uniform(*OCCLUSION_AFTER_S, len(t_c))
    for s, e, p, b in zip(start, end, player, ball, strict=True):
        i0, i1 = np.searchsorted(t, (s, e))
        near = np.hypot(*(xy[i0:i1] - p).transpose(2, 0, 1)) < OCCLUSION_RADIUS_MM
        near[:, b] = False  # the struck ball stays in view
        hidden[i0:i1] |= near
    return hidden


def _predict_hidden(
    measured: np.ndarray, state: np.ndarray, hidden: np.ndarray, dt: float
) -> np.ndarray:
    """Replace hidden positions by the tracker's prediction from the last frames it saw.

    A ball last seen at rest is held where it was; one last seen moving is
    carried on at its last measured velocity.
    """
    out = measured.copy()
    frames, balls = np.nonzero(hidden)
    for ball in np.unique(balls):
        rows = frames[balls == ball]
        runs = np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)
        for run in runs:
            last = run[0] - 1
            if last < 0:
                continue  # never seen: keep the (noisy) position, flagged occluded
            velocity = np.zeros(2)
            if state[last, ball] & MOVING and last >= 1 and not hidden[last - 1, ball]:
                velocity = (out[last, ball] - out[last - 1, ball]) / dt
            out[run, ball] = out[last, ball] + velocity * ((run - last) * dt)[:, None]
    return out


def frame_times(
    truth: MatchTruth, rng: np.random.Generator, hz: float = 120.0, at_contacts: float = 0.0
) -> np.ndarray:
    """True exposure instants of the tracker's frames: ``hz`` from t = 0, or, with
    ``at_contacts`` > 0, that share of the shots filmed with the camera's phase chosen so a
    frame is exposed within ``CONTACT_PHASE_S`` of one of the shot's ball contacts.

    A camera's phase against the play is arbitrary: a frame lands within ±150 µs of a
    given contact 3.6 % of the time at 120 Hz. Choosing it per shot makes the case
    common enough to test (a frame exposed at the instant a ball at rest is struck).
    The phase changes 50 ms before the shot's tip contact, while the balls rest; a frame
    closer than half a period to the previous one is left out, so every interval is
    ½–1 period.
    """
    period = 1.0 / hz
    if at_contacts <= 0.0:
        return np.arange(0.0, truth.duration_s, period)
    tips = [e["t_s"] for e in events_of(truth, "cue_contact")]
    contacts = np.array([e["t_s"] for e in events_of(truth, "ball_contact")], float)
    starts = np.array([e["t_s"] for e in events_of(truth, "_ball_start")], float)
    bounds = [0.0, *(t - CONTACT_PHASE_LEAD_S for t in tips[1:]), truth.duration_s]
    out: list[np.ndarray] = []
    last = -np.inf
    for lo, hi in pairwise(bounds):
        mine = contacts[(contacts >= lo) & (contacts < hi)]
        # a contact that sets a ball at rest moving (the struck object ball) when there is one
        sets_off = mine[np.isin(np.round(mine, 9), np.round(starts, 9))]
        pool = sets_off if len(sets_off) else mine
        if len(pool) and rng.random() < at_contacts:
            target = rng.choice(pool) + rng.uniform(-CONTACT_PHASE_S, CONTACT_PHASE_S)
            first = target - np.floor((target - lo) / period) * period
        else:
            first = lo if lo == 0.0 else lo + rng.uniform(0.0, period)
        t = np.arange(first, hi, period)
        out.append(t[t >= last + period / 2])
        if len(out[-1]):
            last = out[-1][-1]
    return np.concatenate(out)


def tracker(
    truth: MatchTruth, rng: np.random.Generator, hz: float = 120.0, at_contacts: float = 0.0
) -> Batch:
    """BALL_TRACK at ``hz``: position noise, exposure-stamp jitter, state bits, occlusions
    (``at_contacts``: see :func:`frame_times`)."""
    t = frame_times(truth, rng, hz, at_contacts)
    xy, state, present = truth.sample(t)
    measured = xy + rng.normal(0.0, TRACK_SIGMA_MM, xy.shape)
    hidden = _occlusion(truth, rng, t, xy) & present
    measured = _predict_hidden(measured, state, hidden, 1.0 / hz)
    flags = state.astype(np.uint8) | np.where(hidden, OCCLUDED, 0).astype(np.uint8)
    listed = np.argsort(~present, axis=1, kind="stable")  # balls on the table first, by number
    rows = np.arange(len(t))[:, None]
    balls = np.zeros((len(t), 16), layout(BY_NAME["BALL_TRACK"].msg_type).dtype["balls"].base)
    balls["ball"] = listed
    balls["state"] = flags[rows, listed]
    balls["x"] = _u16(measured[rows, listed, 0] * 10.0)
    balls["y"] = _u16(measured[rows, listed, 1] * 10.0)
    return Batch.build(
        "BALL_TRACK",
        4,
        t + rng.normal(0.0, TRACK_JITTER_S, len(t)),
        t,
        _latency(rng, len(t), 10.0, 25.0),  # image processing
        frame=np.arange(len(t)) & 0xFFFF,
        count=present.sum(1),
        balls=balls,
    )


def keypad(truth: MatchTruth, rng: np.random.Generator) -> Batch:
    """KEYPAD presses the scenario made (key names as EVENTS.md writes them)."""
    presses = events_of(truth, "keypad")
    t = np.array([e["t_s"] for e in presses], float)
    return Batch.build(
        "KEYPAD",
        7,
        t,
        t,
        _latency(rng, len(t), 1.0, 5.0),
        key=[KEYPAD_CODES[e["key"]] for e in presses],
        arg=[e.get("arg", 0) for e in presses],
    )


SENSOR_MODELS: dict[int, Callable[..., Batch]] = {
    1: rails,
    2: pockets,
    3: cue,
    4: tracker,
    5: lines,
    6: acoustic,
    7: keypad,
}


def sense(
    truth: MatchTruth,
    nodes: tuple[int, ...],
    rng: np.random.Generator,
    tracker_hz: float = 120.0,
    tracker_at_contacts: float = 0.0,
) -> list[Batch]:
    """Every present sensor node's frames about ``truth`` (hub frames excluded)."""
    out = []
    for node in nodes:
        if node == 4:
            out.append(tracker(truth, rng, tracker_hz, tracker_at_contacts))
        elif node in SENSOR_MODELS:
            out.append(SENSOR_MODELS[node](truth, rng))
    return out
