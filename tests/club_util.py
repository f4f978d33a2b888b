"""The club tests' real parts: a Mosquitto broker on a free port, a subscriber that de-dups."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
from outside_parts import require
from proc_util import forked

from firmware_host.mqtt.broker import Mosquitto
from firmware_host.mqtt.club import Club
from firmware_host.mqtt.publisher import Tls
from firmware_host.mqtt.topics import broker_url

ROOT = Path(__file__).resolve().parents[1]


def running_broker(tmp_path: Path) -> Iterator[Mosquitto]:
    """For a module's ``broker`` fixture: Mosquitto started in tmp_path, stopped after."""
    require("mosquitto")
    server = Mosquitto(tmp_path / "broker")
    server.start()
    yield server
    server.stop()


def as_printed(message: dict) -> dict:
    """A line as the daemon printed it: without what the broker's path added."""
    return {k: v for k, v in message.items() if k not in ("msg_id", "at_unix", "received_unix")}


class Subscriber:
    """Every table's messages once each, as a club page sees them (a persistent session)."""

    def __init__(
        self, url: str, client_id: str = "test-subscriber", tls: Tls | None = None
    ) -> None:
        self.messages: list[tuple[str, str, dict]] = []
        self.club = Club(broker_url(url), self._got, client_id=client_id, tls=tls).start()
        assert self.club.connected.wait(10), "the subscriber could not reach the broker"

    def _got(self, table: str, kind: str, message: dict) -> None:
        self.messages.append((table, kind, message))

    def lines(self, table: str) -> list[dict]:
        """The verdict topic's lines, as the daemon printed them (without the broker's keys)."""
        return [
            as_printed(m) for t, kind, m in list(self.messages) if t == table and kind == "verdict"
        ]

    def wait_lines(self, table: str, count: int, timeout_s: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        while len(self.lines(table)) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # and nothing more (a line twice) comes after
        return self.lines(table)

    def close(self) -> None:
        self.club.close()


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def command(cmd: str, *args: str) -> subprocess.Popen[str]:
    return forked.ForkedPopen(
        [sys.executable, "-m", "firmware_host", cmd, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def page_url(club: subprocess.Popen[str]) -> str:
    assert club.stderr is not None
    for line in club.stderr:
        if "club page: " in line:
            return line.split("club page: ")[1].split()[0]
    raise AssertionError(f"club exited with {club.wait()} before serving its page")


def publisher(broker) -> mqtt.Client:
    """A client on the broker as any table (or anyone, without an ACL) could be."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="hostile")
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    return client


def send(client: mqtt.Client, topic: str, payload: bytes | str, retain: bool = False) -> None:
    client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(30)


def good_state(frame: int) -> str:
    return json.dumps(
        {
            "msg_id": f"good-{frame}",
            "table": "t1",
            "match": {"frame": frame, "to_play": 1, "pocketed": {"1": 0, "2": 0}},
            "last_verdict": None,
            "lamp": None,
            "web": None,
        }
    )


def verdict_line(n: int) -> dict:
    return {
        "kind": "verdict", "shot": n, "verdict": "legal", "rules": [], "satisfied": "9",
        "reason": f"shot {n}", "t_us": 1000 * n,
    }  # fmt: skip
