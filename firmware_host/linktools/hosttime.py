"""What a recording's host receive times (``.rxt``) can be trusted for.

Two things make a host time say something other than "when this frame
arrived":

* **A table played faster.** The built-in virtual table (``run``,
  ``simulate --pty --speed X``) plays its match X times faster than real
  time, so its hub clock runs X times the host's.  No crystal is off by
  more than 100 ppm (ICD §7), so a hub clock that runs more than
  :data:`SPEED_PPM` away from the host's was played at a speed: the
  shortest decimal within :data:`CRYSTAL_PPM` of the measured ratio
  (10.0002 is 10, 12.3402 is 12.34).  Host times are then scaled by it,
  and what is left of the ratio is the hub's crystal again.
* **A join.** A host that opens a hub already running (the README's own
  practice flow) first reads what queued in the port while nobody read it:
  seconds of frames arriving in one burst.  Their host times say when the
  backlog was read, not when the frames came.  The backlog is the leading
  hub frames that arrived more than :data:`BACKLOG_US` later than the hub
  frames of the next minute would have them (their lag, host minus hub
  time, above the minimum lag ahead of them).

Both are measured on the hub's own frames against their arrival, with the
upper envelope of hub time over host time (a frame never arrives before it
was stamped; :func:`firmware_host.timing.clock_model.envelope_line`).
"""

from __future__ import annotations

import numpy as np

from protocol.kernels import DUPLICATE, OK

from ..timing.clock_model import envelope_line
from ..timing.unwrap import unwrap

SPEED_PPM = 1000.0  # the hub against the host further than this: not a crystal
CRYSTAL_PPM = 100.0  # what is left after the speed is taken out (hub ±50, host a few)
BACKLOG_US = 500_000  # a hub frame this much later than the ones after it: queued before the join
AHEAD_US = 60_000_000  # ... judged against the hub frames of the next minute
MIN_FRAMES = 8


def clock_ratio(host_us: np.ndarray, hub_us: np.ndarray) -> float:
    """How fast the hub's clock ran against the host's (1.0 for a table at its own pace, up to
    its crystals): the slope of the upper envelope of hub time over host time."""
    if len(host_us) < MIN_FRAMES or np.ptp(host_us) <= 0:
        return 1.0
    order = np.argsort(host_us, kind="stable")
    x = (host_us[order] - host_us[order[0]]).astype(np.float64)
    _, slope = envelope_line(x, (hub_us[order] - hub_us[order].max()).astype(np.float64))
    return float(slope) if slope > 0 else 1.0


def played_speed(ratio: float) -> float:
    """The speed a recording's table was played at, from its hub-to-host clock ratio.

    >>> played_speed(1.00002), played_speed(10.0002), played_speed(12.3402468)
    (1.0, 10.0, 12.34)
    """
    if abs(ratio - 1.0) <= SPEED_PPM * 1e-6:
        return 1.0
    for digits in range(1, 8):
        speed = float(f"{ratio:.{digits}g}")
        if abs(ratio / speed - 1.0) <= CRYSTAL_PPM * 1e-6:
            return speed
    return ratio


def recording_speed(frames: np.ndarray, boot: np.ndarray, host_us: np.ndarray) -> float:
    """:func:`played_speed` of a recording: its hub frames (decoder frame table, ``boot``
    index and arrival time per frame) of its longest boot against their arrival."""
    hub = np.isin(frames["status"], (OK, DUPLICATE)) & (frames["node"] == 0)
    if not hub.any():
        return 1.0
    mine = hub & (boot == np.bincount(boot[hub]).argmax())
    hub_us = unwrap(frames["t_us"][mine].astype(np.int64), 32)
    return played_speed(clock_ratio(host_us[mine], hub_us))


def backlog_end(host_us: np.ndarray, hub_us: np.ndarray) -> int:
    """How many of the leading hub frames (stream order, host times already scaled) were
    queued before the recording began: 0 for a recording that started with the hub."""
    lag = host_us.astype(np.int64) - hub_us.astype(np.int64)
    ahead = np.searchsorted(hub_us, hub_us + AHEAD_US, side="right")
    for i in range(len(lag)):
        if lag[i] - lag[i : max(ahead[i], i + 1)].min() <= BACKLOG_US:
            return i
    return len(lag)
