"""Referee a live table: read the hub, judge every shot, drive the foul lamp.

With no --port, the built-in virtual table is started on a pseudo-terminal
(a separate process speaking the real wire protocol) and the daemon
referees its match, then stops when the match is over.  Verdicts go to
stdout (a readable view, or --json lines of EVENTS.md), logs to stderr.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading

from ..cliutil import UsageError, add_port_arguments, add_rules_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_port_arguments(parser)
    parser.add_argument("--json", action="store_true", help="verdicts and notices as JSON Lines")
    parser.add_argument("--events", action="store_true", help="also show every ordered event")
    parser.add_argument(
        "--record", metavar="DIR", help="record the raw capture into DIR (rotating .bin)"
    )
    parser.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    add_rules_arguments(parser)
    virtual = parser.add_argument_group("built-in virtual table (no --port)")
    virtual.add_argument(
        "--scenario", metavar="NAME", help="a named scenario (see simulate --scenario list)"
    )
    virtual.add_argument("--seed", type=int, default=0, help="random match seed (default 0)")
    virtual.add_argument(
        "--minutes", type=float, default=2.0, help="random match length (default 2)"
    )
    virtual.add_argument(
        "--speed", type=float, default=10.0, help="play this many times real time (default 10)"
    )
    virtual.add_argument("--sensors", choices=("minimum", "middle", "full"), default="full")


def _virtual_table(args: argparse.Namespace) -> subprocess.Popen:
    cmd = [
        sys.executable,
        "-m",
        "firmware_host",
        "simulate",
        "--pty",
        "--wait-host",
        "--speed",
        str(args.speed),
        "--sensors",
        args.sensors,
        "--seed",
        str(args.seed),
        "--minutes",
        str(args.minutes),
    ]
    if args.scenario:
        cmd += ["--scenario", args.scenario]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def _check_port(url: str) -> None:
    """A typo in --port is a usage error; a cable pulled later is survived."""
    import os

    import serial

    if "://" not in url and not os.path.exists(url):
        raise UsageError(f"--port {url}: no such device")
    try:
        serial.serial_for_url(url, do_not_open=True)
    except (ValueError, serial.SerialException) as exc:
        raise UsageError(f"--port {url}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from rules import RulesConfig

    from ..daemon import Daemon
    from ..liveview import event_text, line_text
    from ..recorder import exit_on_signals

    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration {args.duration}: must be positive")
    if args.speed <= 0:
        raise UsageError(f"--speed {args.speed}: must be positive")

    out = sys.stdout

    def show(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    on_line = (
        (lambda line: show(json.dumps(line))) if args.json else (lambda line: show(line_text(line)))
    )
    on_event = None
    if args.events:
        on_event = (lambda e: show(json.dumps(e))) if args.json else (lambda e: show(event_text(e)))

    stop = threading.Event()
    table = None
    url = args.port
    if url is not None:
        _check_port(url)
    else:
        table = _virtual_table(args)
        url = table.stdout.readline().strip()
        if not url:
            raise UsageError("the virtual table did not start (see the message above)")

        def match_over() -> None:
            # the table says "match over" before it closes its pty (or just exits)
            for line in table.stdout:
                if line.strip() == "match over":
                    break
            stop.set()

        threading.Thread(target=match_over, daemon=True).start()
    if args.duration is not None:
        threading.Timer(args.duration, stop.set).start()

    daemon = Daemon(
        url,
        baud=args.baud,
        rules=RulesConfig(discipline=args.discipline),
        record_dir=args.record,
        on_event=on_event,
        on_line=on_line,
    )
    restore = exit_on_signals()
    try:
        stats = daemon.run(stop)
    except KeyboardInterrupt:
        stop.set()
        return 130
    finally:
        restore()
        stop.set()
        if table is not None:
            table.terminate()
            table.wait()
    sys.stderr.write(
        f"firmware-host run: {stats.verdicts} verdicts, {stats.events} events from {stats.bytes} bytes; "
        f"bad frames {stats.decoder.get('bad', {})}, lost {stats.decoder.get('lost', {})}, "
        f"link losses {stats.link_losses}, hub reboots {stats.reboots}\n"
    )
    return 0
