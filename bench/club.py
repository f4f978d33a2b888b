"""A club on one broker: N virtual tables at S x real time on one Mosquitto on this machine.

It starts Mosquitto on a free 127.0.0.1 port, subscribes to every table as the
club page does (a persistent session, duplicates dropped by msg_id), runs
``firmware-host club-sim`` against it, and reports:

* the verdict-to-subscriber latency, p50 / p99 / max: from the moment the
  table's daemon decided the verdict (``at_unix``, stamped in its pipeline
  thread) to its arrival at the subscriber, through the spool, paho and the
  broker;
* the broker's message rate: messages delivered to the subscriber per second
  of play (every message the tables published, each once);
* the CPU per table: club-sim's CPU time (all its processes, from the start of
  play: the matches are built before) over the play's wall time, per table,
  in % of one core (each table's virtual hub included: on a real table that
  is the hub's own hardware); and Mosquitto's own CPU;
* lost: verdicts the tables decided that never reached the subscriber (must be 0).

    python bench/club.py [--tables 64] [--speed 10] [--minutes 1] [--processes 2]
                         [--sensors full] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware_host.mqtt.broker import Mosquitto
from firmware_host.mqtt.club import Club
from firmware_host.mqtt.topics import broker_url

TICKS = os.sysconf("SC_CLK_TCK")


class Tally:
    """What the subscriber received: every message once, verdict latencies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.messages = 0
        self.verdicts: dict[str, int] = {}
        self.latency_ms: list[float] = []

    def __call__(self, table: str, kind: str, message: dict) -> None:
        with self.lock:
            self.messages += 1
            if kind == "verdict" and message.get("kind") == "verdict":
                self.verdicts[table] = self.verdicts.get(table, 0) + 1
                self.latency_ms.append((message["received_unix"] - message["at_unix"]) * 1e3)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=64)
    parser.add_argument("--speed", type=float, default=10.0)
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--sensors", choices=("minimum", "middle", "full"), default="full",
        help="the virtual tables' sensor set (full: a tracker at 120 Hz on every table)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-club-"))
    broker = Mosquitto(folder / "broker")
    broker.start()
    tally = Tally()
    club = Club(broker_url(broker.url), tally, client_id="bench-subscriber").start()
    assert club.connected.wait(10)
    cmd = [sys.executable, "-m", "firmware_host", "club-sim", "--json", "--mqtt", broker.url]
    cmd += ["--tables", str(args.tables), "--speed", str(args.speed)]
    cmd += ["--minutes", str(args.minutes), "--processes", str(args.processes)]
    cmd += ["--sensors", args.sensors]
    cmd += ["--spool-dir", str(folder / "spools")]
    print(f"bench/club.py: {' '.join(cmd[3:])}", file=sys.stderr)
    sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert sim.stdout is not None
    out = sim.stdout.read()
    status = sim.wait()
    summary = json.loads(out)
    decided = {t: s["verdicts"] for t, s in summary["tables"].items()}
    deadline = time.monotonic() + 30
    while sum(tally.verdicts.values()) < sum(decided.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    broker_cpu = cpu_s(broker.proc.pid) if broker.proc is not None else float("nan")
    club.close()
    broker.stop()
    lat = np.array(tally.latency_ms)
    wall = summary["wall_s"]
    sim_cpu = summary["cpu_s"]  # the tables' processes from their play's start (not the build)
    figures = {
        "tables": args.tables,
        "speed": args.speed,
        "minutes": args.minutes,
        "processes": args.processes,
        "cores": os.cpu_count(),
        "wall_s": wall,
        "verdicts_decided": sum(decided.values()),
        "verdicts_received": sum(tally.verdicts.values()),
        "lost": sum(max(n - tally.verdicts.get(t, 0), 0) for t, n in decided.items()),
        "duplicates_dropped": club.duplicates,
        "latency_ms": {
            "p50": round(float(np.median(lat)), 1),
            "p99": round(float(np.percentile(lat, 99)), 1),
            "max": round(float(lat.max()), 1),
        },
        "broker_msgs_per_s": round(tally.messages / wall),
        "cpu_per_table_pct": round(100 * sim_cpu / wall / args.tables, 1),
        "mosquitto_cpu_pct": round(100 * broker_cpu / wall, 1),
        "events_dropped": sum(s["dropped_events"] for s in summary["tables"].values()),
        "pipeline_late_or_refused": sum(
            sum(s["late_or_refused"].values()) for s in summary["tables"].values()
        ),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        f = figures
        print(
            f"{f['tables']} tables at {f['speed']:g}x ({f['minutes']:g}-minute matches, "
            f"{f['processes']} processes, {f['cores']} cores), {f['wall_s']:.0f} s of play\n"
            f"verdicts: {f['verdicts_decided']} decided, {f['verdicts_received']} received, "
            f"{f['lost']} lost ({f['duplicates_dropped']} duplicates dropped)\n"
            f"verdict → subscriber latency: p50 {f['latency_ms']['p50']} ms, "
            f"p99 {f['latency_ms']['p99']} ms, max {f['latency_ms']['max']} ms\n"
            f"broker: {f['broker_msgs_per_s']} messages/s, mosquitto {f['mosquitto_cpu_pct']}% "
            f"of a core\nCPU per table: {f['cpu_per_table_pct']}% of a core; "
            f"events dropped {f['events_dropped']}; data the pipelines refused as late "
            f"(overload) {f['pipeline_late_or_refused']}"
        )
    return 0 if status == 0 and figures["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
