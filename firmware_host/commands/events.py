"""Print the ordered events of a capture as JSON Lines (EVENTS.md).

The capture is read in chunks (memory stays bounded whatever its length) and every
node's clock is mapped onto the hub's, the frames are merged into
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
    from protocol.decoder import StreamDecoder

    from ..cli.args import (
        capture_chunks,
        no_cycle_collection,
        report_frames,
        report_losses,
        require_frames,
        signing_check,
    )
    from ..fusion.events import FusionParams
    from ..fusion.stream import EventStream, events_from_chunks
    from ..jsonout import dumps

    no_cycle_collection()
    decoder = StreamDecoder(signing_check(args))
    stream = EventStream(fusion=FusionParams(frozen_gap_mm=args.frozen_gap))
    out = sys.stdout
    for events in events_from_chunks(capture_chunks(args.capture), stream, decoder):
        out.write("".join(dumps(event, separators=(", ", ": ")) + "\n" for event in events))
    stats = decoder.stats()
    require_frames(args.capture, stats.frames, stats.bad_total)
    frames = report_frames("events", stats)
    return max(frames, report_losses("events", stream.take_notices(), stream.losses()))
