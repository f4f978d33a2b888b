"""Judge ordered events (JSON Lines, EVENTS.md) and print verdicts and notices.

Reads a file or ``-`` (stdin).  A line that is not a JSON object with an
integer ``t_us``, a ``type`` and the keys its type needs (e.g. a cushion's
``ball`` and ``cushion``), or an event earlier than the one before it, is
unusable input: one line on stderr naming the line, exit status 2
(events are never re-sorted: order is what the rules judge).
"""

from __future__ import annotations

import argparse

from ..cliutil import add_rules_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("events", metavar="EVENTS", help="ordered events, JSON Lines; - for stdin")
    add_rules_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from firmware_host.cliutil import UsageError, open_text
    from rules.config import RulesConfig
    from rules.referee import Referee, missing_keys

    referee = Referee(config=RulesConfig(discipline=args.discipline))
    write = sys.stdout.write
    previous: tuple[int, int] | None = None
    with open_text(args.events) as stream:
        for number, text in enumerate(stream, start=1):
            if not text.strip():
                continue
            where = f"{args.events} line {number}"
            try:
                event = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(event, dict):
                raise UsageError(f"{where}: not a JSON object")
            missing = missing_keys(event)
            if missing:
                raise UsageError(f"{where}: no {', '.join(repr(k) for k in missing)}")
            t_us = event["t_us"]
            if not isinstance(t_us, int) or isinstance(t_us, bool):
                raise UsageError(f"{where}: t_us {t_us!r} is not an integer")
            if previous is not None and t_us < previous[1]:
                raise UsageError(
                    f"{where}: t_us {t_us} is earlier than line {previous[0]}'s {previous[1]} "
                    "(events must be in time order)"
                )
            previous = (number, t_us)
            for line in referee.feed(event):
                write(json.dumps(line) + "\n")
    for line in referee.finish():
        write(json.dumps(line) + "\n")
    return 0
