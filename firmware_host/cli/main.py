"""The ``firmware-host`` command line: one subcommand per module.

Each command lives in ``firmware_host.commands.<name>`` and exposes
``add_arguments(parser)`` and ``run(args) -> int``; heavy imports (numba,
the simulator) stay inside ``run`` so ``--help`` and small commands start
fast.  Exit status (EVENTS.md): 0 success, 1 input held reported errors,
2 unusable arguments or unreadable input, with one line naming the culprit.

Output: a reader that went away (``| head``, EPIPE) is normal use: quiet,
status 0.  Any other failure to write stdout (``> /dev/full``) is one line
naming stdout and status 2: the output named on the command line is
unusable, like an argument.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

from .. import QUIET_SIGNALS, __version__, _exit_on_signal, signal_exit_status
from ..lograte import RateLimit
from .args import UsageError
from .help import HelpFormatter, add_verbose, register

COMMANDS: tuple[str, ...] = (
    "run",
    "decode",
    "dump",
    "events",
    "judge",
    "replay",
    "simulate",
    "rack",
    "hil",
    "config",
    "status",
    "service",
    "plot",
    "report",
    "ports",
    "stats",
    "monitor",
    "send",
    "ping",
    "pcap",
    "dissector",
    "extcap",
    "diff",
    "club",
    "club-sim",
    "keys",
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(2)


def _available(names: Sequence[str] = COMMANDS) -> dict[str, object]:
    modules = {}
    for name in names:
        module = f"firmware_host.commands.{name.replace('-', '_')}"  # club-sim: club_sim.py
        try:
            modules[name] = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return modules


DESCRIPTION = """\
Referee a Russian billiards (pyramid) table from its sensors: read the hub
over a serial link, judge every shot, and decode, replay or simulate captures.
`firmware-host COMMAND --help` explains each command, with an example."""


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names first (only ``-v`` before it), else None.

    Such a command line needs that one command's parser: importing and
    registering the other 22 (the rules engine, the daemon's settings) cost a
    tenth of a second of every ``events`` or ``decode`` run (docs/speed.md).
    ``--help``, ``--version`` or a misspelt command get the whole parser.
    """
    for arg in argv:
        if arg == "--verbose" or (len(arg) > 1 and arg.strip("v") == "-"):
            continue
        return arg if arg in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or with ``only`` that command's alone (when it can be imported)."""
    parser = _Parser(prog="firmware-host", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_verbose(parser)
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )
    for name, module in ((only and _available((only,))) or _available()).items():
        register(sub, name, module)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, but an argument no one knows is the subcommand's error, naming it.

    A command with a ``config`` argument (``run --config FILE``, ``config
    check FILE``) is parsed twice: the file's checked values become its
    parser's defaults, so the command line overrides the file.
    """
    args, extra = parser.parse_known_args(argv)
    owner = parser
    while subs := [a for a in owner._actions if isinstance(a, argparse._SubParsersAction)]:
        owner = subs[0].choices[getattr(args, subs[0].dest)]  # down to `hil add`
    if extra:
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "config", None) is not None:
        from .config_file import ConfigError, load

        try:
            owner.set_defaults(**load(args.config, owner))
        except ConfigError as exc:
            owner.error(str(exc))
        args = parser.parse_args(argv)
    return args


class OutputError(Exception):
    """Writing stdout failed for a reason other than the reader going away."""


class _Stdout:
    """sys.stdout, but a write error is an :class:`OutputError` (EPIPE stays BrokenPipeError)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _guard(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def write(self, text: str) -> int:
        return int(self._guard("write", text))

    def writelines(self, lines: Any) -> None:
        self._guard("writelines", lines)

    def flush(self) -> None:
        self._guard("flush")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _discard_stdout(stream: TextIO) -> None:
    """Point fd 1 at /dev/null so what is still buffered cannot fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real fd (a test's capture): nothing to do
        pass


def _say(command: str, text: str) -> None:
    if sys.stderr is not None:
        sys.stderr.write(f"firmware-host{' ' + command if command else ''}: {text}\n")


def main(argv: Sequence[str] | None = None) -> int:
    stdout = sys.stdout
    if stdout is None:  # started with stdout closed (`>&-`)
        _say("", "stdout is closed")
        return 2
    sys.stdout = _Stdout(stdout)  # type: ignore[assignment]
    # SIGINT, SIGTERM, SIGHUP: exit 128 + signal with every `finally` run (`run` has its own).
    previous = (
        {sig: signal.signal(sig, _exit_on_signal) for sig in QUIET_SIGNALS}
        if threading.current_thread() is threading.main_thread()
        else {}
    )
    command = ""
    try:
        try:
            args = _parse(build_parser(named_command(sys.argv[1:] if argv is None else argv)), argv)
        except SystemExit as exc:  # --help, --version, or a bad argument (already said)
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else 0
        command = args.command
        # One line per event with its level, no colour codes; repeats summed (lograte).
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(RateLimit())
        logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2), handlers=[handler])
        status = int(args._run(args))
        sys.stdout.flush()
        return status
    except UsageError as exc:
        _say(command, str(exc))
        return 2
    except BrokenPipeError:
        # `firmware-host decode big.bin | head` is normal use, not an error.
        _discard_stdout(stdout)
        return 0
    except OutputError as exc:
        _discard_stdout(stdout)
        _say(command, f"stdout: {exc}")
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:
        status = signal_exit_status()  # an error that a signal caused: the signal's status
        if status is None:
            raise
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.stdout = stdout
        try:
            stdout.flush()
        except OSError:  # already reported (or the reader left): never again at exit
            _discard_stdout(stdout)
