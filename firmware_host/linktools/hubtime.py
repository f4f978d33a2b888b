"""Each frame's stamp on the hub's clock, as a listing goes: ``decode --time hub``.

Every node stamps with its own clock (ICD §3); the hub's is the table's
reference.  A frame of node 0 is on it already (unwrapped: it wraps every
71.6 min).  A frame of another node is mapped with the timing core's own
estimator (:mod:`firmware_host.timing.clock_model`: the upper envelope of
that node's CLOCK_SYNC samples so far, ``to_hub``), so a listing's hub
times are the ones the referee's timeline uses, with the same uncertainty.
The model for a frame is the one as of that frame (what came before it
in the stream), so a live listing and a file give the same times.

A node's frames before its first CLOCK_SYNC wait for it (at most
:data:`HOLD_US` of hub time; after that they have no hub time).  A hub
reboot (the HELLO the decoder marked REBOOT) restarts every clock; the
hub's own clock then restarts too, so ``hub_us`` is that boot's clock and
``line_us`` carries on from where the last boot ended (one increasing
line for ``relative`` and ``delta``).  A node clock that steps (its
CLOCK_SYNC goes backwards) starts its model again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocol.catalogue import BY_NAME
from protocol.seqwindow import REBOOT

from ..timing import clock_model as cm
from ..timing.unwrap import unwrap_step

HOLD_US = 1_000_000  # a node's frames wait this much hub time for its first CLOCK_SYNC
_CLOCK_SYNC = BY_NAME["CLOCK_SYNC"].msg_type


@dataclass
class Stamp:
    """A frame's time on the hub's clock; ``hub_us`` None: it has none (a bad frame, a node
    never synced).  ``resolved``: known for good (a listing may print the frame)."""

    hub_us: int | None = None
    line_us: int | None = None  # carried across reboots: always increasing with the hub
    unc_us: float | None = None
    resolved: bool = False


class HubTimes:
    """Feed every frame of a stream in order (:meth:`take`); each gets a :class:`Stamp`,
    resolved at once or when its node's first CLOCK_SYNC comes (or never does)."""

    def __init__(self) -> None:
        self._reset()
        self._base = 0  # line_us = hub_us + _base in this boot
        self._last_line = 0
        self._waiting: deque[tuple[int, int, int, Stamp]] = deque()  # node, t, arrived, stamp

    def _reset(self) -> None:
        self.clocks = cm.clock_arrays()
        self._node_t = np.zeros(cm.N_NODES, np.int64)  # unwrapped node clocks
        self._seen = np.zeros(cm.N_NODES, bool)
        self._hub_now: int | None = None

    def take(self, frame: np.void, fields: dict[str, Any] | None) -> Stamp:
        """A frame (decoder frame-table row) and its payload fields (None: a bad frame)."""
        stamp = Stamp()
        node = int(frame["node"])
        if fields is None or node >= cm.N_NODES:
            stamp.resolved = True  # a bad frame or a host frame: no table clock
            return stamp
        if int(frame["seq_mark"]) == REBOOT:
            self._reboot()
        t = self._unwrap(node, int(frame["t_us"]))
        if node == 0:
            self._hub(t)
            self._set(stamp, t, 0.0)
            if int(frame["msg_type"]) == _CLOCK_SYNC:
                self._sync(int(fields["peer"]), int(fields["peer_t_us"]), t)
        elif self.clocks.fit_i[node, cm.FI_N] > 0:
            hub, unc = cm.to_hub(self.clocks, node, np.int64(t))
            self._set(stamp, int(hub), float(unc))
        else:
            self._waiting.append((node, t, self._hub_now or 0, stamp))
        self._expire()
        return stamp

    def flush(self) -> None:
        """The stream ended: what still waits has no hub time."""
        while self._waiting:
            self._waiting.popleft()[3].resolved = True

    def _set(self, stamp: Stamp, hub_us: int, unc: float) -> None:
        stamp.hub_us, stamp.unc_us, stamp.resolved = hub_us, unc, True
        stamp.line_us = hub_us + self._base

    def _unwrap(self, node: int, raw: int) -> int:
        if not self._seen[node]:
            self._seen[node] = True
            self._node_t[node] = raw
        else:
            self._node_t[node] = unwrap_step(self._node_t[node], raw, 32)
        return int(self._node_t[node])

    def _hub(self, t: int) -> None:
        if self._hub_now is None:
            self._base = self._last_line - t  # a new boot carries the line on
        self._hub_now = t if self._hub_now is None else max(self._hub_now, t)
        self._last_line = max(self._last_line, t + self._base)

    def _sync(self, peer: int, peer_t_us: int, hub_t: int) -> None:
        if not 0 < peer < cm.N_NODES:
            return  # no such clock: a stray peer number says nothing
        n = np.int64(self._unwrap(peer, peer_t_us))
        if not cm.add_sync(self.clocks, peer, n, np.int64(hub_t), cm.WINDOW_US):
            self.clocks.ring_len[peer] = 0  # the node's clock stepped back: a new model
            self.clocks.fit_i[peer, cm.FI_N] = 0
            cm.add_sync(self.clocks, peer, n, np.int64(hub_t), cm.WINDOW_US)
        still = deque()
        for node, t, arrived, stamp in self._waiting:
            if node == peer:
                hub, unc = cm.to_hub(self.clocks, node, np.int64(t))
                self._set(stamp, int(hub), float(unc))
            else:
                still.append((node, t, arrived, stamp))
        self._waiting = still

    def _expire(self) -> None:
        now = self._hub_now or 0
        while self._waiting and now - self._waiting[0][2] > HOLD_US:
            self._waiting.popleft()[3].resolved = True

    def _reboot(self) -> None:
        self.flush()
        self._reset()
