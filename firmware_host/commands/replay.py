"""Replay a capture through the live pipeline: the verdicts `run` would have given.

The capture's bytes go through the same decoder, timing core, fusion and
referee objects the daemon uses, in serial-read-sized chunks, so the
verdicts are exactly the live ones.  Writes EVENTS.md verdict lines.  A
file without one valid frame (empty, random bytes) is not a capture: one
line and exit status 2, as in ``events``.
"""

from __future__ import annotations

import argparse
import sys

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
    from protocol.decoder import decode_capture

    from ..cli.args import (
        no_cycle_collection,
        read_binary,
        report_frames,
        report_losses,
        require_frames,
        rules_config,
        signing_check,
    )
    from ..jsonout import dumps
    from ..link.recorder import recorded_presses
    from ..pipeline import Pipeline, replay

    no_cycle_collection()
    data = read_binary(args.capture)
    pipe = Pipeline(rules_config(args), signing_check(args))
    # a daemon's recording keeps the referee's keys pressed on the page (.tx beside the part)
    presses = recorded_presses(args.capture) if args.capture != "-" else []
    result = replay(data, pipe=pipe, presses=presses)
    if not (result.events or result.lines):
        # Nothing decided: count the frames (again, in bulk) to tell "no capture" from a quiet one.
        stats = decode_capture(data).stats
        require_frames(args.capture, stats.frames, stats.bad_total)
    out = sys.stdout
    items = (
        sorted(result.events + result.lines, key=lambda x: x["t_us"])
        if args.events
        else result.lines
    )
    for item in items:
        out.write(dumps(item) + "\n")
    frames = report_frames("replay", pipe.decoder.stats(), pipe.decoder.dropped_bytes)
    return max(frames, report_losses("replay", pipe.events.take_notices(), pipe.events.losses()))
