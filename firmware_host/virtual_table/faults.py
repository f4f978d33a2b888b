"""Fault injection: what goes wrong on a real table, scheduled in true time.

A :class:`FaultPlan` lists the faults; the hub (:mod:`.hub`) honours the ones
that change what the hub sends (reboots, offline nodes, stalls, missing
ACKs) and :func:`damage` the ones that only spoil bytes on the wire
(garbage bursts, dropped bytes).  On the command line a plan is written as
comma-separated items (``--faults``)::

    garbage@30            a burst of random bytes at t = 30 s
    drop@45               a few bytes of the frame sent at 45 s lost
    offline:4@60-75       node 4 (tracker) offline from 60 s to 75 s
    reboot@120            hub reboot at 120 s
    stall@200-203         the link carries nothing from 200 s to 203 s
    noack@0-600           the hub ignores host frames from 0 s to 600 s
    random                one of each kind at random times

and an attacker near the table with a radio (:mod:`.attacker`; never part of
``random``)::

    forge-cue@40          a CUE_CONTACT 20 ms after the last real one, its seq + 1
    forge-keypad@50       a KEYPAD "referee foul 16" in the keypad's next seq
    replay-old@60         a cue frame recorded earlier in the match, sent again

and a tracker gone wrong (never part of ``random`` either)::

    flood-tracker:5000@20-25   5 000 extra BALL_TRACK frames a second from 20 s to 25 s
    flood-tracker@20           the same rate (FLOOD_RATE) from 20 s to the match's end

The flood's frames are the tracker's own (its node, its seq counter, its clock), each
with 16 balls at random places, all moving: believed, they would make every shot a
foul 17.  They take no time on the virtual link: it stands for one fast enough to
carry them beside the match (30 000 a second of 16-ball frames is 3.5 MB/s, beyond a
921 600-baud UART: a USB CDC-ACM link, ICD §1), so the table's own frames leave when
they would without the flood and the two matches can be compared verdict by verdict.

>>> FaultPlan.parse("reboot@120,offline:4@60-75").offline
((4, 60.0, 75.0),)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

Window = tuple[float, float]
ATTACKS = ("forge-cue", "forge-keypad", "replay-old")
FLOOD_RATE = 5000.0  # flood-tracker's extra frames per second when the item names none
MAX_FLOOD_RATE = 100_000.0


@dataclass(frozen=True)
class FaultPlan:
    """Scheduled faults; every time is true match time in seconds."""

    garbage_s: tuple[float, ...] = ()
    dropped_bytes_s: tuple[float, ...] = ()
    offline: tuple[tuple[int, float, float], ...] = ()  # (node, from_s, to_s)
    reboots_s: tuple[float, ...] = ()
    stalls: tuple[Window, ...] = ()
    no_ack: tuple[Window, ...] = ()
    attacks: tuple[tuple[str, float], ...] = ()  # (ATTACKS item, at_s)
    floods: tuple[tuple[float, float, float], ...] = ()  # (frames/s, from_s, to_s) of the tracker
    random: bool = field(default=False, compare=False)

    @classmethod
    def parse(cls, spec: str) -> FaultPlan:
        """A plan from its command-line form; ``ValueError`` names the bad item."""
        plan = cls()
        for item in filter(None, (part.strip() for part in spec.split(","))):
            try:
                plan = plan._with(item)
            except (ValueError, IndexError):
                raise ValueError(
                    f"bad fault {item!r} (e.g. garbage@30, offline:4@60-75, stall@200-203, "
                    "flood-tracker:5000@20-25)"
                ) from None
        return plan

    def _with(self, item: str) -> FaultPlan:
        if item == "random":
            return replace(self, random=True)
        kind, _, when = item.partition("@")
        kind, _, arg = kind.partition(":")
        start, _, end = when.partition("-")
        window = (float(start), float(end or start))
        if window[1] < window[0]:
            raise ValueError(item)
        if kind == "garbage":
            return replace(self, garbage_s=(*self.garbage_s, window[0]))
        if kind == "drop":
            return replace(self, dropped_bytes_s=(*self.dropped_bytes_s, window[0]))
        if kind == "reboot":
            return replace(self, reboots_s=(*self.reboots_s, window[0]))
        if kind == "offline" and 1 <= int(arg) <= 7:
            return replace(self, offline=(*self.offline, (int(arg), *window)))
        if kind == "stall":
            return replace(self, stalls=(*self.stalls, window))
        if kind == "noack":
            return replace(self, no_ack=(*self.no_ack, window))
        if kind in ATTACKS and not arg:
            return replace(self, attacks=(*self.attacks, (kind, window[0])))
        if kind == "flood-tracker":
            rate = float(arg) if arg else FLOOD_RATE
            if not 0 < rate <= MAX_FLOOD_RATE:  # NaN too
                raise ValueError(item)
            to_s = window[1] if end else float("inf")
            return replace(self, floods=(*self.floods, (rate, window[0], to_s)))
        raise ValueError(item)

    def resolve(
        self, rng: np.random.Generator, duration_s: float, nodes: tuple[int, ...]
    ) -> FaultPlan:
        """Replace ``random`` by one fault of each kind at random times within the match."""
        if not self.random:
            return self
        t = np.sort(rng.uniform(0.1, 0.9, 6) * duration_s)
        sensors = [n for n in nodes if n != 0]
        node = int(rng.choice(sensors))
        return replace(
            self,
            random=False,
            garbage_s=(*self.garbage_s, float(t[0])),
            dropped_bytes_s=(*self.dropped_bytes_s, float(t[1])),
            offline=(*self.offline, (node, float(t[2]), float(t[2]) + 5.0)),
            stalls=(*self.stalls, (float(t[3]), float(t[3]) + 1.0)),
            reboots_s=(*self.reboots_s, float(t[4])),
        )

    def offline_mask(self, node: np.ndarray, t_s: np.ndarray) -> np.ndarray:
        """True where ``node`` was offline at ``t_s``."""
        out = np.zeros(len(t_s), bool)
        for n, start, end in self.offline:
            out |= (node == n) & (t_s >= start) & (t_s < end)
        return out

    def acks_at(self, t_s: float) -> bool:
        return not any(start <= t_s < end for start, end in self.no_ack)

    def stalled_at(self, t_s: float) -> bool:
        return any(start <= t_s < end for start, end in self.stalls)


GARBAGE_BYTES = (20, 200)


def damage(
    frames: list[bytes], wire_s: np.ndarray, plan: FaultPlan, rng: np.random.Generator
) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """Spoil the wire stream: garbage bursts between frames, bytes lost inside frames.

    Returns the chunks to write in order, each chunk's source frame index
    (-1 for garbage) and the indices of the frames that were damaged.
    """
    chunks = list(frames)
    damaged = []
    for t in plan.dropped_bytes_s:
        i = min(int(np.searchsorted(wire_s, t)), len(chunks) - 1)
        body = bytearray(chunks[i])
        for _ in range(int(rng.integers(1, 4))):
            del body[int(rng.integers(0, len(body) - 1))]  # never the closing delimiter
        chunks[i] = bytes(body)
        damaged.append(i)
    source = np.arange(len(chunks))
    for t in sorted(plan.garbage_s, reverse=True):
        i = int(np.searchsorted(wire_s, t))
        # noise, then a delimiter: the burst spoils no real frame, so the truth stays exact
        burst = (
            rng.integers(0, 256, int(rng.integers(*GARBAGE_BYTES)), dtype=np.uint8).tobytes()
            + b"\x00"
        )
        chunks.insert(i, burst)
        source = np.insert(source, i, -1)
    return chunks, source, np.array(sorted(damaged), np.int64)
