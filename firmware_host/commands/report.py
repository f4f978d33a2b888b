"""Write a match report: one self-contained HTML file with every shot, verdict and rule.

The capture is replayed through the live pipeline (as replay does).  The file
holds the match frame by frame: each shot's picture (as plot draws it, inline
SVG), its events, its verdict with each rule cited in English and in the
Russian original, and the match state after it (who is to play, balls
pocketed per player); then the lamp's timeline and a link-health summary.
It opens with no network: nothing in it is fetched from anywhere.  A long
capture shows a progress bar on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..cli.args import UsageError, add_rules_arguments

EXAMPLES = """\
  firmware-host report match.bin -o match.html
"""

BAR = 30
PROGRESS_S = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("capture", metavar="CAPTURE", help="raw capture (.bin), or - for stdin")
    parser.add_argument("-o", "--output", metavar="FILE", help="the HTML file to write (needed)")
    add_rules_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..cli.args import read_binary, rules_config
    from ..files import not_an_input, replace_atomically
    from ..pipeline import Pipeline, replay

    try:
        from ..pictures.report import report
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"reports need {exc.name}: pip install -e '.[view]' (docs/pictures.md)"
        ) from None
    if args.output is None:
        raise UsageError("-o FILE: where to write the report is needed")
    inputs = [] if args.capture == "-" else [args.capture]
    try:
        not_an_input(args.output, inputs)
    except OSError as exc:
        raise UsageError(f"-o {args.output}: {exc}") from None
    data = read_binary(args.capture)
    rules = rules_config(args)
    pipe = Pipeline(rules)
    result = replay(data, pipe=pipe)
    said = [0.0]

    def progress(done: int, total: int) -> None:
        if time.monotonic() - said[0] < PROGRESS_S and done < total:
            return
        said[0] = time.monotonic()
        filled = BAR * done // max(total, 1)
        bar = "#" * filled + "." * (BAR - filled)
        end = "\n" if done == total else "\r" if sys.stderr.isatty() else "\n"
        sys.stderr.write(f"firmware-host report: [{bar}] {done}/{total} shots{end}")
        sys.stderr.flush()

    page = report(
        Path(args.capture).name,
        result.events,
        result.lines,
        pipe.decoder.stats(),
        pipe.events.losses(),
        rules,
        progress,
    )
    try:  # never over its own input, never through a symlink: a new file renamed into place
        with replace_atomically(args.output, inputs) as out:
            out.write(page.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"-o {args.output}: cannot write it: {exc.strerror or exc}") from None
    return 0
