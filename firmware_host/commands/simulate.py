"""A virtual table: on a pseudo-terminal in real time, or into a capture with its ground truth.

--pty prints the device path (the pty's slave side) on stdout, then plays the
match in real time (or --speed times faster) and answers host frames with ACK;
it exits when the match ends, or with --loop replays it after a hub reboot
(new boot_id, clocks and counters reset) until interrupted.  --capture writes
the raw bytes as fast as it can, with --truth (EVENTS.md events with true hub
times, true balls and the intended verdicts) and --frame-truth (per frame: the
exact hub time of its stamp, for the timing core's tests).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..cliutil import UsageError

SENSOR_SETS = ("minimum", "middle", "full")
HANG_UP_S = 0.5  # after "match over", before the pty closes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--pty", action="store_true", help="play on a pseudo-terminal, print its path")
    out.add_argument("--capture", metavar="OUT.bin", help="write the wire bytes to this file")
    match = parser.add_argument_group("match")
    match.add_argument(
        "--scenario", metavar="NAME", help="a named scenario (--scenario list: the names)"
    )
    match.add_argument(
        "--seed", type=int, default=0, help="random match and sensor noise seed (default 0)"
    )
    match.add_argument(
        "--minutes", type=float, default=10.0, help="length of a random match (default 10)"
    )
    table = parser.add_argument_group("virtual table")
    table.add_argument(
        "--sensors", choices=SENSOR_SETS, default="full", help="sensor set (default full)"
    )
    table.add_argument("--tracker-hz", type=float, choices=(120.0, 240.0), default=120.0)
    table.add_argument(
        "--near-wrap", action="store_true", help="start every clock just below 2**32"
    )
    table.add_argument(
        "--faults",
        metavar="SPEC",
        default="",
        help="e.g. garbage@30,drop@45,offline:4@60-75,reboot@120,stall@200-203,noack@0-600,random",
    )
    live = parser.add_argument_group("--pty")
    live.add_argument(
        "--speed", type=float, default=1.0, help="play this many times faster (default 1)"
    )
    live.add_argument(
        "--loop", action="store_true", help="replay after a hub reboot instead of exiting"
    )
    live.add_argument(
        "--wait-host",
        action="store_true",
        help="boot the table only once a host has sent its first frame",
    )
    files = parser.add_argument_group("--capture")
    files.add_argument("--truth", metavar="TRUTH.jsonl", help="ground truth: events and verdicts")
    files.add_argument(
        "--frame-truth", metavar="FRAMES.npz", help="per-frame exact hub times and clocks"
    )


def _match(args: argparse.Namespace) -> Any:
    from ..virtual_table import scenarios

    if args.scenario is None:
        if args.minutes <= 0:
            raise UsageError(f"--minutes {args.minutes}: must be positive")
        return scenarios.random_match(seed=args.seed, minutes=args.minutes)
    if args.scenario not in scenarios.SCENARIOS:
        names = ", ".join(sorted(scenarios.SCENARIOS))
        raise UsageError(f"--scenario {args.scenario}: unknown (one of: {names})")
    return scenarios.SCENARIOS[args.scenario]()


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..virtual_table.faults import FaultPlan
    from ..virtual_table.hub import HubConfig, build_wire

    if args.scenario == "list":
        from ..virtual_table import scenarios

        sys.stdout.write("".join(f"{name}\n" for name in sorted(scenarios.SCENARIOS)))
        return 0
    if not (args.pty or args.capture):
        raise UsageError("one of --pty or --capture is needed (or --scenario list)")
    if args.speed <= 0:
        raise UsageError(f"--speed {args.speed}: must be positive")
    if args.pty and (args.truth or args.frame_truth):
        raise UsageError("--truth/--frame-truth go with --capture, not --pty")
    try:
        plan = FaultPlan.parse(args.faults)
    except ValueError as exc:
        raise UsageError(f"--faults: {exc}") from None
    cfg = HubConfig(
        sensors=args.sensors,
        tracker_hz=args.tracker_hz,
        near_wrap=args.near_wrap,
        seed=args.seed,
        faults=plan,
    )
    match = _match(args)
    if args.capture:
        from ..virtual_table.capture import simulate

        try:
            simulate(match, cfg, args.capture, args.truth, args.frame_truth)
        except OSError as exc:
            raise UsageError(f"{exc.filename}: {exc.strerror}") from None
        return 0

    from ..virtual_table.peer import VirtualHub

    def rewire(n: int) -> Any:
        # each loop is a hub reboot: new seed, new boot_id, every clock and counter reset
        return build_wire(match, replace(cfg, seed=cfg.seed + n, near_wrap=False))

    hub = VirtualHub(
        build_wire(match, cfg),
        speed=args.speed,
        rewire=rewire if args.loop else None,
        wait_for_host=args.wait_host,
    )
    sys.stdout.write(hub.device + "\n")
    sys.stdout.flush()
    try:
        hub.run()
        # Say so while the pty is still open, so a host can hang up first
        # instead of seeing its port vanish.
        sys.stdout.write("match over\n")
        sys.stdout.flush()
        time.sleep(HANG_UP_S)
    finally:
        hub.close()
    return 0
