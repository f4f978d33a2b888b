"""Manage the hardware-in-the-loop corpus; re-judge a season of recordings on a cluster.

hil add copies a capture into a corpus directory and writes NAME.SET.expect.json
with the verdicts a replay gives today, and, for a full-set capture, the
middle and minimum variants derived by RULES.md's sensor table. It then
prints what a person must check before committing (docs/hil.md).

hil regress replays every capture of one or more corpora on Dask and says
which verdicts would change against a baseline (docs/regress.md).
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
    _add_regress(sub)


REGRESS = """\
Replay every capture of CORPUS (files or folders, plain paths or fsspec URLs;
a rotated recording's parts in order, with their .tx) on Dask, compare each
shot's verdict with a baseline, and write OUT/results/*.parquet (one row per
shot), OUT/summary.json and OUT/report.html (every changed shot, its picture
before and after). The baseline: stored expectations (NAME.expect.json beside
each capture, or in --baseline DIR), an earlier run (--baseline OUT of it), or
another version (--against a git ref or a venv). Exit status 0 when every
recording was replayed, changes or not; 1 when some failed (listed; --resume
tries them again). docs/regress.md has the cluster set-up and the costs.
"""
REGRESS_EXAMPLES = """\
  firmware-host hil regress hil_tests/corpus -o regress/
  firmware-host hil regress /mnt/club/2026 --against v0.3 --scheduler tcp://sched:8786 -o out/
  firmware-host hil regress /mnt/club/2026 --baseline out-v0.3/ -o out/ --resume
"""


def _add_regress(sub: argparse._SubParsersAction) -> None:
    from ..cli.args import add_rules_arguments, int_in

    regress = sub.add_parser(
        "regress",
        help="replay a season of recordings on Dask: which verdicts would change",
        description=REGRESS,
        epilog=f"example:\n{REGRESS_EXAMPLES.rstrip()}",
    )
    regress.add_argument("corpus", nargs="+", metavar="CORPUS", help="captures or folders of them")
    regress.add_argument("-o", "--output", metavar="OUT", help="the results folder (needed)")
    base = regress.add_mutually_exclusive_group()
    base.add_argument(
        "--baseline",
        metavar="DIR",
        help="expectation files, or an earlier run's OUT (default: NAME.expect.json beside "
        "each capture)",
    )
    base.add_argument(
        "--against",
        metavar="GIT-REF-OR-VENV",
        help="another version: a venv, or a git ref installed into a cached venv of its own",
    )
    regress.add_argument(
        "--scheduler",
        metavar="URL",
        help="a running dask scheduler (tcp://HOST:8786); default: a local cluster here",
    )
    regress.add_argument(
        "--workers",
        type=int_in(1, 4096),
        metavar="N",
        help="local cluster: worker processes (default: one per core)",
    )
    regress.add_argument(
        "--memory-limit",
        default="2GiB",
        metavar="SIZE",
        help="local cluster: memory per worker; one over it is restarted (default 2GiB)",
    )
    regress.add_argument(
        "--resume", action="store_true", help="continue the run already in OUT: skip what it did"
    )
    regress.add_argument(
        "--report-limit",
        type=int_in(0, 10**6),
        default=1000,
        metavar="N",
        help="changed shots drawn in the report, false-foul candidates first (default 1000)",
    )
    add_rules_arguments(regress)


def run(args: argparse.Namespace) -> int:
    if args.action == "regress":
        from ..regress.command import run_regress

        return run_regress(args)
    from hil_tests.add import AddError, add, checklist
    from hil_tests.make_corpus import CORPUS

    from ..cli.args import UsageError

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
