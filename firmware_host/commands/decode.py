"""Decode a raw capture (ICD §8) into one line per frame, then a summary.

Reads the capture in chunks through the streaming decoder, so a capture of
any size decodes in bounded memory.  ``--json`` (or ``--format json``)
writes the EVENTS.md line format, ``--format csv`` one row per frame with a
column per field; the default is an aligned table for people.  Exit status
1 when the capture held bad frames (they are listed and counted) or ends in
an over-long run of bytes without a delimiter (dropped as it came; the
summary gives its length as ``dropped_bytes``), 2 when it cannot be read.

Every line says what the decoder's sequence window said of its frame: a
``GAP`` (frames of its node lost just before it), a ``LATE`` resend that
fills one, a ``DUPLICATE``, a node's ``COUNTER RESTART``, the hub's
``REBOOT`` (JSON: ``lost_before``, ``late``, ``duplicate``,
``counter_restart``, ``reboot``).

``--time hub|host|relative|delta`` adds a time column (as candump's ``-t``):
the frame's stamp mapped onto the hub's clock (the timing core's estimator,
docs/link-debugging.md), the host's receive time (the ``.rxt`` beside the
capture, or the live read), seconds since the capture's first frame on the
hub's clock, or since the line before.  ``--from``/``--to`` cut a window on
that axis (``hub`` when ``--time`` is not given, ``delta``'s too).
``--hex`` shows each frame's bytes, ``--where EXPR`` filters on fields
(parsed, never evaluated: :mod:`firmware_host.linktools.where`).

A recording from ``run --record`` holds both directions: the frames the host
sent (its ``.tx`` side file) are shown among the table's, in time order,
each line marked with its direction (``->`` sent, ``<-`` received; in JSON
``"direction": "host"`` or ``"table"``); a host line's ``offset`` is how far
the table's stream had come when it was sent.
"""

from __future__ import annotations

import argparse
import csv
import queue
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, TextIO

from ..cli.args import (
    UsageError,
    add_baud_argument,
    add_signing_arguments,
    check_port,
    finite_float,
    open_binary,
    read_chunk,
)
from ..cli.options import add_selection_arguments, wanted_types
from ..jsonout import dumps

CHUNK = 1 << 20
BATCH_LINES = 512  # lines written at once (few objects held, few writes)
FOLLOW_S = 0.2  # --follow, --port: how often to look for more bytes
MAX_TIME_S = 1e12


EXAMPLES = """\
  firmware-host decode match.bin | less
  firmware-host decode --json --type CUSHION_HIT match.bin | jq .fields
  firmware-host decode --time hub --from 10 --to 20 --node 4 match.bin
  firmware-host decode --where 'amplitude>1000 and cushion=="back"' --hex match.bin
  firmware-host decode --format csv --type BALL_TRACK match.bin > track.csv
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
    add_signing_arguments(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        help="text (default), json (= --json) or csv: a header row, one row per frame, a column "
        "per field of the types shown (the summary goes to stderr)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop at the first bad frame (exit status 1)"
    )
    add_selection_arguments(parser, "frames")
    parser.add_argument(
        "--time",
        choices=("hub", "host", "relative", "delta"),
        help="a time column: hub (each stamp on the hub's clock), host (receive time: the "
        ".rxt or the live read), relative (s since the first frame), delta (s since the line "
        "before)",
    )
    for option, dest, which in (("--from", "t_from", "at or after"), ("--to", "t_to", "before")):
        parser.add_argument(
            option,
            dest=dest,
            type=finite_float(0, MAX_TIME_S),
            metavar="S",
            help=f"only frames {which} S seconds on the --time axis (the hub's clock by default)",
        )
    parser.add_argument(
        "--hex", action="store_true", help="each frame's bytes (a bad frame's, and its header)"
    )
    parser.add_argument(
        "--where",
        metavar="EXPR",
        help="only frames whose fields pass, e.g. 'amplitude>1000 and cushion==2' "
        "(== != < <= > >= in, and or not; docs/link-debugging.md)",
    )


def _file(path: str, follow: bool) -> Iterator[tuple[bytes, int | None]]:
    """A capture in chunks; with ``follow``, also what is appended to it later."""
    source = open_binary(path)
    try:
        while True:
            chunk = read_chunk(source, path, CHUNK)
            if chunk:
                yield chunk, None
            elif follow:
                time.sleep(FOLLOW_S)
            else:
                return
    finally:
        source.close()


def _link(url: str, baud: int) -> Iterator[tuple[bytes, int | None]]:
    """A live link's bytes as they arrive, with the host's time of each read (the transport
    reconnects a lost port)."""
    from ..link.transport import SerialTransport

    transport = SerialTransport(url, baudrate=baud).open()
    try:
        while True:
            try:
                chunk = transport.chunks.get(timeout=FOLLOW_S)
            except queue.Empty:
                continue
            yield chunk.data, chunk.host_rx_ns
    finally:
        transport.close()


def _sent_frames(capture: str | None) -> Any:
    """A two-way recording's host frames (its ``.tx``), or None: the capture is one-way."""
    if capture in (None, "-"):
        return None
    from ..linktools.recording import SentInterleaver

    sent = SentInterleaver(capture)
    return sent if sent else None


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
        # ICD §9 and seq conflicts: only when there are any (a capture without stays as it was)
        **{k: v for k, v in _wire_trust(stats).items() if v},
    }


def _wire_trust(stats: Any) -> dict[str, Any]:
    return {
        "signed": stats.signed,
        "refused": stats.refused,
        "conflicts": stats.conflicts,
        "over_rate": stats.over_rate,
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
    if summary["reboots"]:
        out.write(f"  hub reboots    {summary['reboots']} (marked REBOOT)\n")
    if "signed" in summary:
        out.write(f"  signed frames  {summary['signed']}\n")
    for node, reasons in summary.get("refused", {}).items():
        shown = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
        out.write(f"  refused from {node:<8} {shown} (marked REFUSED)\n")
    for node, n in summary.get("conflicts", {}).items():
        out.write(f"  seq conflicts  {node} {n} (marked SEQ CONFLICT: a forged frame?)\n")
    for node, n in summary.get("over_rate", {}).items():
        out.write(f"  over rate from {node:<8} {n} (marked OVER RATE: the node floods the link)\n")
    if summary["pending_bytes"]:
        out.write(f"  capture ends inside a frame ({summary['pending_bytes']} bytes)\n")
    if summary["dropped_bytes"]:
        out.write(
            f"  capture ends in {summary['dropped_bytes']} bytes without a frame delimiter "
            "(longer than any frame): dropped\n"
        )


class _Batch:
    """Lines kept until :meth:`drain` writes them to ``out`` at once: a write per line
    (through the CLI's guarded stdout) cost as much as making the line."""

    def __init__(self, out: TextIO) -> None:
        self.target = out
        self.lines: list[str] = []
        self.write = self.lines.append

    def writelines(self, lines: Iterator[str]) -> None:
        self.lines.extend(lines)

    def drain(self) -> None:
        if self.lines:
            self.target.write("".join(self.lines))
            self.lines.clear()


class Listing:
    """The lines of one decode: kept in stream order until each has its hub time, then
    timed, filtered and written (text, JSON or CSV)."""

    def __init__(self, args: argparse.Namespace, out: TextIO, two_way: bool) -> None:
        from ..linktools.listing import csv_columns
        from ..linktools.where import WhereError, compile_where

        self.args, self.two_way = args, two_way
        self.out = _Batch(out)  # the lines of one chunk leave in one write
        self.types = wanted_types(args.type)
        self.format = args.format or ("json" if args.json else "text")
        self.axis = args.time or (
            "hub" if args.t_from is not None or args.t_to is not None else None
        )
        self.window_axis = "hub" if self.axis == "delta" else self.axis
        try:
            self.where = compile_where(args.where) if args.where else None
        except WhereError as exc:
            raise UsageError(f"--where {exc}") from None
        self.waiting: deque[Any] = deque()
        self.first_line_us: int | None = None
        self.last_shown_us: int | None = None
        self.first_host_ns: int | None = None
        self.shown = 0
        self.csv = None
        if self.format == "csv":
            self.csv = csv.writer(self.out, lineterminator="\n")
            self.columns = csv_columns(self.types, two_way, args.time, args.hex)
            self.csv.writerow(self.columns)
        elif self.format == "text":
            arrow = "   " if two_way else ""
            when = f"{args.time + ' s':>14}  " if args.time else ""
            out.write(f"{arrow}{when}{'offset':>10}  {'node':<8} {'seq':>5} {'t_us':>10}  "
                      "type          fields\n")  # fmt: skip

    def add(self, line: Any) -> None:
        self.waiting.append(line)

    def ready(self) -> Iterator[Any]:
        """The lines at the front that are known for good (their hub time is in)."""
        while self.waiting and self.waiting[0].stamp.resolved:
            yield self.waiting.popleft()

    def axis_time(self, line: Any, axis: str | None) -> float | None:
        """The line's time on ``axis`` in seconds (None: it has none)."""
        stamp = line.stamp
        if axis == "hub":
            return None if stamp.hub_us is None else stamp.hub_us / 1e6
        if axis == "host":
            return None if line.host_ns is None else line.host_ns / 1e9
        if axis in ("relative", "delta") and stamp.line_us is not None:
            if self.first_line_us is None:
                self.first_line_us = stamp.line_us
            if axis == "relative":
                return (stamp.line_us - self.first_line_us) / 1e6
            last, self.last_shown_us = self.last_shown_us, stamp.line_us
            return 0.0 if last is None else (stamp.line_us - last) / 1e6
        return None

    def selected(self, line: Any) -> bool:
        """The filters select lines; a frame without a node, type or time passes only when
        no filter asks for one of them.  The summary always counts everything."""
        frame = line.frame
        if self.types and getattr(frame, "name", None) not in self.types:
            return False
        if self.args.node and getattr(frame, "node", None) not in self.args.node:
            return False
        if self.window_axis and (self.args.t_from is not None or self.args.t_to is not None):
            t = (
                self.axis_time(line, self.window_axis)
                if self.window_axis != self.axis
                else line.time_s
            )
            if t is None:
                return False
            if self.args.t_from is not None and t < self.args.t_from:
                return False
            if self.args.t_to is not None and t >= self.args.t_to:
                return False
        return self.where is None or bool(self.where(line.record()))

    def write(self, line: Any) -> bool:
        """Time, filter and write one line; True when it was shown."""
        from ..linktools.listing import csv_row, hex_lines, json_object, text_line

        if self.axis == "delta":
            line.time_s = None  # known only once it is shown (the line before it)
        else:
            line.time_s = self.axis_time(line, self.axis)
        if not self.selected(line):
            return False
        if self.axis == "delta":
            line.time_s = self.axis_time(line, "delta")
        self.shown += 1
        if self.format == "csv":
            assert self.csv is not None
            self.csv.writerow(csv_row(line, self.columns))
        elif self.format == "json":
            record = json_object(line, self.args.hex, self.args.time)
            if self.two_way:
                record["direction"] = "table" if line.sent is None else "host"
                if line.sent is not None:
                    record["host_ns"] = line.sent.host_ns
            self.out.write(dumps(record) + "\n")
        else:
            arrow = ("<- " if line.sent is None else "-> ") if self.two_way else ""
            self.out.write(arrow + text_line(line, self.args.time) + "\n")
            if self.args.hex:
                indent = " " * (len(arrow) + (16 if self.args.time else 0) + 12)
                self.out.writelines(h + "\n" for h in hex_lines(line, indent))
        return True


class _BulkText:
    """A whole capture's text listing, nothing selected or timed: the plain frames' lines
    made by a kernel from the decoder's arrays (:mod:`..linktools.textlines`), the others
    by :meth:`Listing.write` in their places.  Byte for byte the listing's own."""

    def __init__(self, listing: Listing, strict: bool) -> None:
        from ..linktools.textlines import TextLines

        self.listing, self.strict = listing, strict
        self.kernel = TextLines()

    def write(self, decoded: Any, read_ns: int | None, keyed: bool) -> bool:
        """Write a feed's lines; True when ``--strict`` stops at a bad frame."""
        import numpy as np

        from protocol.framing import BadFrame

        from ..linktools.listing import Line

        text, ends, slow = self.kernel.lines(decoded.frames, decoded.tables)
        out = self.listing.out
        start = 0
        for i in np.flatnonzero(slow).tolist():
            out.write(text[start : ends[i]].decode())
            start = int(ends[i])
            line = Line(decoded.item(i), decoded.frames[i], host_ns=read_ns, keyed=keyed)
            self.listing.write(line)
            if self.strict and isinstance(line.frame, BadFrame):
                out.drain()
                return True
        out.write(text[start:].decode())
        out.drain()
        return False


def _bulk_text(args: argparse.Namespace, listing: Listing, timed: bool) -> _BulkText | None:
    """The kernel's listing when it applies: text, from a file read once, every frame shown
    as it is (no time column, filter, hex or host frames)."""
    plain = listing.format == "text" and not (timed or args.hex or args.follow or args.port)
    unfiltered = not (listing.types or args.node or listing.where) and listing.axis is None
    return _BulkText(listing, args.strict) if plain and unfiltered else None


def _check(args: argparse.Namespace) -> None:
    if (args.capture is None) == (args.port is None):
        raise UsageError("give a CAPTURE (- for stdin) or --port URL, one of them")
    if args.follow and args.capture in (None, "-"):
        raise UsageError("--follow needs a capture file (a growing one)")
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"--json and --format {args.format}: choose one")
    if args.time == "host" and args.port is None and args.capture == "-":
        raise UsageError("--time host: the host's times are the .rxt beside a capture file")
    if args.port is not None:
        check_port(args.port)


def _host_times(args: argparse.Namespace) -> Any:
    """The ``.rxt`` beside the capture (--time host), or None."""
    from pathlib import Path

    from ..link.recorder import read_rx_times

    if args.time != "host" or args.port is not None:
        return None
    rxt = Path(args.capture).with_suffix(".rxt")
    if not rxt.is_file():
        raise UsageError(f"--time host: {rxt} is missing (a recording's host receive times)")
    return read_rx_times(rxt)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from protocol.decoder import FRAME_DTYPE, StreamDecoder
    from protocol.framing import BadFrame, parse_frame

    from ..cli.args import signing_check
    from ..linktools.hubtime import HubTimes
    from ..linktools.listing import Line, WireBytes
    from ..linktools.recording import arrival_ns

    _check(args)
    out = sys.stdout
    sent = _sent_frames(args.capture)
    listing = Listing(args, out, two_way=sent is not None)
    rx = _host_times(args)
    signing = signing_check(args)
    decoder = StreamDecoder(signing)
    wire = WireBytes()
    hub = HubTimes() if listing.axis in ("hub", "relative", "delta") else None
    live = args.port is not None or args.follow
    host_frames = 0

    def show_sent(frames: list[Any]) -> None:
        nonlocal host_frames
        for frame in frames:
            host_frames += 1
            msg = parse_frame(frame.data[:-1], frame.rx_offset)
            row = np.zeros(1, FRAME_DTYPE)[0]
            listing.write(Line(msg, row, host_ns=frame.host_ns, wire=frame.data, sent=frame))

    def emit() -> int | None:
        try:
            for line in listing.ready():
                if sent is not None:
                    show_sent(sent.due(int(line.frame.offset)))
                listing.write(line)
                if args.strict and isinstance(line.frame, BadFrame):
                    return 1
        finally:
            listing.out.drain()
        if live:
            out.flush()
        return None

    bulk = _bulk_text(args, listing, sent is not None or rx is not None or hub is not None)
    try:
        # Only reading is the capture's fault (exit 2); a write error is stdout's (cli.main).
        source = _link(args.port, args.baud) if args.port else _file(args.capture, args.follow)
        for chunk, read_ns in source:
            if bulk is not None:
                if bulk.write(decoder.feed(chunk), read_ns, signing is not None):
                    return 1
                continue
            if sent is not None and args.follow:
                sent.refresh()  # the host's frames written since
            decoded = decoder.feed(chunk)
            ends = host = None
            if args.hex or rx is not None:  # the bytes of each frame, its delimiter's arrival
                wire.feed(chunk)
                ends = wire.ends(decoded.frames["offset"])
                host = arrival_ns(rx, ends) if rx is not None and len(rx) else None
            for i, (row, item) in enumerate(zip(decoded.frames, decoded.items(), strict=True)):
                line = Line(item, row, host_ns=read_ns if host is None else int(host[i]))
                line.keyed = signing is not None
                if args.hex and ends is not None:
                    line.wire = wire.frame(int(row["offset"]), int(ends[i]))
                if hub is not None:
                    line.stamp = hub.take(row, line.fields())
                listing.add(line)
                if len(listing.waiting) >= BATCH_LINES and emit() is not None:
                    return 1
            if emit() is not None:
                return 1
    except SystemExit:
        if not live:  # Ctrl-C ends a live decode; its summary still follows
            raise
    if hub is not None:
        hub.flush()
    if emit() is not None:
        return 1
    if sent is not None:
        show_sent(sent.rest())
        listing.out.drain()
    stats = decoder.stats()
    dropped = decoder.dropped_bytes
    summary = _summary(stats, decoder.pending_bytes, dropped)
    if sent is not None:
        summary["host_frames"] = host_frames
    if listing.format == "csv":
        _write_summary(sys.stderr, summary, as_json=False)
    else:
        _write_summary(out, summary, listing.format == "json")
    trouble = stats.refused or stats.conflicts or stats.over_rate
    return 1 if stats.bad_total or dropped or trouble else 0
