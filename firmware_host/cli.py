"""The ``firmware-host`` command line: one subcommand per module.

Each command lives in ``firmware_host.commands.<name>`` and exposes
``add_arguments(parser)`` and ``run(args) -> int``; heavy imports (numba,
the simulator) stay inside ``run`` so ``--help`` and small commands start
fast.  Exit status (EVENTS.md): 0 success, 1 input held reported errors,
2 unusable arguments or unreadable input, with one line naming the culprit.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from . import __version__
from .cliutil import UsageError

COMMANDS: tuple[str, ...] = (
    "run",
    "decode",
    "dump",
    "events",
    "judge",
    "replay",
    "simulate",
    "rack",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(2)


def _available() -> dict[str, object]:
    modules = {}
    for name in COMMANDS:
        try:
            modules[name] = importlib.import_module(f"firmware_host.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"firmware_host.commands.{name}":
                raise
    return modules


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="firmware-host", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module in _available().items():
        doc = (module.__doc__ or name).strip()
        cmd = sub.add_parser(name, help=doc.splitlines()[0], description=doc)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args._run(args))
    except UsageError as exc:
        sys.stderr.write(f"firmware-host {args.command}: {exc}\n")
        return 2
    except BrokenPipeError:
        # `firmware-host decode big.bin | head` is normal use, not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
