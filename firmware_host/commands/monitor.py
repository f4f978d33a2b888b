"""Watch the link live: a terminal view of every node and message type.

One row per node and message type (count, rate on the sender's clock, time
since the last frame, the last values with the changed fields highlighted);
per node (every node heard, in its own frames or only in CLOCK_SYNC) the
lost frames, retransmissions and the clock offset, drift with its
uncertainty and mapping uncertainty from the timing core, flagged with !
outside the ICD's datasheet; bad frames by reason (the end of a frame a
join began inside is no bad frame), the lamp and the link's bytes per
second.
Keys: p pause, / filter (Enter applies, Esc cancels), s sort, c only rows
changed recently, x raw hex of the last frames, q quit.  A capture plays at
its recorded pace (its .rxt side file if there is one, else the hub's
stamps), or --speed times faster; live, the reader never waits for the
screen.
"""

from __future__ import annotations

import argparse
import time

from ..cli.args import UsageError, add_baud_argument, check_port, finite_float
from ..cli.options import add_selection_arguments, wanted_types

EXAMPLES = """\
  firmware-host monitor --port /dev/ttyUSB0 --baud 12000000
  firmware-host monitor match.bin --speed 10 --node 4
  firmware-host monitor capture-20261130-133500-0001.bin --filter "tracker"
"""

MIN_SPEED, MAX_SPEED = 0.01, 1000.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", nargs="?", help="raw capture file (.bin) to play (or --port URL)"
    )
    parser.add_argument(
        "--port", metavar="URL", help="watch a live link: a serial device or pyserial URL"
    )
    add_baud_argument(parser)
    parser.add_argument(
        "--speed",
        type=finite_float(MIN_SPEED, MAX_SPEED),
        default=1.0,
        metavar="X",
        help=f"play a capture X times faster, {MIN_SPEED:g} to {MAX_SPEED:g} (default 1)",
    )
    add_selection_arguments(parser, "rows")
    parser.add_argument(
        "--filter",
        metavar="TEXT",
        default="",
        help="start with this filter: rows whose 'node TYPE' holds every word (key / changes it)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        from ..linkwatch.monitor_app import ViewState, run_view
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"monitor needs {exc.name}: pip install -e '.[monitor]' (docs/monitor.md)"
        ) from None
    from ..linkwatch.tally import LinkTally

    types = wanted_types(args.type)
    if (args.capture is None) == (args.port is None):
        raise UsageError("give a CAPTURE or --port URL, one of them")
    if args.capture == "-":
        raise UsageError("-: monitor reads its keys from the terminal; give a capture file")
    if args.port is not None:
        check_port(args.port)
        if args.speed != 1.0:
            raise UsageError("--speed plays a capture; a live link has its own pace")
    state = ViewState(
        source=args.port or args.capture,
        nodes=frozenset(args.node) if args.node else None,
        types=frozenset(types) if types else None,
        text_filter=args.filter,
    )
    tally = LinkTally()
    if args.port is not None:
        from ..linkwatch.link import LinkFeeder

        feeder = LinkFeeder(args.port, args.baud, tally).start()
        try:
            run_view(lambda: tally.snapshot(time.monotonic_ns()), state)
        finally:
            feeder.stop()
        return 0

    from ..linkwatch.player import CapturePlayer

    player = CapturePlayer(args.capture, tally, args.speed)
    state.source += f"  (paced by {player.paced_by}, x{args.speed:g})"
    player.start()
    try:
        run_view(
            lambda: tally.snapshot(player.clock.now_ns()), state, lambda _: player.toggle_pause()
        )
    finally:
        player.stop()
    return 0
