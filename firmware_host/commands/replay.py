"""Replay a capture through the live pipeline: the verdicts `run` would have given.

The capture's bytes (read in chunks: memory stays bounded whatever its length) go
through the same decoder, timing core, fusion and
referee objects the daemon uses, in serial-read-sized chunks, so the
verdicts are exactly the live ones.  Writes EVENTS.md verdict lines.  A
file without one valid frame (empty, random bytes) is not a capture: one
line and exit status 2, as in ``events``.
"""

from __future__ import annotations

import argparse
import heapq
import sys
from typing import Any

from ..cli.args import add_rules_arguments, add_signing_arguments

EXAMPLES = """\
  firmware-host replay match.bin
  firmware-host replay --events match.bin | jq 'select(.kind == "verdict")'
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="raw capture (.bin), or - for stdin")
    parser.add_argument("--events", action="store_true", help="also write the ordered events")
    add_rules_arguments(parser)
    add_signing_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..cli.args import (
        capture_chunks,
        no_cycle_collection,
        report_frames,
        report_losses,
        require_frames,
        rules_config,
        signing_check,
    )
    from ..jsonout import dumps
    from ..link.recorder import recorded_presses
    from ..pipeline import Pipeline, replay_steps

    no_cycle_collection()
    pipe = Pipeline(rules_config(args), signing_check(args))
    # a daemon's recording keeps the referee's keys pressed on the page (.tx beside the part)
    presses = recorded_presses(args.capture) if args.capture != "-" else []
    out = sys.stdout
    merged = TimeOrder(pipe) if args.events else None
    decided = False
    for step in replay_steps(capture_chunks(args.capture), pipe=pipe, presses=presses):
        decided = decided or bool(step.events or step.lines)
        items = merged.add(step) if merged is not None else step.lines
        out.write("".join(dumps(item) + "\n" for item in items))
    if merged is not None:
        out.write("".join(dumps(item) + "\n" for item in merged.rest()))
    stats = pipe.decoder.stats()
    if not decided:  # nothing decided: "no capture", or a quiet one
        require_frames(args.capture, stats.frames, stats.bad_total)
    frames = report_frames("replay", stats, pipe.decoder.dropped_bytes)
    return max(frames, report_losses("replay", pipe.events.take_notices(), pipe.events.losses()))


class TimeOrder:
    """``--events``: the events and the verdict lines in one ``t_us`` order, as they come.

    The order is that of sorting all events, then all lines, by ``t_us`` (stable), but
    without keeping them: an item leaves once nothing still to come can sort before it.
    Events leave the fusion in ``t_us`` order, so none still to come is earlier than the
    last one seen; a line is stamped with the event that decided it, or with its shot's
    start (a verdict, when the shot ends), so none still to come is earlier than the shot
    the referee has open.  What waits is at most one shot's events.
    """

    def __init__(self, pipe: Any) -> None:
        self.referee = pipe.referee
        self.events: list[tuple[int, int, int, dict[str, Any]]] = []  # heap: t_us, 0/1, n, item
        self.n = 0
        self.last_event_us: int | None = None

    def add(self, step: Any) -> list[dict[str, Any]]:
        for kind, items in ((0, step.events), (1, step.lines)):
            for item in items:
                heapq.heappush(self.events, (item["t_us"], kind, self.n, item))
                self.n += 1
        if step.events:
            self.last_event_us = step.events[-1]["t_us"]
        if self.last_event_us is None:
            return []
        bound = self.last_event_us
        if self.referee.shot is not None:
            bound = min(bound, self.referee.shot.t_us)
        out = []
        while self.events and self.events[0][0] < bound:
            out.append(heapq.heappop(self.events)[3])
        return out

    def rest(self) -> list[dict[str, Any]]:
        return [heapq.heappop(self.events)[3] for _ in range(len(self.events))]
