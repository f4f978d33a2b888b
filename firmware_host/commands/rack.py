"""Rack positions for N white balls (item 8): full or incomplete pyramid.

Apex on the back mark, rows towards the back cushion, the base filled from
the middle outwards, the apex ball moved into the base where symmetry needs
it.  ``--json`` prints ``{"n": N, "balls": [[x_mm, y_mm], ...]}``.  Sizes
must be finite and positive and the full triangle must lie on the cloth.
"""

from __future__ import annotations

import argparse

from ..cli.args import finite_float

MAX_SIZE_MM = 100_000.0


EXAMPLES = """\
  firmware-host rack 15
  firmware-host rack 10 --json --length 2540 --width 1270
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from protocol.geometry import DEFAULT_TABLE
    from rules.rack import MAX_BALLS

    from ..cli.args import int_in

    size = finite_float(0, MAX_SIZE_MM, lo_open=True)
    parser.add_argument(
        "n", metavar="N", type=int_in(1, MAX_BALLS), help=f"white balls to rack, 1 to {MAX_BALLS}"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable positions")
    parser.add_argument(
        "--length", type=size, default=DEFAULT_TABLE.length_mm, help="table length, mm"
    )
    parser.add_argument(
        "--width", type=size, default=DEFAULT_TABLE.width_mm, help="table width, mm"
    )
    parser.add_argument(
        "--ball", type=size, default=DEFAULT_TABLE.ball_mm, help="ball diameter, mm"
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from firmware_host.cli.args import UsageError
    from firmware_host.jsonout import dumps
    from protocol.geometry import Table
    from rules.rack import rack_positions, rack_slots

    from ..cli.eventcheck import table_problem

    problem = table_problem(args.length, args.width, args.ball)
    if problem:
        raise UsageError(f"--length/--width/--ball: {problem}")
    table = Table(args.length, args.width, args.ball)
    balls = [[round(x, 3), round(y, 3)] for x, y in rack_positions(args.n, table)]
    if args.json:
        sys.stdout.write(dumps({"n": args.n, "balls": balls}) + "\n")
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
