"""Rack positions for N white balls (item 8): full or incomplete pyramid.

Apex on the back mark, rows towards the back cushion, the base filled from
the middle outwards, the apex ball moved into the base where symmetry needs
it.  ``--json`` prints ``{"n": N, "balls": [[x_mm, y_mm], ...]}``.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from protocol.geometry import DEFAULT_TABLE

    parser.add_argument("n", metavar="N", type=int, help="white balls to rack, 1 to 15")
    parser.add_argument("--json", action="store_true", help="machine-readable positions")
    parser.add_argument(
        "--length", type=float, default=DEFAULT_TABLE.length_mm, help="table length, mm"
    )
    parser.add_argument(
        "--width", type=float, default=DEFAULT_TABLE.width_mm, help="table width, mm"
    )
    parser.add_argument(
        "--ball", type=float, default=DEFAULT_TABLE.ball_mm, help="ball diameter, mm"
    )


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from firmware_host.cliutil import UsageError
    from protocol.geometry import Table
    from rules.rack import MAX_BALLS, rack_positions, rack_slots

    if not 1 <= args.n <= MAX_BALLS:
        raise UsageError(f"N: a rack holds 1 to {MAX_BALLS} balls, not {args.n}")
    if min(args.length, args.width, args.ball) <= 0 or args.ball * 5 > args.width:
        raise UsageError(
            "--length/--width/--ball: need positive sizes and a rack that fits across the table"
        )
    table = Table(args.length, args.width, args.ball)
    balls = [[round(x, 3), round(y, 3)] for x, y in rack_positions(args.n, table)]
    if args.json:
        sys.stdout.write(json.dumps({"n": args.n, "balls": balls}) + "\n")
        return 0
    sys.stdout.write(
        f"rack of {args.n} on a {table.length_mm:g} x {table.width_mm:g} mm table, ball {table.ball_mm:g} mm; "
        f"apex place on the back mark {table.back_mark}\n"
        "rows from the apex (top) towards the back cushion; o ball, . empty place of the full triangle\n\n"
    )
    slots = rack_slots(args.n)
    for row in range(5):
        marks = ["o" if (row, j) in slots else "." for j in range(row + 1)]
        sys.stdout.write(" " * (4 - row) + " ".join(marks) + "\n")
    sys.stdout.write("\n")
    for (row, j), (x, y) in zip(slots, balls):
        sys.stdout.write(f"row {row} place {j}: x = {x:8.1f}  y = {y:7.1f}\n")
    return 0
