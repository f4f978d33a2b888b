"""Help that explains itself to a newcomer, the same for every subcommand.

Every subcommand is registered through :func:`register`, so each one gets,
without its author doing anything: a plain-text description (the module
docstring with its reST markup removed), upper-case names for its
arguments (``CAPTURE``), the default of every option in its help, an
example (the module's ``EXAMPLES``) as the epilog, and ``-v`` after the
subcommand as well as before it.
"""

from __future__ import annotations

import argparse
import re
from types import ModuleType
from typing import Any

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :func:`x`, :class:`~a.B`
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """reST markup out of a docstring: what a terminal shows is plain text.

    >>> plain("The ``firmware-host`` command; see :func:`replay`.")
    'The firmware-host command; see replay.'
    """
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written (paragraphs, command lines); every default shown."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = plain(action.help or "")
        shown = "default" in text.lower() or not action.option_strings
        quiet = action.default in (None, False, "", argparse.SUPPRESS) or action.nargs == 0
        if not shown and not quiet:
            text = f"{text} (default: %(default)s)".lstrip()
        return text


def _finish(parser: argparse.ArgumentParser, epilog: str | None) -> None:
    """One style for argument names (``CAPTURE``, ``EVENTS``); nested commands
    (``hil add``) get the formatter, ``-v`` and the command's example too."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for nested in action.choices.values():
                nested.epilog = nested.epilog or epilog
                if "-v" not in nested._option_string_actions:
                    add_verbose(nested, argparse.SUPPRESS)
                _finish(nested, epilog)
        elif not action.option_strings and action.metavar is None:
            action.metavar = action.dest.upper()


def add_verbose(parser: argparse.ArgumentParser, default: Any = 0) -> None:
    """``-v``: before the subcommand (default 0) or after it (SUPPRESS: keeps the count)."""
    parser.add_argument(
        "-v", "--verbose", action="count", default=default, help="more log output (-vv: debug)"
    )


def register(sub: Any, name: str, module: ModuleType) -> argparse.ArgumentParser:
    """Add subcommand ``name`` from its module: ``add_arguments``, ``run``, ``EXAMPLES``."""
    doc = plain((module.__doc__ or name).strip())
    examples = getattr(module, "EXAMPLES", "").strip("\n")
    epilog = f"example:\n{examples}" if examples else None
    cmd = sub.add_parser(
        name,
        help=doc.splitlines()[0],
        description=doc,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )
    add_verbose(cmd, argparse.SUPPRESS)
    module.add_arguments(cmd)
    _finish(cmd, epilog)
    cmd.set_defaults(_run=module.run)
    return cmd
