"""Manage the hardware-in-the-loop corpus: add a recording with a draft expectation.

hil add copies a capture into a corpus directory and writes NAME.SET.expect.json
with the verdicts a replay gives today, and, for a full-set capture, the
middle and minimum variants derived by RULES.md's sensor table. It then
prints what a person must check before committing (docs/hil.md).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SETS = ("full", "middle", "minimum")
CORPUS_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _sets(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in SETS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: a comma list of {', '.join(SETS)}")
    return names


EXAMPLES = """\
  firmware-host hil add lab/break.bin --sensors full,middle,minimum
  firmware-host hil add lab/break.bin --corpus /lab/corpus && pytest --hil-corpus /lab/corpus
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser(
        "add",
        help="add a capture to a corpus with a draft expectation to review",
        description=__doc__,
    )
    add.add_argument("capture", metavar="CAPTURE", help="raw capture (.bin, ICD §8)")
    add.add_argument(
        "--sensors",
        type=_sets,
        metavar="SET[,SET]",
        default=None,
        help="sensor sets to write (full, middle, minimum); the others are derived from a "
        "full-set capture (default: the set the capture's HELLO announces)",
    )
    add.add_argument(
        "--corpus",
        metavar="DIR",
        type=Path,
        default=None,
        help="corpus directory (default: the shipped hil_tests/corpus)",
    )
    add.add_argument("--force", action="store_true", help="replace files already in the corpus")


def run(args: argparse.Namespace) -> int:
    from hil_tests.add import AddError, add, checklist
    from hil_tests.make_corpus import CORPUS

    from ..cliutil import UsageError

    corpus = args.corpus or CORPUS
    name = Path(args.capture).name
    if not CORPUS_NAME.fullmatch(name):
        raise UsageError(
            f"{args.capture!r}: a corpus capture is named with letters, digits, '.', '_' and "
            "'-', starting with a letter or digit (it names files others will list and commit)"
        )
    try:
        added = add(Path(args.capture), corpus, args.sensors, args.force)
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.capture}: {exc.strerror or exc}") from None
    except AddError as exc:
        raise UsageError(f"{args.capture}: {exc}") from None
    for item in added:
        sys.stdout.write(f"{item.capture}\n{item.expectation}: {item.verdicts} verdicts (draft)\n")
    sys.stderr.write(checklist(added, corpus))
    return 0
