"""PING the table COUNT times and show the round-trip distribution (ICD 5).

Each PING carries its number as token and goes through the same ACK and
resend machinery as `send` and `run` (50 ms, at most 3 resends).  Prints one
line per PING, then how many were answered and the round trip's minimum,
median, 95th percentile and maximum.  Exit status 1 when any PING got no ACK.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..cli.args import finite_float, int_in
from ..cli.options import add_link_arguments
from ..linktools.sender import describe, open_link

EXAMPLES = """\
  firmware-host ping --port /dev/ttyUSB0 --count 100
  firmware-host ping --port socket://table.local:7000 --count 10 --interval 0.5
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count", type=int_in(1, 100_000), default=10, help="PINGs to send (default 10)"
    )
    parser.add_argument(
        "--interval",
        type=finite_float(0, 60),
        default=0.1,
        metavar="S",
        help="seconds between one answer and the next PING (default 0.1)",
    )
    add_link_arguments(parser)


def distribution(rtt_ms: list[float]) -> str:
    """``min/median/p95/max`` of round trips, in ms."""
    import numpy as np

    q = np.percentile(rtt_ms, [0, 50, 95, 100])
    return "round trip min/median/p95/max {:.2f}/{:.2f}/{:.2f}/{:.2f} ms".format(*q)


def run(args: argparse.Namespace) -> int:
    rtt_ms: list[float] = []
    try:
        with open_link(args) as link:
            for k in range(args.count):
                result = link.call("PING", {"token": k})
                sys.stdout.write(f"token {k}: {describe(result)}\n")
                sys.stdout.flush()
                if result.ok and result.round_trip_ns is not None:
                    rtt_ms.append(result.round_trip_ns / 1e6)
                if k + 1 < args.count:
                    time.sleep(args.interval)
    except OSError as exc:
        sys.stderr.write(f"firmware-host ping: --port {args.port}: {exc}\n")
        return 1
    lost = args.count - len(rtt_ms)
    summary = f"{args.count} PINGs, {len(rtt_ms)} answered, {lost} without ACK"
    sys.stdout.write(summary + (f"; {distribution(rtt_ms)}" if rtt_ms else "") + "\n")
    return 1 if lost else 0
