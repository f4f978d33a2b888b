"""Host frames typed on the command line, sent with the daemon's own ICD §5 machinery.

``send`` and ``ping`` do not resend by themselves: they run the same
:class:`~firmware_host.link.command_link.CommandLink` as ``run`` (stop-and-wait,
50 ms, 3 resends) against a real port, and take the hub's ACKs from the
bytes with the daemon's :class:`~firmware_host.link.acks.AckSniffer`.  A
command is written ``TYPE field=value …`` with the catalogue's names; a
field with named values also takes the name (``state=foul``).

>>> parse_command(["set_indicator", "state=foul", "rule=18", "hold_ms=2000"])
('SET_INDICATOR', {'state': 3, 'rule': 18, 'hold_ms': 2000})
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Self

from protocol.catalogue import BY_NAME, MESSAGES
from protocol.layout import layout

from ..cli.args import UsageError, check_port
from ..link.acks import AckSniffer
from ..link.command_link import CommandLink, CommandResult
from ..link.transport import Chunk, SerialTransport
from .names import VALUE_NAMES

HOST_COMMANDS = tuple(spec.name for spec in MESSAGES if spec.to_table)
OPEN_TIMEOUT_S = 5.0


class CommandError(ValueError):
    """A command word, field name or value that is wrong; the message names it."""


def _value(message: str, field: str, text: str, size: int) -> int:
    names = VALUE_NAMES.get((message, field), {})
    try:
        value = int(text, 0)
    except ValueError:
        by_name = {name.lower(): v for v, name in names.items()}
        if text.lower() not in by_name:
            choices = f" or one of {', '.join(names.values())}" if names else ""
            raise CommandError(f"{field}={text}: not a number{choices}") from None
        value = by_name[text.lower()]
    top = (1 << (8 * size)) - 1
    if not 0 <= value <= top:
        raise CommandError(f"{field}={text}: out of range, 0 to {top} (u{8 * size})")
    return value


def parse_command(words: list[str]) -> tuple[str, dict[str, int]]:
    """``TYPE field=value …`` into the catalogue's name and payload fields.

    Every payload field must be given once; the message says which is wrong.
    """
    if not words:
        raise CommandError(f"no TYPE (one of {', '.join(HOST_COMMANDS)})")
    name = words[0].upper()
    if name not in HOST_COMMANDS:
        raise CommandError(f"{words[0]}: not a host command (one of {', '.join(HOST_COMMANDS)})")
    sizes = {f.name: f.size for f in layout(BY_NAME[name].msg_type).fields}
    fields: dict[str, int] = {}
    for word in words[1:]:
        field, sep, text = word.partition("=")
        if not sep:
            raise CommandError(f"{word}: not FIELD=VALUE")
        if field not in sizes:
            known = ", ".join(sizes) or "none"
            raise CommandError(f"{name} has no field {field!r} (its fields: {known})")
        if field in fields:
            raise CommandError(f"{field}: given twice")
        fields[field] = _value(name, field, text, sizes[field])
    missing = [f for f in sizes if f not in fields]
    if missing:
        raise CommandError(
            f"{name}: {missing[0]}=VALUE is missing (its fields: {', '.join(sizes)})"
        )
    return name, fields


class HostLink:
    """A port with a command link on it: submit host frames, get their outcomes.

    ``on_sent(frame, host_ns)`` sees every frame written, resends included.
    """

    def __init__(
        self,
        url: str,
        baud: int,
        *,
        first_seq: int = 0,
        on_sent: Callable[[bytes, int], object] | None = None,
    ) -> None:
        self._sniffer = AckSniffer()
        self._transport = SerialTransport(url, baudrate=baud, on_chunk=self._chunk)
        self._link = CommandLink(self._transport.write, first_seq=first_seq, on_sent=on_sent)

    def __enter__(self) -> Self:
        self._transport.open()
        if not self._transport.wait_open(OPEN_TIMEOUT_S):
            self._transport.close()
            raise OSError(f"the port did not open within {OPEN_TIMEOUT_S:g} s")
        self._link.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._link.close()
        self._transport.close()

    def call(self, name: str, fields: dict[str, int]) -> CommandResult:
        """Send and wait for the outcome (at most 4 × 50 ms after it is written)."""
        return self._link.call(name, timeout_s=5.0, **fields)

    def _chunk(self, chunk: Chunk) -> None:
        for ack in self._sniffer.feed(chunk.data):
            self._link.on_ack(ack["acked_seq"], ack["acked_type"], ack["status"])


def open_link(args: argparse.Namespace) -> HostLink:
    """The link the arguments name; a resend is told on stdout as it goes out."""
    from protocol.framing import Message, parse_frame

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
