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
from typing import TYPE_CHECKING

from ..cli.args import UsageError, add_port_arguments, check_port, int_in

if TYPE_CHECKING:
    from ..link.command_link import CommandResult
    from ..linktools.sender import HostLink

EXAMPLES = """\
  firmware-host send --port /dev/ttyUSB0 SET_INDICATOR state=foul rule=18 hold_ms=2000
  firmware-host send --port /dev/ttyUSB0 PING token=7
  firmware-host send --port socket://table.local:7000 REQUEST_HELLO
"""


def add_link_arguments(parser: argparse.ArgumentParser) -> None:
    """``--port`` (needed: a frame goes to a table), ``--baud`` and ``--seq``."""
    group = add_port_arguments(parser, default="none, a table is needed")
    group.add_argument(
        "--seq",
        type=int_in(0, 0xFFFF),
        default=0,
        help="the sequence number of the first frame, 0 to 65535 (default 0)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "words",
        nargs="+",
        metavar="TYPE",
        help="TYPE then FIELD=VALUE for each payload field, e.g. PING token=7",
    )
    add_link_arguments(parser)


def open_link(args: argparse.Namespace) -> HostLink:
    """The link the arguments name; a resend is told on stdout as it goes out."""
    from protocol.framing import Message, parse_frame

    from ..linktools.sender import HostLink

    if args.port is None:
        raise UsageError("--port URL is needed: the table to send to")
    check_port(args.port)

    def sent(frame: bytes, host_ns: int) -> None:
        msg = parse_frame(frame[:-1])  # the link's own frame: a Message
        if isinstance(msg, Message) and msg.flags & 1:
            sys.stdout.write(f"  resent {msg.name} seq {msg.seq} (flags bit 0: no ACK in 50 ms)\n")
            sys.stdout.flush()

    return HostLink(args.port, args.baud, first_seq=args.seq, on_sent=sent)


def describe(r: CommandResult) -> str:
    """One line for a command's outcome: the ACK and its round trip, or why there is none."""
    from protocol.catalogue import ACK_STATUS

    from ..link.command_link import MAX_RETRIES, Outcome

    tries = f"{r.transmissions} transmission{'s' if r.transmissions != 1 else ''}"
    if r.outcome in (Outcome.ACKED, Outcome.REFUSED):
        status = ACK_STATUS.get(r.status or 0, str(r.status))
        return (
            f"ACK {r.name} seq {r.seq}: status {r.status} ({status}), "
            f"round trip {(r.round_trip_ns or 0) / 1e6:.2f} ms ({tries})"
        )
    if r.outcome is Outcome.NO_ACK:
        return (
            f"no ACK for {r.name} seq {r.seq} after {tries} ({MAX_RETRIES} resends, 50 ms "
            "apart): the link to the table has failed"
        )
    return f"{r.name}: {r.outcome.value}"


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
