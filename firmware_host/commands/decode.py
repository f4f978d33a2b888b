"""Decode a raw capture (ICD §8) into one line per frame, then a summary.

Reads the capture in chunks through the streaming decoder, so a capture of
any size decodes in bounded memory.  ``--json`` writes the EVENTS.md line
format; the default is an aligned table for people.  Exit status 1 when the
capture held bad frames (they are listed and counted) or ends in an
over-long run of bytes without a delimiter (dropped as it came; the summary
gives its length as ``dropped_bytes``), 2 when it cannot be read.

A recording from ``run --record`` holds both directions: the frames the host
sent (its ``.tx`` side file) are shown among the table's, in time order,
each line marked with its direction (``->`` sent, ``<-`` received; in JSON
``"direction": "host"`` or ``"table"``); a host line's ``offset`` is how far
the table's stream had come when it was sent.
"""

from __future__ import annotations

import argparse
import queue
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from ..cliutil import (
    UsageError,
    add_baud_argument,
    check_port,
    dumps,
    finite_float,
    int_in,
    open_binary,
    read_chunk,
)
from ..frame_text import field_text

CHUNK = 1 << 20
FOLLOW_S = 0.2  # --follow, --port: how often to look for more bytes


EXAMPLES = """\
  firmware-host decode match.bin | less
  firmware-host decode --json --type CUSHION_HIT match.bin | jq .fields
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", nargs="?", help="raw capture file (.bin), or - for stdin (or --port URL)"
    )
    parser.add_argument(
        "--port",
        metavar="URL",
        help="decode a live link instead: a serial device or pyserial URL, until Ctrl-C",
    )
    add_baud_argument(parser)
    parser.add_argument(
        "--follow",
        action="store_true",
        help="a capture still being written: wait for more at its end, until Ctrl-C",
    )
    parser.add_argument("--json", action="store_true", help="JSON Lines (EVENTS.md)")
    parser.add_argument(
        "--strict", action="store_true", help="stop at the first bad frame (exit status 1)"
    )
    add_selection_arguments(parser, "frames")
    for option, dest, which in (("--from", "t_from", "at or after"), ("--to", "t_to", "before")):
        parser.add_argument(
            option,
            dest=dest,
            type=finite_float(0, 2**32 / 1e6),
            metavar="S",
            help=f"only frames stamped {which} S seconds of their sender's clock (the hub's "
            "for node 0; ICD 3)",
        )


def add_selection_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--type NAME`` and ``--node N``, repeatable: the selection decode and monitor share."""
    parser.add_argument(
        "--type",
        action="append",
        metavar="NAME",
        help="only these message types (repeatable; e.g. CUSHION_HIT)",
    )
    parser.add_argument(
        "--node",
        action="append",
        type=int_in(0, 255),
        metavar="N",
        help=f"only {what} from these nodes (repeatable; 0 the hub, 3 the cue, ...)",
    )


def _json_line(item: Any) -> dict[str, Any]:
    from protocol.framing import BadFrame, Message, Retransmission

    if isinstance(item, Retransmission):
        return _json_line(item.frame) | {"duplicate": True}
    if isinstance(item, BadFrame):
        return {"offset": item.offset, "error": item.reason, "length": item.length}
    header = {
        "offset": item.offset,
        "node": item.node,
        "seq": item.seq,
        "t_us": item.t_us,
        "flags": item.flags,
    }
    if isinstance(item, Message):
        return header | {"type": item.name, "fields": item.fields}
    return header | {
        "type": "UNKNOWN",
        "msg_type": item.msg_type,
        "payload_hex": item.payload.hex(),
    }


def _fields_text(fields: dict[str, Any]) -> str:
    return " ".join(field_text(name, value) for name, value in fields.items())


def _text_line(item: Any) -> str:
    from protocol.catalogue import NODE_NAMES
    from protocol.framing import BadFrame, Message, Retransmission

    if isinstance(item, Retransmission):
        return _text_line(item.frame) + "  DUPLICATE (already delivered)"
    if isinstance(item, BadFrame):
        return f"{item.offset:>10}  {'-':<8} {'-':>5} {'-':>10}  BAD {item.reason} ({item.length} bytes)"
    node = NODE_NAMES.get(item.node, str(item.node))
    retx = " (retx)" if item.flags & 1 else ""
    head = f"{item.offset:>10}  {node:<8} {item.seq:>5} {item.t_us:>10}  "
    if isinstance(item, Message):
        return head + f"{item.name:<13} {_fields_text(item.fields)}{retx}"
    return head + f"UNKNOWN 0x{item.msg_type:02X}  payload={item.payload.hex()}{retx}"


def _file(path: str, follow: bool) -> Iterator[bytes]:
    """A capture in chunks; with ``follow``, also what is appended to it later."""
    source = open_binary(path)
    try:
        while True:
            chunk = read_chunk(source, path, CHUNK)
            if chunk:
                yield chunk
            elif follow:
                time.sleep(FOLLOW_S)
            else:
                return
    finally:
        source.close()


def _link(url: str, baud: int) -> Iterator[bytes]:
    """A live link's bytes as they arrive (the transport reconnects a lost port)."""
    from ..transport import SerialTransport

    transport = SerialTransport(url, baudrate=baud).open()
    try:
        while True:
            try:
                yield transport.chunks.get(timeout=FOLLOW_S).data
            except queue.Empty:
                continue
    finally:
        transport.close()


def _selected(item: Any, types: set[str] | None, args: argparse.Namespace) -> bool:
    """The filters select lines; a bad frame has no node, type or time and passes only
    when no filter asks for one of them.  The summary always counts everything."""
    frame = getattr(item, "frame", item)  # a retransmission is filtered as its frame
    if types and getattr(frame, "name", None) not in types:
        return False
    if args.node and getattr(frame, "node", None) not in args.node:
        return False
    t_us = getattr(frame, "t_us", None)
    if args.t_from is not None and (t_us is None or t_us < args.t_from * 1e6):
        return False
    return args.t_to is None or (t_us is not None and t_us < args.t_to * 1e6)


def _offset(item: Any) -> int:
    """Where a decoded item starts in the capture (a retransmission: where it was seen)."""
    from protocol.framing import Retransmission

    return int((item.frame if isinstance(item, Retransmission) else item).offset)


def _sent_frames(capture: str | None) -> Any:
    """A two-way recording's host frames (its ``.tx``), or None: the capture is one-way."""
    if capture in (None, "-"):
        return None
    from ..linktools.recording import SentInterleaver

    sent = SentInterleaver(capture)
    return sent if sent else None


def _line_writer(as_json: bool, two_way: bool) -> Any:
    """``line(item, sent)``: a table frame (``sent`` None) or a frame the host sent.

    In a two-way recording every line says its direction (``"direction":
    "table"`` / ``"host"``, the host's with its ``host_ns``; in the table view
    ``<-`` received, ``->`` sent); a one-way capture's lines are unchanged.
    """
    if as_json:

        def line(item: Any, sent: Any) -> str:
            record = _json_line(item)
            if two_way:
                record["direction"] = "table" if sent is None else "host"
                if sent is not None:
                    record["host_ns"] = sent.host_ns
            return dumps(record)

        return line
    if two_way:
        return lambda item, sent: ("<- " if sent is None else "-> ") + _text_line(item)
    return lambda item, sent: _text_line(item)


def _summary(stats: Any, pending: int, dropped: int) -> dict[str, Any]:
    return {
        "frames": stats.frames,
        "bad": stats.bad,
        "unknown": stats.unknown,
        "lost": {str(node): n for node, n in stats.lost.items()},
        "duplicates": stats.duplicates,
        "reboots": stats.reboots,
        "types": stats.per_type,
        "pending_bytes": pending,
        "dropped_bytes": dropped,
    }


def _write_summary(out: TextIO, summary: dict[str, Any], as_json: bool) -> None:
    from protocol.catalogue import NODE_NAMES

    if as_json:
        out.write(dumps({"summary": summary}) + "\n")
        return
    out.write(f"\n{summary['frames']} frames decoded")
    out.write(f", {sum(summary['bad'].values())} bad, {summary['unknown']} of unknown type")
    out.write(f", {summary['duplicates']} duplicate retransmissions (marked DUPLICATE)\n")
    if "host_frames" in summary:
        out.write(f"  {summary['host_frames']} frames sent by the host (->)\n")
    out.writelines(f"  {name:<14} {n}\n" for name, n in summary["types"].items())
    out.writelines(f"  bad: {reason:<15} {n}\n" for reason, n in summary["bad"].items())
    out.writelines(
        f"  lost from {NODE_NAMES.get(int(node), node):<8} {n}\n"
        for node, n in summary["lost"].items()
    )
    if summary["pending_bytes"]:
        out.write(f"  capture ends inside a frame ({summary['pending_bytes']} bytes)\n")
    if summary["dropped_bytes"]:
        out.write(
            f"  capture ends in {summary['dropped_bytes']} bytes without a frame delimiter "
            "(longer than any frame): dropped\n"
        )


def wanted_types(names: list[str] | None) -> set[str] | None:
    """``--type`` names, checked against the catalogue (upper-cased); None: every type."""
    from protocol.catalogue import BY_NAME

    if not names:
        return None
    unknown = [name for name in names if name.upper() not in BY_NAME]
    if unknown:
        raise UsageError(f"--type {unknown[0]}: no such message (see `firmware-host dump`)")
    return {name.upper() for name in names}


def run(args: argparse.Namespace) -> int:
    from protocol.decoder import StreamDecoder
    from protocol.framing import BadFrame, parse_frame

    wanted = wanted_types(args.type)
    if (args.capture is None) == (args.port is None):
        raise UsageError("give a CAPTURE (- for stdin) or --port URL, one of them")
    if args.follow and args.capture in (None, "-"):
        raise UsageError("--follow needs a capture file (a growing one)")
    if args.port is not None:
        check_port(args.port)
    out = sys.stdout
    sent = _sent_frames(args.capture)
    line = _line_writer(args.json, two_way=sent is not None)
    decoder = StreamDecoder()
    if not args.json:
        arrow = "   " if sent is not None else ""
        out.write(
            f"{arrow}{'offset':>10}  {'node':<8} {'seq':>5} {'t_us':>10}  type          fields\n"
        )
    live = args.port is not None or args.follow
    host_frames = 0

    def show_sent(frames: list[Any]) -> None:
        nonlocal host_frames
        for frame in frames:
            host_frames += 1
            msg = parse_frame(frame.data[:-1], frame.rx_offset)
            if _selected(msg, wanted, args):
                out.write(line(msg, frame) + "\n")

    try:
        # Only reading is the capture's fault (exit 2); a write error is stdout's (cli.main).
        for chunk in _link(args.port, args.baud) if args.port else _file(args.capture, args.follow):
            if sent is not None and args.follow:
                sent.refresh()  # the host's frames written since
            for item in decoder.feed(chunk).items():
                if sent is not None:
                    show_sent(sent.due(_offset(item)))
                if not _selected(item, wanted, args):
                    continue
                out.write(line(item, None) + "\n")
                if live:
                    out.flush()
                if args.strict and isinstance(item, BadFrame):
                    return 1
    except SystemExit:
        if not live:  # Ctrl-C ends a live decode; its summary still follows
            raise
    if sent is not None:
        show_sent(sent.rest())
    stats = decoder.stats()
    dropped = decoder.dropped_bytes
    summary = _summary(stats, decoder.pending_bytes, dropped)
    if sent is not None:
        summary["host_frames"] = host_frames
    _write_summary(out, summary, args.json)
    return 1 if stats.bad_total or dropped else 0
