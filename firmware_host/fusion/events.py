"""Fusion's Python edge: kernel state, event records to EVENTS.md dicts, the ordered release.

Events are few (thousands an hour), so each becomes a dict here; the
per-frame work stays in :func:`kernel.fuse`.  The kernel emits some events
with a time in the recent past (a contact derived between two tracker
frames, a shot start whose struck ball was known a frame later), so they
wait in a heap keyed by (hub time, type order, emission number) and leave
it once the kernel's ``safe`` time has passed them: EVENTS.md's ``t_us``
order holds, and the key is the same whatever the chunking.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from firmware_host.timing.timeline import INFERRED_BOOT, Ordered
from protocol.catalogue import KEYPAD_KEYS, NODE_NAMES, NODE_STATUS_CODES
from protocol.geometry import DEFAULT_TABLE, LINE_NAMES, Table

from . import kernel as k
from .geometry import geometry

COLOURS = {0: "white", 1: "coloured"}
DIRECTIONS = {0: "front", 1: "back"}


@dataclass(frozen=True)
class FusionParams:
    """Thresholds of the fusion (µs unless named); defaults from ICD §7 and RULES.md."""

    debounce_us: int = 4_000  # ring-down window (ICD §7 rails)
    debounce_ratio_pct: int = 40  # ring-down amplitude bound
    double_hit_us: int = 300_000  # a second tip contact this soon is the same stroke (item 18)
    quiet_us: int = 4_000_000  # no tracker: the shot ends this long after the last activity
    still_frames: int = 2  # tracker frames with every ball still that end a shot (8 ms at 120 Hz)
    cue_wait_us: int = 100_000  # how long to wait for the struck ball to move
    contact_gap_us: int = (
        8_000  # one contact per pair within this window (a frozen ball's rebound is a second)
    )
    # with a live acoustic node a second collision of a pair clicks: a contact seen only in the
    # trajectories this soon after the pair's last one is the same touch (slow balls in contact)
    derived_gap_us: int = 150_000
    rest_frames: int = 120  # ... and a layout changed by hand is at rest after this many (1 s)
    frozen_gap_mm: float = 1.5  # RULES.md: resting against a cushion

    def array(self) -> np.ndarray:
        return np.array(
            [
                self.debounce_us,
                self.debounce_ratio_pct,
                self.double_hit_us,
                self.quiet_us,
                self.still_frames,
                self.cue_wait_us,
                self.contact_gap_us,
                self.rest_frames,
                self.derived_gap_us,
            ],
            np.int64,
        )


def fusion_arrays(params: FusionParams, table: Table) -> k.FusionArrays:
    """The kernel's state at the start of a stream."""
    never = np.iinfo(np.int64).min // 2
    return k.FusionArrays(
        fs=np.zeros(k.N_F, np.int64),
        prm=params.array(),
        geo=geometry(table, params.frozen_gap_mm),
        trk_t=np.zeros(k.HISTORY, np.int64),
        trk_xy=np.zeros((k.HISTORY, 16, 2)),
        trk_on=np.zeros((k.HISTORY, 16), np.uint8),
        trk_mv=np.zeros((k.HISTORY, 16), np.uint8),
        rest_xy=np.zeros((16, 2)),
        rest_n=np.zeros(16, np.int64),
        pair_t=np.full((16, 16), never, np.int64),
        hit_t=np.full(16, never, np.int64),
        cushion_hits=np.stack(
            [np.full((6, k.CUSHION_MEMORY), v, np.int64) for v in (never, 0, -1, -1)], axis=-1
        ),
        line_side=np.zeros((16, 2), np.int64),
        held_lines=np.zeros((k.LINE_HELD, 6), np.int64),
        layout_before=np.zeros((1, 16, 3)),
        frozen_before=np.zeros((1, 16), np.int64),
        shot_t=np.zeros(k.SHOT_FRAMES, np.int64),
        shot_xy=np.zeros((k.SHOT_FRAMES, 16, 2), np.float32),
        shot_on=np.zeros((k.SHOT_FRAMES, 16), np.uint8),
        shot_mv=np.zeros((k.SHOT_FRAMES, 16), np.uint8),
        held_contacts=np.zeros((k.HELD_CONTACTS, 3), np.int64),
        held_clicks=np.zeros((k.HELD_CLICKS, 3), np.int64),
        played=np.zeros((k.PLAYED, 5)),
        moved=np.full((16, 3), -1, np.int64),
        started=np.zeros(16, np.bool_),
        velocity=np.zeros((16, 2)),
        carried_xy=np.zeros((16, 2)),
        carried_on=np.zeros(16, np.bool_),
        carried_pen=np.zeros(16),
        fit_t=np.zeros(k.FIT_FRAMES, np.int64),
        fit_xy=np.zeros((k.FIT_FRAMES, 16, 2)),
        fit_ok=np.zeros((k.FIT_FRAMES, 16), np.uint8),
        soft=np.stack([np.full(16, v, np.int64) for v in (-1, 0, -1, 0, 0)], axis=-1),
        held_hits=np.full((16, 3), -1, np.int64),
    )


def _ball(b: int) -> int | None:
    return None if b < 0 else int(b)


def _layout(
    snap: np.ndarray, frozen: np.ndarray
) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    balls = {
        str(b): [round(float(snap[b, 0]), 1), round(float(snap[b, 1]), 1)]
        for b in range(16)
        if snap[b, 2]
    }
    rest = {
        str(b): [c for c in range(6) if frozen[b] >> c & 1]
        for b in range(16)
        if snap[b, 2] and frozen[b]
    }
    return balls, rest


def to_dict(
    rec: np.ndarray, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray
) -> dict[str, Any]:
    """One event record as its EVENTS.md line."""
    etype = int(rec[k.O_TYPE])
    shot = int(rec[k.O_SHOT])
    out: dict[str, Any] = {
        "t_us": int(rec[k.O_T]),
        "type": k.EVENT_NAMES[etype],
        "shot": shot if shot > 0 else None,
    }
    a, b = int(rec[k.O_A]), int(rec[k.O_B])
    snap = int(rec[k.O_SNAP])
    balls, rest = _layout(snaps[snap], frozen[snap]) if snap >= 0 else ({}, {})
    if etype == k.EV_BOOT:
        ball_um = int(rec[k.O_E])
        # a boot the timeline inferred (a join, a reboot whose HELLO was lost) has no id
        out["boot_id"] = a if a != INFERRED_BOOT else None
        if a == INFERRED_BOOT:
            out["inferred"] = True
        out["table"] = {
            "length_mm": float(rec[k.O_C]),
            "width_mm": float(rec[k.O_D]),
            "ball_mm": ball_um / 1000,
        }
        out["nodes"] = [NODE_NAMES[n] for n in range(8) if (b | 1) >> n & 1]
    elif etype == k.EV_SHOT_START:
        out |= {"cue_ball": _ball(int(rec[k.O_BALL])), "balls": balls, "frozen": rest}
    elif etype == k.EV_CUE_CONTACT:
        out |= {"duration_us": a, "force_n": b / 10}
    elif etype == k.EV_BALL_CONTACT:
        out["balls"] = [_ball(int(rec[k.O_BALL])), _ball(a)]
    elif etype == k.EV_CUSHION:
        out |= {"ball": _ball(int(rec[k.O_BALL])), "cushion": a}
        if b == k.SOURCE_TRACKER:  # too soft for the rails: the tracker saw the touch
            out["source"] = "tracker"
            if rec[k.O_C]:  # at a pocket's mouth before the frames could decide: it may have been
                out["certain"] = False
    elif etype == k.EV_POCKET:
        out |= {"ball": _ball(int(rec[k.O_BALL])), "pocket": a, "colour": COLOURS.get(b)}
    elif etype == k.EV_LINE_CROSS:
        out |= {
            "ball": _ball(int(rec[k.O_BALL])),
            "line": LINE_NAMES[a],
            "direction": DIRECTIONS[b],
        }
        if rec[k.O_C]:  # the ball stopped within the curtain's ambiguity, the tracker undecided
            out["certain"] = False
    elif etype == k.EV_BALL_MOVED:
        out["ball"] = _ball(int(rec[k.O_BALL]))
    elif etype == k.EV_SHOT_END:
        flags = int(rec[k.O_FLAGS])
        trail: dict[str, list[list[float]]] = {}
        points = paths[int(rec[k.O_PATH0]) : int(rec[k.O_PATH1])]
        xy = np.round(points[:, 2:4], 1).tolist()
        for ball, t, (x, y) in zip(
            points[:, 0].astype(int).tolist(), points[:, 1].astype(np.int64).tolist(), xy
        ):
            trail.setdefault(str(ball), []).append([t, x, y])
        out |= {
            "balls": balls,
            "certain": bool(flags & k.FLAG_CERTAIN),
            "interrupted": bool(flags & k.FLAG_INTERRUPTED),
            "paths": trail,
        }
    elif etype == k.EV_REST:
        out |= {"balls": balls, "frozen": rest}
    elif etype == k.EV_KEYPAD:
        out |= {"key": KEYPAD_KEYS.get(a, str(a)), "arg": b}
    elif etype == k.EV_NODE_STATUS:
        out |= {
            "node": NODE_NAMES.get(a, str(a)),
            "status": NODE_STATUS_CODES.get(b, str(b)),
            "source": "host" if int(rec[k.O_C]) == k.STATUS_SILENT else "hub",
        }
    return out


_PRESSED = 1 << 62  # the heap numbers of presses from the host: after the kernel's own


class Fusion:
    """Ordered rows in, EVENTS.md events out (in ``t_us`` order), across any number of calls."""

    def __init__(self, params: FusionParams | None = None, table: Table = DEFAULT_TABLE) -> None:
        self.params = params or FusionParams()
        self.state = fusion_arrays(self.params, table)
        self._heap: list[tuple[int, int, int, dict[str, Any]]] = []
        # every ball's whole path, at most: one shot's worth of tracker frames (points past it are counted)
        self._paths = np.empty((64 + 16 * k.SHOT_FRAMES, 4))
        self._released_t = np.iinfo(np.int64).min
        self._late = 0
        self._presses = 0
        self._safe: int | None = None  # the kernel's last safe bound: nothing earlier can follow

    @property
    def counters(self) -> dict[str, int]:
        fs = self.state.fs
        return {
            "shots": int(fs[k.F_SHOT]),
            "events_dropped": int(fs[k.F_EV_CUT]),
            "path_points_dropped": int(fs[k.F_PATHS_CUT]),
            "events_late": self._late,
            "snapshots_dropped": int(fs[k.F_SNAPS_CUT]),
            "shot_frames_dropped": int(fs[k.F_SHOT_FRAMES_CUT]),
            "held_full": int(fs[k.F_HELD_CUT]),
            "played_dropped": int(fs[k.F_PLAYED_CUT]),
            "cushion_hits_forgotten": int(fs[k.F_HITS_CUT]),
        }

    def feed(self, ordered: Ordered, upto_hub_us: int) -> list[dict[str, Any]]:
        """Rows the timeline released, and the hub time it has released up to."""
        n = len(ordered)
        cap = 256 + 8 * n
        ev = np.empty((cap, k.N_OUT), np.int64)
        snaps = np.zeros((cap, 16, 3))
        frozen = np.zeros((cap, 16), np.int64)
        paths = self._paths  # reused: to_dict copies the points out
        nev, _, _, safe = k.fuse(
            self.state,
            ordered.store,
            ordered.synthetic,
            ordered.index,
            ordered.store_tracks,
            np.int64(upto_hub_us),
            ev,
            snaps,
            frozen,
            paths,
        )
        for rec in ev[:nev]:
            self._push(rec, snaps, frozen, paths)
        self._safe = int(safe)
        return self._release(self._safe)

    def press(self, t_us: int, key: str, arg: int) -> list[dict[str, Any]]:
        """A keypad press that came from the host (the referee's page), not from a frame.

        It joins the heap like the kernel's keypad events, at ``t_us`` or just
        after what is already released, so it leaves in ``t_us`` order with
        the frames around it; its shot is the one the kernel is in now.
        """
        fs = self.state.fs
        t = max(int(t_us), int(self._released_t))
        self._presses += 1
        event = {
            "t_us": t,
            "type": "keypad",
            "shot": int(fs[k.F_SHOT]) if fs[k.F_IN_SHOT] else None,
            "key": key,
            "arg": int(arg),
        }
        # after every kernel emission of the same time and type: the kernel's numbers are smaller
        heapq.heappush(self._heap, (t, k.EV_KEYPAD, _PRESSED + self._presses, event))
        return self._release(self._safe) if self._safe is not None else []

    def _push(
        self, rec: np.ndarray, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray
    ) -> None:
        key = (int(rec[k.O_T]), int(rec[k.O_TYPE]), int(rec[k.O_SEQ]))
        heapq.heappush(self._heap, (*key, to_dict(rec, snaps, frozen, paths)))

    def flush(self) -> list[dict[str, Any]]:
        """End of the input: decisions still waiting for more rows are taken, all is released."""
        ev = np.empty((k.LINE_HELD + 16, k.N_OUT), np.int64)
        nev = k.settle(self.state, ev)
        for rec in ev[:nev]:
            self._push(rec, np.zeros((1, 16, 3)), np.zeros((1, 16), np.int64), self._paths)
        return self._release(None)

    def _release(self, before: int | None) -> list[dict[str, Any]]:
        """Events before ``before`` (all: None), in order.

        The kernel's ``safe`` bound keeps every later emission at or after
        what is released; should a strange stream ever break that, the
        event is counted (``events_late``) and dropped, so the output is
        always in ``t_us`` order.
        """
        out = []
        while self._heap and (before is None or self._heap[0][0] < before):
            event = heapq.heappop(self._heap)[3]
            if event["t_us"] < self._released_t:
                self._late += 1
                continue
            self._released_t = event["t_us"]
            out.append(event)
        return out
