"""Fusion's Python edge: kernel state, event records to EVENTS.md dicts, the ordered release.

Events are few (thousands an hour), so each becomes a dict here
(:func:`.dicts.to_dict`, as the event catalogue says); the per-frame work
stays in :func:`.fuse.fuse`.  The kernel emits some events
with a time in the recent past (a contact derived between two tracker
frames, a shot start whose struck ball was known a frame later), so they
wait in a heap keyed by (hub time, type order, emission number) and leave
it once the kernel's ``safe`` time has passed them: EVENTS.md's ``t_us``
order holds, and the key is the same whatever the chunking.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from firmware_host.timing.timeline import Ordered
from protocol.geometry import DEFAULT_TABLE, Table

from . import records
from .dicts import to_dict
from .fuse import fuse, settle
from .geometry import geometry
from .records import N_COUNTERS, Out
from .state import IN_SHOT, LINE_HELD, SHOT_FRAMES, SHOT_NUMBER, FusionState, Params, new_state

RING_DOWN_US = 4_000  # ICD §7 rails: an impact may retrigger on its cushion within 4 ms
RAILS_JITTER_US = 50  # ICD §7 rails: onset jitter σ
# the window for an echo's stamp: the datasheet's 4 ms after the impact, plus 4 σ of the
# difference of two jittered stamps (4 × 50 µs × √2 = 0.28 ms): an echo at 4.06 ms is the
# impact ringing, not a second hit (issue 28)
DEBOUNCE_US = RING_DOWN_US + round(4 * RAILS_JITTER_US * math.sqrt(2))


@dataclass(frozen=True)
class FusionParams:
    """Thresholds of the fusion (µs unless named); defaults from ICD §7 and RULES.md."""

    debounce_us: int = DEBOUNCE_US  # ring-down window (ICD §7 rails, with their jitter)
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

    def kernel(self) -> Params:
        """The thresholds as the kernels take them (int64)."""
        return Params(**{name: np.int64(getattr(self, name)) for name in Params._fields})


def fusion_arrays(params: FusionParams, table: Table) -> FusionState:
    """The kernel's state at the start of a stream."""
    return new_state(
        params.kernel(), geometry(table, params.frozen_gap_mm), np.zeros(N_COUNTERS, np.int64)
    )


_PRESSED = 1 << 62  # the heap numbers of presses from the host: after the kernel's own


class Fusion:
    """Ordered rows in, EVENTS.md events out (in ``t_us`` order), across any number of calls."""

    def __init__(self, params: FusionParams | None = None, table: Table = DEFAULT_TABLE) -> None:
        self.params = params or FusionParams()
        self.state = fusion_arrays(self.params, table)
        self._heap: list[tuple[int, int, int, dict[str, Any]]] = []
        # every ball's whole path, at most: one shot's worth of tracker frames (points past it are counted)
        self._paths = np.empty((64 + 16 * SHOT_FRAMES, 4))
        self._released_t = np.iinfo(np.int64).min
        self._late = 0
        self._presses = 0
        self._safe: int | None = None  # the kernel's last safe bound: nothing earlier can follow

    @property
    def counters(self) -> dict[str, int]:
        counted = self.state.counters
        return {
            "shots": int(self.state.shot.state[SHOT_NUMBER]),
            "events_dropped": int(counted[records.EVENTS_DROPPED]),
            "path_points_dropped": int(counted[records.PATH_POINTS_DROPPED]),
            "events_late": self._late,
            "snapshots_dropped": int(counted[records.LAYOUTS_DROPPED]),
            "shot_frames_dropped": int(counted[records.SHOT_FRAMES_DROPPED]),
            "held_full": int(counted[records.HELD_FULL]),
            "played_dropped": int(counted[records.PLAYED_DROPPED]),
            "cushion_hits_forgotten": int(counted[records.CUSHION_HITS_FORGOTTEN]),
        }

    def _out(self, events: int, layouts: int) -> Out:
        """Buffers for one call: room for ``events`` records and ``layouts`` layouts."""
        return Out(
            events=np.empty((events, records.N_OUT), np.int64),
            layouts=np.zeros((layouts, 16, 3)),
            frozen=np.zeros((layouts, 16), np.int64),
            paths=self._paths,  # reused: to_dict copies the points out
            written=np.zeros(3, np.int64),
            counters=self.state.counters,
        )

    def feed(self, ordered: Ordered, upto_hub_us: int) -> list[dict[str, Any]]:
        """Rows the timeline released, and the hub time it has released up to."""
        cap = 256 + 8 * len(ordered)
        out = self._out(cap, cap)
        safe = fuse(
            self.state,
            ordered.store,
            ordered.synthetic,
            ordered.index,
            ordered.store_tracks,
            np.int64(upto_hub_us),
            out,
        )
        self._take(out)
        self._safe = int(safe)
        return self._release(self._safe)

    def press(self, t_us: int, key: str, arg: int) -> list[dict[str, Any]]:
        """A keypad press that came from the host (the referee's page), not from a frame.

        It joins the heap like the kernel's keypad events, at ``t_us`` or just
        after what is already released, so it leaves in ``t_us`` order with
        the frames around it; its shot is the one the kernel is in now.
        """
        shot = self.state.shot.state
        t = max(int(t_us), int(self._released_t))
        self._presses += 1
        event = {
            "t_us": t,
            "type": "keypad",
            "shot": int(shot[SHOT_NUMBER]) if shot[IN_SHOT] else None,
            "key": key,
            "arg": int(arg),
        }
        # after every kernel emission of the same time and type: the kernel's numbers are smaller
        heapq.heappush(self._heap, (t, records.EV_KEYPAD, _PRESSED + self._presses, event))
        return self._release(self._safe) if self._safe is not None else []

    def _take(self, out: Out) -> None:
        """The records a call wrote, into the heap as EVENTS.md dicts."""
        for rec in out.events[: out.written[records.EVENTS_WRITTEN]]:
            key = (int(rec[records.O_T]), int(rec[records.O_TYPE]), int(rec[records.O_SEQ]))
            heapq.heappush(self._heap, (*key, to_dict(rec, out.layouts, out.frozen, out.paths)))

    def flush(self) -> list[dict[str, Any]]:
        """End of the input: decisions still waiting for more rows are taken, all is released."""
        out = self._out(LINE_HELD + 16, 1)
        settle(self.state, out)
        self._take(out)
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
