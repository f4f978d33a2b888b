"""Judge ordered events (JSON Lines, EVENTS.md) and print verdicts and notices.

Reads a file or ``-`` (stdin).  Every line is checked against EVENTS.md's
event shapes first (:mod:`.eventcheck`): a line that is not UTF-8, not a
JSON object, lacks ``t_us``, ``type`` or the keys its type needs, holds a
value of the wrong kind or out of range (a list where a ball belongs, a
table without ``width_mm``, NaN), or an event earlier than the one before
it, is unusable input: one line on stderr naming the line, exit status 2
(events are never re-sorted: order is what the rules judge).
"""

from __future__ import annotations

import argparse

from ..cli.args import add_rules_arguments

EXAMPLES = """\
  firmware-host events match.bin | firmware-host judge -
  firmware-host judge --discipline combined match.events.jsonl
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("events", metavar="EVENTS", help="ordered events, JSON Lines; - for stdin")
    add_rules_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import sys

    from firmware_host.cli.args import UsageError, open_binary, rules_config
    from firmware_host.jsonout import dumps
    from rules.referee import Referee

    from ..cli.eventcheck import MAX_LINE, BadEvent, parse_line

    referee = Referee(config=rules_config(args))
    write = sys.stdout.write
    previous: tuple[int, int] | None = None
    stream = open_binary(args.events)
    try:
        number = 0
        while True:
            try:
                raw = stream.readline(MAX_LINE + 1)
            except OSError as exc:
                raise UsageError(f"{args.events}: {exc.strerror or exc}") from None
            if not raw:
                break
            number += 1
            if not raw.strip():
                continue
            where = f"{args.events} line {number}"
            try:
                event = parse_line(raw)
            except BadEvent as exc:
                raise UsageError(f"{where}: {exc}") from None
            t_us = event["t_us"]
            if previous is not None and t_us < previous[1]:
                raise UsageError(
                    f"{where}: t_us {t_us} is earlier than line {previous[0]}'s {previous[1]} "
                    "(events must be in time order)"
                )
            previous = (number, t_us)
            for line in referee.feed(event):
                write(dumps(line) + "\n")
    finally:
        stream.close()
    for line in referee.finish():
        write(dumps(line) + "\n")
    return 0
