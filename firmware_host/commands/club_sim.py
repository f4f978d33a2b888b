"""Virtual tables against an MQTT broker on this machine: a club for the tests and the figures.

Each table is the built-in virtual table on a pseudo-terminal of its own
(the real wire protocol), refereed by a daemon that publishes as ``run
--mqtt`` does, to club/PREFIXn/... with its own queue on disk.  The tables
run as threads of this process, which shares the compiled kernels between
them; --processes spreads them over that many processes (docs/club.md says
why).  Without --mqtt a Mosquitto broker is started on a free 127.0.0.1 port
for the run (Debian's mosquitto must be installed).  Progress goes to stderr
every 2 s; at the end one line per table (verdicts decided, messages the
broker acknowledged, messages still queued, events dropped), or --json one
object.  Exit status 0 when every table's queue reached the broker.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..cli.args import UsageError, int_in
from ..cli.options import add_virtual_match, mqtt_url

EXAMPLES = """\
  firmware-host club-sim --tables 4 --minutes 1                # its own broker, 4 tables
  firmware-host club-sim --tables 64 --mqtt mqtt://127.0.0.1:1883 --processes 2 --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tables", type=int_in(1, 1000), default=4, metavar="N", help="how many (default 4)"
    )
    parser.add_argument(
        "--mqtt",
        type=mqtt_url,
        metavar="URL",
        help="the broker, mqtt://HOST[:PORT] (default: start mosquitto on a free local port)",
    )
    parser.add_argument(
        "--prefix", default="sim", metavar="NAME", help="tables are NAME1, NAME2, ... (default sim)"
    )
    parser.add_argument(
        "--first",
        type=int_in(1, 1_000_000),
        default=1,
        metavar="N",
        help="number from N (default 1)",
    )
    parser.add_argument(
        "--processes",
        type=int_in(1, 64),
        default=1,
        metavar="P",
        help="spread the tables over P processes (default 1)",
    )
    parser.add_argument(
        "--spool-dir", metavar="DIR", help="the tables' queues (default: a temporary directory)"
    )
    add_virtual_match(parser, seed_help="table n plays seed + n (default 0)")
    parser.add_argument(
        "--tokens",
        metavar="FILE",
        help="the tables' referee tokens, JSON {table: token}: a table not in FILE gets a new "
        "token of its own, written there (so that the club page's controls can be tried)",
    )
    parser.add_argument("--json", action="store_true", help="the summary as one JSON object")


def _say(text: str) -> None:
    sys.stderr.write(f"firmware-host club-sim: {text}\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from ..mqtt.topics import broker_url, check_table

    names = [f"{args.prefix}{args.first + i}" for i in range(args.tables)]
    try:
        check_table(names[0])
    except ValueError as exc:
        raise UsageError(f"--prefix {exc}") from None
    broker = None
    url = args.mqtt
    if url is None:
        from ..mqtt.broker import Mosquitto

        try:
            broker = Mosquitto()
            broker.start()
        except (FileNotFoundError, RuntimeError) as exc:
            raise UsageError(f"no --mqtt and no broker to start: {exc}") from None
        url = broker.url
        _say(f"broker: {url} (mosquitto, config {broker.config})")
    spool_dir = Path(args.spool_dir or tempfile.mkdtemp(prefix="club-sim-"))
    try:
        spool_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--spool-dir {spool_dir}: {exc.strerror or exc}") from None
    try:
        if args.processes > 1:
            summary = _spread(args, url, spool_dir)
        else:
            from ..mqtt import sim

            wires = sim.build(names, args.seed, args.minutes, args.sensors, _say)
            tokens = _tokens(names, args.tokens) if args.tokens else None
            summary = sim.play(
                broker_url(url),
                names,
                wires,
                speed=args.speed,
                spool_dir=spool_dir,
                say=_say,
                tokens=tokens,
            )
    finally:
        if broker is not None:
            broker.stop()
    summary["broker"] = url
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        for name, table in summary["tables"].items():
            sys.stdout.write(
                f"{name}: {table['verdicts']} verdicts, {table['sent']} messages acknowledged, "
                f"{table['queued']} queued, {table['dropped_events']} events dropped\n"
            )
        sys.stdout.write(
            f"{len(summary['tables'])} tables in {summary['wall_s']:.1f} s, "
            f"{summary['cpu_s']:.1f} s of CPU\n"
        )
    return 0 if all(t["queued"] == 0 for t in summary["tables"].values()) else 1


def _tokens(names: list[str], path: str) -> dict[str, Any]:
    """Each table's token: from ``path``, or new and written there for the tester to read."""
    from ..live.referee_token import RefereeToken

    try:
        known = json.loads(Path(path).read_text()) if os.path.exists(path) else {}
        tokens = {name: RefereeToken(known.get(name)) for name in names}
        if any(t.generated for t in tokens.values()):
            with open(path, "w", opener=lambda p, f: os.open(p, f, 0o600)) as out:
                json.dump({**known, **{n: t.value for n, t in tokens.items()}}, out)
    except (OSError, ValueError, AttributeError) as exc:
        raise UsageError(f"--tokens {path}: {getattr(exc, 'strerror', None) or exc}") from None
    return tokens


def _spread(args: argparse.Namespace, url: str, spool_dir: Path) -> dict[str, Any]:
    """Each process its share of the tables (``--processes 1`` each), their summaries merged."""
    share = -(-args.tables // args.processes)
    children = []
    if args.tokens:  # every token made here, once: the processes only read them
        names = [f"{args.prefix}{args.first + i}" for i in range(args.tables)]
        _tokens(names, args.tokens)
    for first in range(0, args.tables, share):
        count = min(share, args.tables - first)
        cmd = [sys.executable, "-m", "firmware_host", "club-sim", "--json", "--mqtt", url]
        cmd += ["--tables", str(count), "--first", str(args.first + first)]
        cmd += ["--prefix", args.prefix, "--spool-dir", str(spool_dir)]
        cmd += ["--seed", str(args.seed + first)]  # table n still plays seed + n
        cmd += ["--minutes", str(args.minutes), "--speed", str(args.speed)]
        cmd += ["--sensors", args.sensors]
        if args.tokens:
            cmd += ["--tokens", args.tokens]
        children.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    merged: dict[str, Any] = {"tables": {}, "wall_s": 0.0, "cpu_s": 0.0}
    try:
        for child in children:
            out, _ = child.communicate()
            part = json.loads(out)
            merged["tables"].update(part["tables"])
            merged["wall_s"] = max(merged["wall_s"], part["wall_s"])
            merged["cpu_s"] += part["cpu_s"]
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
                child.wait()
    return merged
