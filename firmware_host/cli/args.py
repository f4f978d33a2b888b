"""Pieces every subcommand shares: input files, option types, ports, usage errors.

Every numeric option goes through one of the ``type=`` helpers here
(:func:`finite_float`, :func:`int_in`), so a NaN, an infinity or a value
out of range is one line from argparse and exit status 2, the same in
every command (EVENTS.md).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import urlsplit

from ..files import kind_of

MIN_BAUD, MAX_BAUD = 50, 12_000_000  # the slowest standard rate, the fastest USB UART
SEED_MAX = 2**32 - 1  # numpy seeds must be non-negative; one 32-bit word keeps them portable


class UsageError(Exception):
    """Unusable argument or unreadable input: one line, exit status 2."""


# -- option types ------------------------------------------------------------------


def _bounds(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:.12g}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:.12g}")
    return " and ".join(parts)


def finite_float(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number within ``[lo, hi]`` (open ends on request).

    >>> finite_float(0, 10, lo_open=True)("2.5")
    2.5
    """
    bounds = _bounds(lo, hi, lo_open, hi_open)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number {bounds}")
        below = lo is not None and (value <= lo if lo_open else value < lo)
        above = hi is not None and (value >= hi if hi_open else value > hi)
        if below or above:
            raise argparse.ArgumentTypeError(f"{text}: must be {bounds}")
        return value

    parse.__name__ = "number"
    return parse


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer from ``lo`` to ``hi``.

    >>> int_in(1, 15)("7")
    7
    """

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text}: must be from {lo} to {hi}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_int(hi: int = 2**63 - 1) -> Callable[[str], int]:
    return int_in(1, hi)


# -- inputs ------------------------------------------------------------------------


def _stdin_buffer() -> BinaryIO:
    if sys.stdin is None:  # started with stdin closed (`<&-`)
        raise UsageError("-: no input (stdin is closed)")
    return sys.stdin.buffer


def read_binary(path: str) -> bytes:
    """A whole capture from a file, or from stdin for ``-``."""
    try:
        if path == "-":
            return _stdin_buffer().read()
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def open_binary(path: str) -> BinaryIO:
    """A capture opened for streaming, or stdin for ``-``."""
    if path == "-":
        return _stdin_buffer()
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def read_chunk(source: BinaryIO, path: str, size: int) -> bytes:
    """One read of a streamed input; an error reading it is the input's fault (exit 2)."""
    try:
        return source.read(size)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


#: Bytes per read of a capture streamed from a file: enough to keep the kernels busy, small
#: against any capture (docs/memory.md)
CAPTURE_CHUNK = 1 << 20


def capture_chunks(path: str, size: int = CAPTURE_CHUNK) -> Iterator[bytes]:
    """A capture (or stdin for ``-``) read ``size`` bytes at a time: memory stays bounded by
    one read however long the capture is."""
    source = open_binary(path)
    try:
        while chunk := read_chunk(source, path, size):
            yield chunk
    finally:
        source.close()


def open_text(path: str) -> TextIO:
    """A JSON Lines input, or stdin for ``-``."""
    if path == "-":
        if sys.stdin is None:
            raise UsageError("-: no input (stdin is closed)")
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def report_losses(command: str, notices: list[str], losses: dict[str, int]) -> int:
    """What the timing core and fusion counted, on stderr; exit status 1 if anything was lost."""
    for notice in notices:
        sys.stderr.write(f"firmware-host {command}: {notice}\n")
    if not losses:
        return 0
    sys.stderr.write(f"firmware-host {command}: data lost or dropped: {losses}\n")
    return 1


def plural(n: int, word: str) -> str:
    """``1 bad frame``, ``3 bad frames``: counts people read."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def report_frames(command: str, stats: Any, dropped_bytes: int = 0) -> int:
    """The decoder's findings on stderr, as ``decode`` counts them; exit status 1 if any.

    ``events`` and ``replay`` skip bad frames and go on, but a CI job calling
    them must not go green on a damaged capture: bad frames, frames lost in
    sequence gaps and bytes dropped without a delimiter are the input's errors
    (EVENTS.md exit status 1).  ``stats`` is a :class:`protocol.decoder.Stats`.
    """
    found = []
    if stats.bad_total:
        found.append(f"{plural(stats.bad_total, 'bad frame')} {stats.bad}")
    lost = sum(stats.lost.values())
    if lost:
        found.append(f"{plural(lost, 'frame')} lost in sequence gaps (by node {stats.lost})")
    refused = getattr(stats, "refused", {})
    if refused:
        found.append(f"signed frames refused (ICD §9, by node and reason {refused})")
    conflicts = getattr(stats, "conflicts", {})
    if conflicts:
        found.append(
            f"{plural(sum(conflicts.values()), 'seq conflict')}: a seq reused with other "
            f"content, a forged frame? (by node {conflicts})"
        )
    over_rate = getattr(stats, "over_rate", {})
    if over_rate:
        found.append(
            f"{plural(sum(over_rate.values()), 'frame')} beyond their node's rate limit, a "
            f"node flooding the link (by node {over_rate})"
        )
    if dropped_bytes:
        found.append(f"{plural(dropped_bytes, 'byte')} dropped without a frame delimiter")
    if not found:
        return 0
    sys.stderr.write(
        f"firmware-host {command}: the input held errors, skipped: {'; '.join(found)} "
        "(firmware-host decode lists them)\n"
    )
    return 1


def no_cycle_collection() -> None:
    """A batch command (``events``, ``replay``) runs without the cyclic garbage collector.

    What it makes is acyclic (the events' dicts and lists, numpy arrays) and
    freed by reference counting; yet the allocation of a busy table's
    thousands of path points triggered full collections that walked every
    module, numba type and kernel again each time.  Off for the batch, the
    busy capture's timeline and fusion took a tenth less CPU
    (docs/speed.md); a daemon, which lives for days, keeps it.

    At exit the interpreter still collects, several times, while it takes
    the modules down: every module, numba type and kernel walked again
    (0.3 s of CPU).  Frozen first, they are left out of those collections;
    nothing of the output is waiting on them (it is written and flushed).
    """
    gc.disable()
    atexit.register(gc.freeze)


def require_frames(path: str, frames: int, bad: int) -> None:
    """A capture with not one good frame is not a capture (``events``, ``replay``)."""
    if frames == 0:
        raise UsageError(f"{path}: no valid frame in {bad} bad ones: not a capture")


# -- outputs -----------------------------------------------------------------------


# -- live commands -----------------------------------------------------------------


PORT_HELP = "serial device or pyserial URL (socket://HOST:PORT, rfc2217://HOST:PORT, loop://)"


def add_port_arguments(
    parser: argparse.ArgumentParser,
    default: str = "the built-in virtual table on a pseudo-terminal",
) -> Any:
    """The ``--port/--baud`` group every live command takes; ``default`` says what no
    ``--port`` means.  Returns the group, for a command's own link options."""
    group = parser.add_argument_group("serial link")
    group.add_argument("--port", metavar="URL", help=f"{PORT_HELP}; default: {default}")
    add_baud_argument(group)
    return group


def add_baud_argument(parser: Any) -> None:
    """``--baud``: the ICD's default rate (the transport's ``DEFAULT_BAUD``), any UART's range."""
    parser.add_argument(
        "--baud",
        type=int_in(MIN_BAUD, MAX_BAUD),
        default=921_600,
        help=f"UART baud rate, {MIN_BAUD} to {MAX_BAUD} (default 921600; ignored by USB CDC)",
    )


NETWORK_SCHEMES = ("socket", "rfc2217")


def check_port(url: str, absent_ok: bool = False) -> None:
    """``--port``: a serial device that exists, or a URL pyserial can use; else UsageError.

    What cannot be a port is a usage error at once; a table that is only
    absent (a cable out, a server not up yet) is waited for by the daemon.
    ``absent_ok`` (``run``): a device path that does not exist yet is such a
    table too (a USB adapter that enumerates late, a ``/dev/serial/by-id/``
    name before the plug-in); the one-shot tools say "no such device".
    """
    if not url:
        raise UsageError("--port: empty (a serial device or a pyserial URL)")
    if "://" in url:
        _check_url(url)
    elif not (absent_ok and not os.path.exists(url)):
        _check_device(url)


def _check_url(url: str) -> None:
    import serial

    try:
        serial.serial_for_url(url, do_not_open=True)
    except (ValueError, serial.SerialException) as exc:
        raise UsageError(f"--port {url}: {exc}") from None
    scheme = url.partition("://")[0].lower()
    if scheme in NETWORK_SCHEMES:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UsageError(f"--port {url}: {exc}") from None
        if not parts.hostname or port is None or port == 0:
            raise UsageError(f"--port {url}: needs {scheme}://HOST:PORT (a port from 1 to 65535)")


def _check_device(path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"--port {path}: no such device") from None
    except OSError as exc:
        raise UsageError(f"--port {path}: {exc.strerror or exc}") from None
    if not stat.S_ISCHR(st.st_mode):
        raise UsageError(f"--port {path}: {kind_of(st.st_mode)}, not a serial device")
    from ..link.transport import access_problem

    problem = access_problem(path)
    if problem is not None:  # the dialout group, usually
        raise UsageError(f"--port {path}: {problem}")
    # sysfs names the class of a registered device without opening it (an open may
    # reset a board through DTR); pseudo-terminals are not registered there.
    subsystem = f"/sys/dev/char/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/subsystem"
    if os.path.exists(subsystem):
        tty = os.path.basename(os.path.realpath(subsystem)) == "tty"
    else:
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as exc:
            raise UsageError(f"--port {path}: {exc.strerror or exc}") from None
        try:
            tty = os.isatty(fd)
        finally:
            os.close(fd)
    if not tty:
        raise UsageError(
            f"--port {path}: a character device that is not a tty, not a serial device"
        )


def record_dir(path: str) -> Path:
    """``--record DIR``: created if missing; UsageError if it cannot hold a recording."""
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"--record {path}: exists and is not a directory") from None
    except OSError as exc:
        raise UsageError(f"--record {path}: cannot create it: {exc.strerror or exc}") from None
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise UsageError(f"--record {path}: cannot write in it: {exc.strerror or exc}") from None
    return directory


# The rules engine's thresholds (rules.RulesConfig, docs/rules.md): option, unit, bounds, help.
# The option's dest is the RulesConfig field, which is also the config file's key (docs/config.md).
MAX_GAP_MM = 1000.0  # wider than any ball gap or tolerance a table could mean
MAX_WINDOW_US = 1_000_000
MAX_FROZEN_GAP_MM = 34.0  # half a ball: farther is no longer resting against the cushion
RULES_THRESHOLDS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("--near-gap", "near_gap_mm", finite_float(0, MAX_GAP_MM),
     "balls closer than this (mm) are a 19.2 case, a triple contact hard to avoid"),
    ("--near-gap-band", "near_gap_band_mm", finite_float(0, MAX_GAP_MM),
     "a gap read this close (mm) to --near-gap may be either: 19.2 only where both agree"),
    ("--near-contact", "near_contact_us", int_in(0, MAX_WINDOW_US),
     "without positions: a first contact this soon (us) after the stroke may be a 19.2 case"),
    ("--frozen-gap", "frozen_gap_mm", finite_float(0, MAX_FROZEN_GAP_MM),
     "a ball this close (mm) to a cushion nose rests against it (item 20)"),
    ("--rack-tolerance", "rack_tolerance_mm", finite_float(0, MAX_GAP_MM),
     "a ball this far (mm) from its rack place is misplaced (item 8)"),
    ("--path-tolerance", "path_tolerance_mm", finite_float(0, MAX_GAP_MM),
     "path accuracy (mm): how far the cue ball goes before its direction is read"),
    ("--follow-tolerance", "follow_tolerance_mm", finite_float(0, MAX_GAP_MM),
     "the cue ball's forward travel (mm) after the collision that 19.2(2) tolerates"),
    ("--stroke-window", "stroke_window_us", int_in(1, MAX_WINDOW_US),
     "19.2(1): how long (us) after the first contact the balls' travel is summed"),
    ("--stroke-angle-band", "stroke_angle_band_deg", finite_float(0, 45),
     "19.2(1): a stroke read this close (degrees) to 45 is left to the referee"),
)  # fmt: skip
RULES_SWITCHES: tuple[tuple[str, str, str], ...] = (
    ("--penalty-ball", "penalty_ball", "a foul takes one ball off for the opponent (note to 12.2)"),
    ("--hand-moves-after-foul", "hand_moves_after_foul",
     "hand moves after a foul, until the next stroke, are not item 17"),
)  # fmt: skip


def add_rules_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the rules engine, the same for every command that judges."""
    from rules.config import DISCIPLINES, RulesConfig

    defaults = RulesConfig()
    group = parser.add_argument_group("rules (docs/rules.md)")
    group.add_argument(
        "--discipline",
        choices=DISCIPLINES,
        default=defaults.discipline,
        help="free pyramid (any ball may be struck) or combined (only the coloured ball); default free",
    )
    for option, dest, kind, text in RULES_THRESHOLDS:
        group.add_argument(
            option,
            dest=dest,
            type=kind,
            default=getattr(defaults, dest),
            metavar=dest.rpartition("_")[2].upper(),  # MM, US, DEG: the unit
            help=text,
        )
    for option, dest, text in RULES_SWITCHES:
        group.add_argument(
            option,
            dest=dest,
            action=argparse.BooleanOptionalAction,
            default=getattr(defaults, dest),
            help=f"{text} (default: %(default)s)",
        )


def rules_config(args: argparse.Namespace) -> Any:
    """The :class:`rules.RulesConfig` the options of :func:`add_rules_arguments` describe."""
    from dataclasses import fields

    from rules.config import RulesConfig

    return RulesConfig(**{f.name: getattr(args, f.name) for f in fields(RulesConfig)})


MAX_TABLE_ID = 64


def table_id(text: str) -> str:
    """``--table`` / ``[table] id``: a name for this table, 1 to 64 printable characters."""
    if not text or len(text) > MAX_TABLE_ID or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"{text!r}: must be 1 to {MAX_TABLE_ID} printable characters (a name for this table)"
        )
    return text


table_id.takes_text = True  # type: ignore[attr-defined]  # the config file gives it a string


def add_signing_arguments(parser: argparse.ArgumentParser) -> None:
    """``--key-file``/``--require``: check signed frames (ICD §9) as a host holding the key."""
    group = parser.add_argument_group("signed frames (ICD §9, docs/security.md)")
    group.add_argument(
        "--key-file",
        metavar="FILE",
        help="the table's key (firmware-host keys new; mode 0600): signed frames are "
        "verified, forged, replayed and unsigned ones refused and counted",
    )
    group.add_argument(
        "--require",
        metavar="NODES",
        default="cue,keypad",
        help="with --key-file: the nodes that must sign, by name or as a mask (default cue,keypad)",
    )


def signing_check(args: argparse.Namespace, store: Any = None) -> Any:
    """The signature check ``--key-file`` asks for (None without one).

    ``replay``, ``events`` and ``decode`` pass no ``store``: the counters live
    for the one reading, so a capture read twice is not "replayed"; only the
    daemon keeps them across restarts.
    """
    if getattr(args, "key_file", None) is None:
        return None
    from protocol.signing import SignatureCheck

    from ..keys import KeyFileError, parse_require, read_key_file

    try:
        return SignatureCheck(read_key_file(args.key_file), parse_require(args.require), store)
    except KeyFileError as exc:
        raise UsageError(f"--key-file: {exc}") from None
