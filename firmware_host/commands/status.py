"""Is the daemon beside the table healthy? Read its status file and say what is wrong.

The daemon writes the file once a second when started with run --status FILE
(the systemd unit from service install does).  status prints the link, each
node's last frame age, bad and lost frame rates, the clock mapping's counters,
the lamp link, the recording space and the last verdict, then every problem
in words.  Exit status 0 when healthy, 1 when degraded (a problem, or a file
older than 10 s: the daemon stopped or stalled), 2 when there is no readable
status file, so that a monitoring system can call it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..cli.args import UsageError
from ..jsonout import dumps

DEFAULT_STATE = "/var/lib/firmware-host"

EXAMPLES = """\
  firmware-host status
  firmware-host status /var/lib/firmware-host/status.json --json | jq .problems
"""


def default_path() -> str:
    """Where the unit's daemon writes it: systemd's $STATE_DIRECTORY, else /var/lib."""
    state = os.environ.get("STATE_DIRECTORY", DEFAULT_STATE).split(":")[0]
    return str(Path(state) / "status.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        default=default_path(),
        help="the daemon's status file (run --status FILE; default: $STATE_DIRECTORY/"
        f"status.json, else {DEFAULT_STATE}/status.json)",
    )
    parser.add_argument(
        "--json", action="store_true", help="the status with its problems as one JSON line"
    )


def run(args: argparse.Namespace) -> int:
    from ..files import NotAFile, read_small
    from ..service.health import MAX_STATUS_BYTES, problems, read_status
    from ..untrusted import Refused

    try:
        status = read_status(read_small(args.file, MAX_STATUS_BYTES))
    except (Refused, NotAFile) as exc:
        raise UsageError(f"{args.file}: not a status file ({exc})") from None
    except OSError as exc:
        raise UsageError(
            f"{args.file}: {exc.strerror or exc} (is the daemon running with --status?)"
        ) from None
    found = problems(status, time.time())
    if args.json:
        sys.stdout.write(dumps({**status, "problems": found}) + "\n")
    else:
        sys.stdout.write("".join(f"{line}\n" for line in describe(status, found)))
    return 1 if found else 0


def describe(status: dict[str, Any], found: list[str]) -> list[str]:
    """The status for a person at a terminal."""
    age = time.time() - float(status.get("written_unix", 0))
    state = "healthy" if not found else "DEGRADED"
    lines = [f"{state} (written {age:.1f} s ago by pid {status.get('pid')})"]
    lines.append(
        f"link: {status.get('link')} on {status.get('port')}, {status.get('link_losses', 0)} "
        f"losses, {status.get('hub_reboots', 0)} hub reboots"
    )
    for n, node in sorted((status.get("nodes") or {}).items(), key=lambda kv: int(kv[0])):
        heard = node.get("last_frame_age_s")
        when = "never heard" if heard is None else f"last frame {heard:.1f} s ago"
        absent = "" if node.get("present") else " (not in the hub's HELLO)"
        lines.append(f"node {n} ({node.get('name')}): {when}{absent}")
    frames = status.get("frames") or {}
    lines.append(
        f"frames: {frames.get('good', 0)} good, {frames.get('bad', 0)} bad "
        f"({frames.get('bad_per_min', 0)}/min), {frames.get('lost', 0)} lost "
        f"({frames.get('lost_per_min', 0)}/min)"
    )
    wire = status.get("wire") or {}
    if wire:
        key = f"key {wire['key']}" if wire.get("key") else "no key"
        refused = "; ".join(
            f"{node} " + ", ".join(f"{n} {why}" for why, n in reasons.items())
            for node, reasons in (wire.get("refused") or {}).items()
        )
        conflicts = ", ".join(f"{node} {n}" for node, n in (wire.get("conflicts") or {}).items())
        over_rate = ", ".join(f"{node} {n}" for node, n in (wire.get("over_rate") or {}).items())
        lines.append(
            f"signed frames ({key}): {wire.get('signed', 0)} signed, refused: "
            f"{refused or 'none'}; seq conflicts: {conflicts or 'none'}; "
            f"beyond a rate limit (a node flooding the link): {over_rate or 'none'}"
        )
    clock = status.get("clock") or {}
    lines.append(
        "clock mapping: "
        + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in clock.items() if k != "per_min")
    )
    lines.append(
        f"indicator link: {status.get('indicator')} "
        f"({status.get('indicator_failures', 0)} failures)"
    )
    rec = status.get("recording")
    if rec is None:
        lines.append("recording: off")
    elif "error" in rec:
        lines.append(f"recording: {rec['dir']}: {rec['error']}")
    else:
        lines.append(f"recording: {rec['dir']}, {rec['free_bytes'] / 2**30:.1f} GiB free")
    mqtt = status.get("mqtt")
    if mqtt:
        lines.append(
            f"club broker: {mqtt.get('broker')} "
            f"{'connected' if mqtt.get('connected') else 'not connected'}, "
            f"{mqtt.get('queued')} queued, {mqtt.get('sent')} sent, {mqtt.get('refused')} refused"
        )
    last = status.get("last_verdict")
    if last:
        rules = ", ".join(last.get("rules") or ()) or last.get("satisfied") or ""
        lines.append(f"last verdict: shot {last.get('shot')} {last.get('verdict')} {rules}")
    else:
        lines.append(f"last verdict: none yet ({status.get('verdicts', 0)} verdicts)")
    lines += [f"problem: {p}" for p in found]
    return lines
