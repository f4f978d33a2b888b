"""A capture played into a tally at its recorded pace, or ``speed`` times faster.

With a ``.rxt`` side file beside the ``.bin`` (:mod:`firmware_host.link.recorder`)
every chunk is handed over when it was read on the recording host; without
one, the capture is cut into small chunks and paced on the hub's own stamps
(ICD §3: node 0's ``t_us`` is hub time), which come several times a second
in every stream (CLOCK_SYNC, HEARTBEAT).  A hub reboot restarts the hub's
clock: the pace carries on from where it was, so a reboot is never a wait.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..cli.args import open_binary, read_chunk
from ..link.recorder import read_rx_times
from .tally import LinkTally, stamp_steps

CHUNK = 1024  # without .rxt: ~0.1 s of a full table per chunk, so the pace looks smooth
REST_CHUNK = 1 << 16
MAX_GAP_US = 60_000_000  # a hub stamp further ahead than this is a new clock, not a wait
_TICK_S = 0.05  # how often a wait looks at pause and stop


class PlayClock:
    """Recorded time that runs ``speed`` times faster than the host's, and can pause."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self._lock = threading.Lock()
        self._origin_ns = 0  # recorded time at _wall_ns
        self._wall_ns = time.monotonic_ns()
        self._paused = False

    def start(self, origin_ns: int) -> None:
        with self._lock:
            self._origin_ns, self._wall_ns = origin_ns, time.monotonic_ns()

    def now_ns(self) -> int:
        with self._lock:
            if self._paused:
                return self._origin_ns
            return self._origin_ns + int((time.monotonic_ns() - self._wall_ns) * self.speed)

    @property
    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        """Stop or restart the recorded time (stopping it at the end of a capture too)."""
        now = self.now_ns()
        with self._lock:
            self._origin_ns, self._wall_ns, self._paused = now, time.monotonic_ns(), paused


class CapturePlayer:
    """Plays ``path`` into ``tally`` on a thread of its own; the clock stops at the end."""

    def __init__(self, path: str, tally: LinkTally, speed: float = 1.0) -> None:
        self.path = path
        self.tally = tally
        self.clock = PlayClock(speed)
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._user_paused = False
        rxt = Path(path).with_suffix(".rxt")
        times = read_rx_times(rxt) if path != "-" and rxt.is_file() else None
        self._rx_times = times if times is not None and len(times) else None
        self._source = open_binary(path)
        self._thread = threading.Thread(target=self._play, name="capture player", daemon=True)

    @property
    def paced_by(self) -> str:
        return "recorded receive times (.rxt)" if self._rx_times is not None else "hub stamps"

    def start(self) -> CapturePlayer:
        self._thread.start()
        return self

    def toggle_pause(self) -> bool:
        """Pause or resume the play (a capture loses nothing by waiting); True if now paused."""
        if not self.finished.is_set():
            self._user_paused = not self._user_paused
            self.clock.set_paused(self._user_paused)
        return self._user_paused

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._source.close()

    def _play(self) -> None:
        self.tally.set_link("capture playing")
        try:
            if self._rx_times is not None:
                self._play_recorded()
            else:
                self._play_on_hub_stamps()
        finally:
            self.clock.set_paused(True)
            self.tally.set_link("capture ended")
            self.finished.set()

    def _chunks(self, sizes: Iterator[int]) -> Iterator[bytes]:
        for size in sizes:
            chunk = read_chunk(self._source, self.path, size)
            if not chunk:
                return
            yield chunk

    def _play_recorded(self) -> None:
        times = self._rx_times
        assert times is not None
        rx = times["host_rx_ns"].tolist()
        sizes = np.diff(times["offset"].astype(np.int64)).tolist()
        # the last chunk runs to the end of the file: read it in pieces, all at its time
        sizes_then_rest = itertools.chain(sizes, itertools.repeat(REST_CHUNK))
        times_then_last = itertools.chain(rx[:-1], itertools.repeat(rx[-1]))
        self.clock.start(rx[0])
        for chunk, rx_ns in zip(self._chunks(sizes_then_rest), times_then_last):
            if not self._wait_until(rx_ns):
                return
            self.tally.feed(chunk, rx_ns)

    def _play_on_hub_stamps(self) -> None:
        hub_us = None  # hub time, unwrapped and carried across reboots
        last_raw = 0
        self.clock.start(0)
        for chunk in self._chunks(itertools.repeat(CHUNK)):
            raw = self.tally.feed(chunk, self.clock.now_ns())
            if raw < 0:
                continue
            if hub_us is None:
                hub_us = 0
                self.clock.start(0)
            else:
                step = stamp_steps(raw - last_raw)
                hub_us += step if 0 <= step <= MAX_GAP_US else 0
            last_raw = raw
            if not self._wait_until(hub_us * 1000):
                return

    def _wait_until(self, recorded_ns: int) -> bool:
        """Sleep until the clock reaches ``recorded_ns``; False when asked to stop."""
        while not self._stop.is_set():
            ahead_s = (recorded_ns - self.clock.now_ns()) / 1e9 / self.clock.speed
            if ahead_s <= 0 and not self.clock.paused:
                return True
            time.sleep(min(_TICK_S, max(ahead_s, 0.0)) or _TICK_S)
        return False
