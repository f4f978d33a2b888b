"""Draw a shot of a capture: the table, each ball's path, numbered events, the stroke in µs.

The capture is replayed through the live pipeline (as replay does), then the
shot is drawn with matplotlib: the table to scale with the cushions numbered
as in the ICD, the pockets, the house and centre lines and the marks; each
ball's path from the tracker, with the balls where they stood and where they
stopped; a numbered marker at each contact, cushion hit, line crossing and
pocket drop, listed beside the table in event order; a time strip around the
stroke on a µs scale with the tip contacts and the first ball contact, so a
push or a double hit can be seen; and the verdict with its rule and reason
as the title.  Without a tracker the table says that positions are unknown.
The output's suffix picks the format: .png or .svg (text kept as text).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..cli.args import UsageError, add_rules_arguments, int_in

EXAMPLES = """\
  firmware-host plot match.bin --shot 3 -o shot3.png
  firmware-host plot match.bin --all pictures/
"""

FORMATS = (".png", ".svg")
PROGRESS_S = 2.0  # --all: a progress line at least this often


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", metavar="CAPTURE", help="raw capture (.bin), or - for stdin")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--shot", type=int_in(1, 1_000_000), metavar="N", help="the shot to draw (its number)"
    )
    which.add_argument(
        "--all", metavar="DIR", help="every shot, as DIR/shot-NNN.png (DIR created if missing)"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="with --shot: the picture (.png or .svg)"
    )
    add_rules_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..cli.args import read_binary, rules_config
    from ..pipeline import Pipeline, replay

    if args.shot is None and args.all is None:
        raise UsageError("which shots? --shot N -o FILE, or --all DIR")
    if args.shot is not None and args.output is None:
        raise UsageError("--shot N needs -o FILE (.png or .svg)")
    if args.output is not None and Path(args.output).suffix.lower() not in FORMATS:
        raise UsageError(f"-o {args.output}: the name must end in .png or .svg")
    try:
        from ..pictures.plot import draw, save
        from ..pictures.shots import shots_of
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"pictures need {exc.name}: pip install -e '.[view]' (docs/pictures.md)"
        ) from None
    data = read_binary(args.capture)
    result = replay(data, pipe=Pipeline(rules_config(args)))
    shots = shots_of(result.events, result.lines)
    if args.shot is not None:
        if args.shot not in shots:
            have = f"shots {min(shots)} to {max(shots)}" if shots else "no shot"
            raise UsageError(f"--shot {args.shot}: {args.capture} holds {have}")
        _write(save, draw(shots[args.shot]), Path(args.output))
        return 0
    folder = Path(args.all)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--all {folder}: cannot create it: {exc.strerror or exc}") from None
    said = time.monotonic()
    for i, (number, view) in enumerate(sorted(shots.items()), 1):
        _write(save, draw(view), folder / f"shot-{number:03d}.png")
        if time.monotonic() - said >= PROGRESS_S:
            said = time.monotonic()
            sys.stderr.write(f"firmware-host plot: {i} of {len(shots)} shots drawn\n")
    sys.stderr.write(f"firmware-host plot: {len(shots)} pictures in {folder}\n")
    return 0


def _write(save: Any, fig: Any, path: Path) -> None:
    try:
        save(fig, path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write it: {exc.strerror or exc}") from None
