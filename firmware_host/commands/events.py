"""Print the ordered events of a capture as JSON Lines (EVENTS.md).

Every node's clock is mapped onto the hub's, the frames are merged into
hub-time order and fused into events: shots, tip and ball contacts,
cushions, pockets, line crossings, positions and paths.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", metavar="CAPTURE", help="raw capture (.bin, ICD §8); - for stdin"
    )
    parser.add_argument(
        "--frozen-gap",
        type=float,
        default=1.5,
        metavar="MM",
        help="a ball this close to a cushion nose rests against it (default 1.5)",
    )


def run(args: argparse.Namespace) -> int:
    import json

    from protocol.decoder import decode_capture

    from ..cliutil import UsageError, read_binary
    from ..fusion.events import FusionParams
    from ..fusion.stream import ROW_TYPES, EventStream, events_from_rows
    from ..timing.rows import to_rows

    if args.frozen_gap < 0:
        raise UsageError(f"--frozen-gap {args.frozen_gap}: must not be negative")
    decoded = decode_capture(read_binary(args.capture))
    if decoded.stats.frames == 0:
        raise UsageError(
            f"{args.capture}: no valid frame in {decoded.stats.bad_total} bad ones: not a capture"
        )
    rows, tracks = to_rows(decoded.tables, ROW_TYPES)
    stream = EventStream(fusion=FusionParams(frozen_gap_mm=args.frozen_gap))
    out = sys.stdout
    for event in events_from_rows(rows, tracks, stream):
        out.write(json.dumps(event, separators=(", ", ": ")) + "\n")
    return 0
