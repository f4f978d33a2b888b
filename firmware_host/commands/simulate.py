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
import math
import sys
from pathlib import Path
from typing import Any

from ..cli.args import SEED_MAX, UsageError
from ..cli.options import MAX_MINUTES, MAX_SPEED, MIN_SPEED, MINUTES, SEED, SENSOR_SETS, SPEED

EXAMPLES = """\
  firmware-host simulate --capture push.bin --scenario push --truth push.truth.jsonl
  firmware-host simulate --pty --speed 10 --loop     # a table for `run --port` or the HIL tests
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--pty", action="store_true", help="play on a pseudo-terminal, print its path")
    out.add_argument("--capture", metavar="OUT.bin", help="write the wire bytes to this file")
    match = parser.add_argument_group("match")
    match.add_argument(
        "--scenario", metavar="NAME", help="a named scenario (--scenario list: the names)"
    )
    match.add_argument(
        "--seed",
        type=SEED,
        default=0,
        help=f"random match and sensor noise seed, 0 to {SEED_MAX} (default 0)",
    )
    match.add_argument(
        "--minutes",
        type=MINUTES,
        default=10.0,
        help=f"length of a random match, above 0 and at most {MAX_MINUTES:g} (default 10)",
    )
    table = parser.add_argument_group("virtual table")
    table.add_argument("--sensors", choices=SENSOR_SETS, default="full", help="sensor set")
    table.add_argument(
        "--tracker-hz",
        type=float,
        choices=(120.0, 240.0),
        default=120.0,
        help="the tracker's frame rate",
    )
    table.add_argument(
        "--near-wrap", action="store_true", help="start every clock just below 2**32"
    )
    table.add_argument(
        "--clock-ppm",
        metavar="NODE=PPM",
        action="append",
        help="set a node's crystal error instead of drawing it within the datasheet's, e.g. "
        "3=140 for a cue clock out of spec (repeatable)",
    )
    table.add_argument(
        "--faults",
        metavar="SPEC",
        default="",
        help="faults at match seconds, e.g. garbage@30,drop@45,offline:4@60-75,reboot@120,"
        "stall@200-203,noack@0-600,random; an attacker: forge-cue@40, forge-keypad@50, "
        "replay-old@60; a tracker flooding the link: flood-tracker:5000@20-25 (default: none)",
    )
    table.add_argument(
        "--firmware",
        choices=("1.0", "1.1", "1.2"),
        default="1.0",
        help="the hub's firmware: 1.2 signs frames once a host sends SETUP_SIGNING (ICD §9); "
        "1.0 and 1.1 answer it 'unknown type' (default 1.0; --key-file means 1.2)",
    )
    table.add_argument(
        "--key-file",
        metavar="FILE",
        help="a firmware 1.2 table paired with this key before the match (ICD §9): the nodes "
        "in --require sign every frame (without it the table signs nothing until a host "
        "sends SETUP_SIGNING)",
    )
    table.add_argument(
        "--require",
        metavar="NODES",
        default="cue,keypad",
        help="with --key-file: the nodes that sign (default cue,keypad)",
    )
    live = parser.add_argument_group("--pty")
    live.add_argument(
        "--speed",
        type=SPEED,
        default=1.0,
        help=f"play this many times faster, {MIN_SPEED:g} to {MAX_SPEED:g} (default 1)",
    )
    live.add_argument(
        "--nvm",
        metavar="FILE",
        help="the nodes' non-volatile memory: their signing counters (firmware 1.2) survive "
        "a restart of the virtual table here, as a real node's do",
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
    files.add_argument(
        "--rx-times",
        metavar="OUT.rxt",
        help="host receive times beside the capture, as a host with a perfect clock would "
        "record them (recorder .rxt format)",
    )


def _match(args: argparse.Namespace) -> Any:
    from ..virtual_table import scenarios

    if args.scenario is None:
        return scenarios.random_match(seed=args.seed, minutes=args.minutes)
    if args.scenario not in scenarios.SCENARIOS:
        names = ", ".join(sorted(scenarios.SCENARIOS))
        raise UsageError(f"--scenario {args.scenario}: unknown (one of: {names})")
    return scenarios.SCENARIOS[args.scenario]()


def _within_match(plan: Any, duration_s: float) -> Any:
    """Fault times are match times: each must fall in the match; a window ends with it."""
    from dataclasses import replace

    def at(t: float, what: str) -> float:
        if not 0 <= t <= duration_s:
            raise UsageError(
                f"--faults: {what}@{t:g} is outside the match (0 to {duration_s:.0f} s)"
            )
        return t

    def window(start: float, end: float, what: str) -> tuple[float, float]:
        if math.isnan(end):
            raise UsageError(f"--faults: {what}@{start:g}-nan: the window has no end")
        return at(start, what), min(end, duration_s)

    return replace(
        plan,
        garbage_s=tuple(at(t, "garbage") for t in plan.garbage_s),
        dropped_bytes_s=tuple(at(t, "drop") for t in plan.dropped_bytes_s),
        reboots_s=tuple(at(t, "reboot") for t in plan.reboots_s),
        offline=tuple((n, *window(a, b, f"offline:{n}")) for n, a, b in plan.offline),
        stalls=tuple(window(a, b, "stall") for a, b in plan.stalls),
        no_ack=tuple(window(a, b, "noack") for a, b in plan.no_ack),
        attacks=tuple((kind, at(t, kind)) for kind, t in plan.attacks),
        floods=tuple((r, *window(a, b, "flood-tracker")) for r, a, b in plan.floods),
    )


def _signing(args: argparse.Namespace) -> Any:
    """The paired table's signing (``--key-file``), or None."""
    if args.key_file is None:
        return None
    from ..keys import KeyFileError, parse_require, read_key_file
    from ..virtual_table.signer import NodeSigning

    try:
        return NodeSigning(read_key_file(args.key_file), parse_require(args.require))
    except KeyFileError as exc:
        raise UsageError(f"--key-file: {exc}") from None


def _clock_ppm(items: list[str]) -> tuple[tuple[int, float], ...]:
    """``--clock-ppm NODE=PPM`` items; a node 0-7 and a finite ppm within +-1000."""
    out = []
    for item in items:
        node, _, ppm = item.partition("=")
        try:
            pair = (int(node), float(ppm))
        except ValueError:
            raise UsageError(f"--clock-ppm {item}: not NODE=PPM (e.g. 3=140)") from None
        if not (0 <= pair[0] <= 7 and math.isfinite(pair[1]) and abs(pair[1]) <= 1000):
            raise UsageError(f"--clock-ppm {item}: NODE is 0 to 7, PPM within +-1000")
        out.append(pair)
    return tuple(out)


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
    if args.pty and (args.truth or args.frame_truth or args.rx_times):
        raise UsageError("--truth/--frame-truth/--rx-times go with --capture, not --pty")
    try:
        plan = FaultPlan.parse(args.faults)
    except ValueError as exc:
        raise UsageError(f"--faults: {exc}") from None
    match = _match(args)
    cfg = HubConfig(
        sensors=args.sensors,
        tracker_hz=args.tracker_hz,
        near_wrap=args.near_wrap,
        clock_ppm=_clock_ppm(args.clock_ppm or []),
        seed=args.seed,
        faults=_within_match(plan, match.duration_s),
        firmware=(1, 2, 0)
        if args.key_file
        else tuple(int(p) for p in f"{args.firmware}.0".split(".")),
    )
    signing = _signing(args)
    if args.capture:
        from ..virtual_table.capture import simulate

        try:
            simulate(match, cfg, args.capture, args.truth, args.frame_truth, args.rx_times, signing)
        except OSError as exc:
            raise UsageError(f"{exc.filename}: {exc.strerror}") from None
        return 0

    from ..link.recorder import exit_on_signals
    from ..virtual_table.peer import VirtualHub

    def rewire(n: int) -> Any:
        # each loop is a hub reboot: new seed, new boot_id, every clock and counter reset
        return build_wire(match, replace(cfg, seed=cfg.seed + n, near_wrap=False), signing)

    def match_over() -> None:
        # Said while the hub still answers (peer.LINGER_S), so a host can hang up first
        # instead of seeing its port vanish or its last lamp command unanswered.
        sys.stdout.write("match over\n")
        sys.stdout.flush()

    hub = VirtualHub(
        build_wire(match, cfg, signing),
        speed=args.speed,
        rewire=rewire if args.loop else None,
        wait_for_host=args.wait_host,
        on_played=match_over,
        nvm=Path(args.nvm) if args.nvm else None,
    )
    restore = exit_on_signals()  # SIGTERM (from `run`, or a service manager): close the pty, 143
    sys.stdout.write(hub.device + "\n")
    sys.stdout.flush()
    try:
        hub.run()
    finally:
        hub.close()
        restore()
    return 0
