"""Pieces every subcommand shares: input files, port options, usage errors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import BinaryIO, TextIO


class UsageError(Exception):
    """Unusable argument or unreadable input: one line, exit status 2."""


def read_binary(path: str) -> bytes:
    """A whole capture from a file, or from stdin for ``-``."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def open_binary(path: str) -> BinaryIO:
    """A capture opened for streaming, or stdin for ``-``."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def open_text(path: str) -> TextIO:
    """A JSON Lines input, or stdin for ``-``."""
    if path == "-":
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def add_port_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--port/--baud`` group every live command takes."""
    group = parser.add_argument_group("serial link")
    group.add_argument(
        "--port",
        metavar="URL",
        help="serial device or pyserial URL (socket://, rfc2217://, loop://); "
        "default: the built-in virtual table on a pseudo-terminal",
    )
    group.add_argument(
        "--baud",
        type=int,
        default=921_600,
        help="UART baud rate (default 921600; ignored by USB CDC)",
    )


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the rules engine, the same for every command that judges."""
    parser.add_argument(
        "--discipline",
        choices=("free", "combined"),
        default="free",
        help="free pyramid (any ball may be struck) or combined (only the coloured ball); default free",
    )
