"""Send one host frame (ICD 5) built from the catalogue, and show the hub's ACK.

TYPE is SET_INDICATOR, REQUEST_HELLO or PING; every payload field is given as
FIELD=VALUE with the ICD's names (a number, or a name where the field has
them: state=foul).  The frame goes out with the next sequence number and is
resent with flags bit 0 every 50 ms, at most 3 times, exactly as `run` does.
Prints the ACK and its round-trip time.  Exit status 0 on an ACK with status
ok, 1 when the hub refused it or never answered, 2 for a wrong TYPE, field,
value or range (one line naming it).
"""

from __future__ import annotations

import argparse
import sys

from ..cli.args import UsageError
from ..cli.options import add_link_arguments
from ..linktools.sender import describe, open_link

EXAMPLES = """\
  firmware-host send --port /dev/ttyUSB0 SET_INDICATOR state=foul rule=18 hold_ms=2000
  firmware-host send --port /dev/ttyUSB0 PING token=7
  firmware-host send --port socket://table.local:7000 REQUEST_HELLO
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "words",
        nargs="+",
        metavar="TYPE",
        help="TYPE then FIELD=VALUE for each payload field, e.g. PING token=7",
    )
    add_link_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..linktools.sender import CommandError, parse_command

    try:
        name, fields = parse_command(args.words)
    except CommandError as exc:
        raise UsageError(str(exc)) from None
    try:
        with open_link(args) as link:
            result = link.call(name, fields)
    except OSError as exc:
        sys.stderr.write(f"firmware-host send: --port {args.port}: {exc}\n")
        return 1
    sys.stdout.write(describe(result) + "\n")
    return 0 if result.ok else 1
