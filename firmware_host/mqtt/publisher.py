"""A table's publisher: the daemon's lines, events, lamp, state and health onto the broker.

paho-mqtt (the Eclipse project's client: MQTT 3.1.1 and 5, TLS, last will,
automatic reconnection, a network thread of its own via ``loop_start``)
rather than aiomqtt: the daemon is threads, not asyncio, and aiomqtt is a
wrapper around paho anyway.

The pipeline thread only puts a tuple on an in-memory queue and returns
(no encoding, no disk, no network).  The publisher thread moves the queue
into the on-disk :class:`~.spool.Spool`, hands the oldest messages to paho
while the broker is connected (a window of ``WINDOW``), and deletes each
from the spool when the broker acknowledges it (QoS 1 PUBACK).  paho resends
what was in flight after a reconnection; after a restart the spool resends
everything unacknowledged.  A message may so arrive twice, never out of
order and never not at all: consumers drop duplicates by ``msg_id``.
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from rules import indicator_for

from ..cliutil import dumps
from ..liveview import match_state
from .spool import DROPPABLE, KEEP, LATEST, Spool
from .topics import BrokerUrl, topic

log = logging.getLogger(__name__)

WINDOW = 200  # messages handed to paho and not yet acknowledged
TICK_S = 0.05  # the publisher thread looks at the spool at least this often
KEEPALIVE_S = 5  # a broker gone silent is noticed within 1.5 x this
RECONNECT_S = (0.2, 2.0)  # paho's reconnection back-off, first and longest
DISK_REPORT_S = 60.0  # a spool that cannot be written is logged at most this often
FLUSH_S = 5.0  # at a stop, the queue gets this long to reach a connected broker

Press = Callable[..., None]  # Daemon.press(key, arg, *, source)


@dataclass(frozen=True)
class Tls:
    """Files for ``mqtts://``: the CA that signed the broker, and this table's own cert and key."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None


def client_for(
    url: BrokerUrl,
    client_id: str,
    tls: Tls | None = None,
    password: str | None = None,
    persistent: bool = False,
) -> mqtt.Client:
    """A paho client for ``url``: credentials and TLS set, not connected (shared with the club).

    ``persistent``: the broker keeps this client's subscriptions and QoS 1
    messages while it is away (``clean_session`` off)."""
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2,
        client_id=client_id,
        protocol=mqtt.MQTTv311,
        clean_session=not persistent,
    )
    if url.username:
        client.username_pw_set(url.username, password or url.password)
    if url.tls or (tls and (tls.ca or tls.cert)):
        tls = tls or Tls()
        client.tls_set(ca_certs=tls.ca, certfile=tls.cert, keyfile=tls.key)
    client.reconnect_delay_set(*RECONNECT_S)
    return client


class TablePublisher:
    """One table on the broker (see the module's docstring)."""

    def __init__(
        self,
        url: BrokerUrl,
        table: str,
        spool: Spool,
        *,
        password: str | None = None,
        tls: Tls | None = None,
        web: str | None = None,
        press: Press | None = None,
        token: Any = None,
    ) -> None:
        self.url = url
        self.table = table
        self.spool = spool
        self.web = web  # this table's live page, for the club page's link
        self.press = press
        self.token = token  # a RefereeToken: .check(given) -> bool
        self.connected = False
        self.sent = 0  # messages the broker acknowledged
        self.queued = spool.rows
        self._last_verdict: dict[str, Any] | None = None  # these two: the pipeline thread's
        self._lamp: dict[str, Any] | None = None
        self._inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._inflight: dict[int, int] = {}  # paho mid -> spool seq
        self._handed = 0  # the last seq handed to paho
        self._unwritten: list[tuple[str, str, bool, int]] = []  # the disk refused them (full)
        self._disk_said = -DISK_REPORT_S
        self._closing = threading.Event()
        self._flush_s = FLUSH_S
        self._thread = threading.Thread(target=self._run, name="mqtt-publisher", daemon=True)
        self.client = client_for(url, f"table-{table}", tls, password)
        self.client.will_set(self._topic("online"), self._online(False), qos=1, retain=True)
        self.client.on_connect = self._connected
        self.client.on_disconnect = self._disconnected
        self.client.on_publish = lambda c, u, mid, rc, props: self._inbox.put(("ack", mid))
        self.client.on_message = lambda c, u, msg: self._inbox.put(("cmd", msg.payload))

    def _topic(self, kind: str) -> str:
        return topic(self.table, kind)

    def _online(self, online: bool) -> str:
        return dumps({"table": self.table, "online": online, "web": self.web, "at": time.time()})

    # -- the daemon's sinks (the pipeline thread: never waits) ---------------------------------

    def line(self, line: dict[str, Any], state: dict[str, Any] | None, lamp: Any) -> None:
        """A verdict or notice; the match state after it; the lamp it set (or None)."""
        self._inbox.put(("msg", "verdict", line, False, KEEP, time.time()))
        if lamp is not None:
            self.lamp(lamp.state, lamp.rule, line["t_us"])
        if line.get("kind") == "verdict":
            self._last_verdict = line
        retained = {
            "table": self.table,
            "match": state,
            "last_verdict": self._last_verdict,
            "lamp": self._lamp,
            "web": self.web,
            "t_us": line["t_us"],
        }
        self._inbox.put(("msg", "state", retained, True, LATEST, time.time()))

    def event(self, event: dict[str, Any]) -> None:
        self._inbox.put(("msg", "event", event, False, DROPPABLE, time.time()))
        if event["type"] == "shot_start":
            self.lamp("ready", None, event["t_us"])

    def lamp(self, state: str, rule: Any, t_us: int) -> None:
        self._lamp = {"state": state, "rule": rule, "t_us": t_us}
        self._inbox.put(("msg", "lamp", self._lamp, False, DROPPABLE, time.time()))

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        """The 1 Hz health (service/health.py), with this publisher's own counters."""
        health = {**status, "problems": problems, "web": self.web, "mqtt": self.counters()}
        self._inbox.put(("msg", "health", health, False, LATEST, time.time()))

    def counters(self) -> dict[str, Any]:
        return {
            "connected": self.connected,
            "queued": self.queued,
            "dropped_events": self.spool.dropped,
            "sent": self.sent,
        }

    def attach(self, daemon: Any) -> TablePublisher:
        """Publish what ``daemon`` decides: its lines with the match state and lamp, its events."""

        def line(line: dict[str, Any]) -> None:
            self.line(line, match_state(daemon.referee_state), indicator_for(line))

        daemon.also(line, self.event)
        return self

    # -- life ------------------------------------------------------------------------------

    def start(self) -> TablePublisher:
        """Connect in the background (a broker away now is retried) and start publishing."""
        self.client.connect_async(self.url.host, self.url.port, keepalive=KEEPALIVE_S)
        self.client.loop_start()
        self._thread.start()
        return self

    def close(self, flush_s: float = FLUSH_S) -> None:
        """Deliver what is queued while the broker is there (up to ``flush_s``), then go offline.

        What is still queued stays in the spool for the next start."""
        self._flush_s = flush_s
        self._closing.set()
        self._inbox.put(("wake",))
        self._thread.join(flush_s + 2)
        if self.connected:
            offline = self._online(False)
            self.client.publish(
                self._topic("online"), offline, qos=1, retain=True
            ).wait_for_publish(1)
            self.client.disconnect()
        self.client.loop_stop()
        self.spool.close()

    # -- paho's network thread ----------------------------------------------------------------

    def _connected(
        self, client: mqtt.Client, userdata: Any, flags: Any, rc: Any, props: Any
    ) -> None:
        if rc.is_failure:
            log.warning("broker %s refused the connection: %s", self.url, rc)
            return
        client.subscribe(self._topic("command"), qos=1)
        client.publish(self._topic("online"), self._online(True), qos=1, retain=True)
        self._inbox.put(("conn", True))

    def _disconnected(
        self, client: mqtt.Client, userdata: Any, flags: Any, rc: Any, props: Any
    ) -> None:
        self._inbox.put(("conn", False))

    # -- the publisher thread -----------------------------------------------------------------

    def _run(self) -> None:
        flush_until = None
        while True:
            items = []
            try:
                items.append(self._inbox.get(timeout=TICK_S))
                while True:
                    items.append(self._inbox.get_nowait())
            except queue.Empty:
                pass
            try:
                self._take(items)
                if self.connected:
                    self._send()
            except Exception:  # a bug here must not end the table's publishing for good
                log.exception("mqtt publisher: %d messages not handled", len(items))
            if self._closing.is_set():
                flush_until = flush_until or time.monotonic() + self._flush_s
                idle = not self.connected or self.spool.rows == 0
                if idle or time.monotonic() > flush_until:
                    break

    def _take(self, items: list[tuple[Any, ...]]) -> None:
        batch: list[tuple[str, str, bool, int]] = []
        acked: list[int] = []
        for item in items:
            what = item[0]
            if what == "msg":
                _, kind, obj, retain, policy, at = item
                payload = with_key(dumps(obj, separators=(",", ":")), "at_unix", f"{at:.6f}")
                batch.append((self._topic(kind), payload, retain, policy))
            elif what == "ack":
                seq = self._inflight.pop(item[1], None)
                if seq is not None:
                    acked.append(seq)
            elif what == "conn":
                if item[1] != self.connected:
                    log.info("broker %s %s", self.url, "connected" if item[1] else "lost")
                self.connected = item[1]
            elif what == "cmd":
                batch.extend(self._command(item[1]))
        self._unwritten += batch
        try:
            if acked:
                self.spool.done(acked)
                self.sent += len(acked)
            if self._unwritten:
                self.spool.put(self._unwritten)
                self._unwritten = []
        except sqlite3.Error as exc:  # a full disk: kept in memory, tried again each tick
            now = time.monotonic()
            if now - self._disk_said >= DISK_REPORT_S:
                self._disk_said = now
                log.error(
                    "mqtt spool %s: %s; %d messages held in memory",
                    self.spool.path,
                    exc,
                    len(self._unwritten),
                )
        self.queued = self.spool.rows + len(self._unwritten)

    def _send(self) -> None:
        free = WINDOW - len(self._inflight)
        if free <= 0 or self._handed >= self.spool.last:  # nothing new to hand over
            return
        for row in self.spool.after(self._handed, free):
            msg_id = self.spool.message_id(row.seq)
            payload = with_key(row.payload, "msg_id", f'"{msg_id}"')
            info = self.client.publish(row.topic, payload, qos=1, retain=row.retain)
            self._inflight[info.mid] = row.seq
            self._handed = row.seq

    def _command(self, payload: bytes) -> list[tuple[str, str, bool, int]]:
        """A referee's control: checked, acted on once per id, its outcome published."""
        result = self._act(payload)
        return [(self._topic("command/result"), dumps(result), False, KEEP)]

    def _act(self, payload: bytes) -> dict[str, Any]:
        try:
            command = json.loads(payload)
        except ValueError:
            return {"id": None, "ok": False, "error": "not a JSON object"}
        if not isinstance(command, dict) or not isinstance(command.get("id"), str):
            return {"id": None, "ok": False, "error": 'no "id" string'}
        command_id = command["id"]
        earlier = self.spool.command_result(command_id)
        if earlier is not None:  # delivered twice (QoS 1, a resend): acted on once
            return {**json.loads(earlier), "duplicate": True}
        refused = _bad_command(command)
        if refused is None and (self.token is None or not self.token.check(command.get("token"))):
            refused = "refused: wrong or missing referee token"
        if refused is not None:  # not remembered: the same id with the right token may follow
            return {"id": command_id, "ok": False, "error": refused}
        try:
            assert self.press is not None
            self.press(command["key"], command.get("arg", 0), source=f"mqtt command {command_id}")
            result = {"id": command_id, "ok": True, "key": command["key"]}
        except ValueError as exc:
            result = {"id": command_id, "ok": False, "error": str(exc)}
        try:
            self.spool.remember_command(command_id, dumps(result))
        except sqlite3.Error as exc:  # acted on; a second delivery would act again
            log.error("referee command %s: not remembered (%s)", command_id, exc)
        log.info("referee command %s over the broker: %s", command_id, result)
        return result


def with_key(obj: str, key: str, value: str) -> str:
    """One more key in a JSON object's text, without parsing it again.

    >>> with_key('{"a":1}', "b", "2"), with_key("{}", "b", "2")
    ('{"a":1,"b":2}', '{"b":2}')
    """
    body = obj[1:-1]
    return f'{{{body}{"," if body else ""}"{key}":{value}}}'


def _bad_command(command: dict[str, Any]) -> str | None:
    if not isinstance(command.get("key"), str):
        return 'no "key" string'
    if not isinstance(command.get("token", ""), str):
        return 'refused: "token" must be a string'
    arg = command.get("arg", 0)
    if isinstance(arg, bool) or not isinstance(arg, int):
        return '"arg" must be an integer'
    return None


def default_spool(table: str) -> Path:
    """Where a table keeps its queue when not told: the user's state directory."""
    import os

    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "firmware-host" / f"mqtt-{table}.sqlite"
