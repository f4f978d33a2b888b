"""The club tests' real parts: a Mosquitto broker on a free port, a subscriber that de-dups."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from outside_parts import require

from firmware_host.mqtt.broker import Mosquitto
from firmware_host.mqtt.club import Club
from firmware_host.mqtt.publisher import Tls
from firmware_host.mqtt.topics import broker_url


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
