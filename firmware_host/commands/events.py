"""Print the ordered events of a capture as JSON Lines (EVENTS.md).

Every node's clock is mapped onto the hub's, the frames are merged into
hub-time order and fused into events: shots, tip and ball contacts,
cushions, pockets, line crossings, positions and paths.
"""

from __future__ import annotations

import argparse
import sys

from ..cli.args import MAX_FROZEN_GAP_MM, add_signing_arguments, finite_float

EXAMPLES = """\
  firmware-host events match.bin > match.events.jsonl
  firmware-host events match.bin | jq 'select(.type == "pocket")'
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", metavar="CAPTURE", help="raw capture (.bin, ICD §8); - for stdin"
    )
    parser.add_argument(
        "--frozen-gap",
        type=finite_float(0, MAX_FROZEN_GAP_MM),
        default=1.5,
        metavar="MM",
        help=f"a ball this close to a cushion nose rests against it, 0 to {MAX_FROZEN_GAP_MM:g} "
        "(default 1.5)",
    )
    add_signing_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from protocol.decoder import decode_capture

    from ..cli.args import (
        no_cycle_collection,
        read_binary,
        report_frames,
        report_losses,
        require_frames,
        signing_check,
    )
    from ..fusion.events import FusionParams
    from ..fusion.stream import ROW_TYPES, EventStream, events_from_rows
    from ..jsonout import dumps
    from ..timing.rows import to_rows

    no_cycle_collection()
    decoded = decode_capture(read_binary(args.capture), signing_check(args))
    require_frames(args.capture, decoded.stats.frames, decoded.stats.bad_total)
    rows, tracks = to_rows(decoded.tables, ROW_TYPES)
    stream = EventStream(fusion=FusionParams(frozen_gap_mm=args.frozen_gap))
    out = sys.stdout
    for event in events_from_rows(rows, tracks, stream):
        out.write(dumps(event, separators=(", ", ": ")) + "\n")
    frames = report_frames("events", decoded.stats)
    return max(frames, report_losses("events", stream.take_notices(), stream.losses()))
