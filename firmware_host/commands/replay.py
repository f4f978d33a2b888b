"""Replay a capture through the live pipeline: the verdicts `run` would have given.

The capture's bytes go through the same decoder, timing core, fusion and
referee objects the daemon uses, in serial-read-sized chunks, so the
verdicts are exactly the live ones.  Writes EVENTS.md verdict lines.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cliutil import add_rules_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", help="raw capture (.bin), or - for stdin")
    parser.add_argument("--events", action="store_true", help="also write the ordered events")
    add_rules_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from rules import RulesConfig

    from ..cliutil import read_binary
    from ..pipeline import replay

    data = read_binary(args.capture)
    result = replay(data, RulesConfig(discipline=args.discipline))
    out = sys.stdout
    items = (
        sorted(result.events + result.lines, key=lambda x: x["t_us"])
        if args.events
        else result.lines
    )
    for item in items:
        out.write(json.dumps(item) + "\n")
    return 0
