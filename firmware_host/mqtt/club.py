"""The club's side of the broker: every table's messages, each once, and each table's latest.

A persistent MQTT session (``clean_session`` off, a fixed client id): while
this subscriber is away the broker keeps its QoS 1 messages, so a club page
or a scoreboard restarted, or a broker restarted, misses none.  Duplicates
(a table resends what the broker never acknowledged) are dropped by
``msg_id``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt

from .publisher import Tls, client_for
from .topics import ROOT, BrokerUrl, table_of, topic

SEEN = 4096  # message ids remembered per table for de-duplication
Listener = Callable[[str, str, dict[str, Any]], None]  # (table, kind, message)


class Club:
    """Subscribes to ``club/#``; ``listener(table, kind, message)`` once per message id."""

    def __init__(
        self,
        url: BrokerUrl,
        listener: Listener,
        *,
        client_id: str | None = None,
        password: str | None = None,
        tls: Tls | None = None,
    ) -> None:
        self.url = url
        self.listener = listener
        self.tables: dict[str, dict[str, Any]] = {}  # table -> kind -> latest message
        self.duplicates = 0
        self.connected = threading.Event()
        self._seen: dict[str, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()
        self.client = client_for(
            url,
            client_id or f"club-{uuid.uuid4().hex[:8]}",
            tls,
            password,
            persistent=client_id is not None,
        )
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = lambda *a: self.connected.clear()
        self.client.on_message = self._on_message

    def start(self) -> Club:
        self.client.connect_async(self.url.host, self.url.port, keepalive=5)
        self.client.loop_start()
        return self

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def command(self, table: str, key: str, arg: int, token: str) -> str:
        """Send a referee control to one table; its id (the result comes on command/result)."""
        command_id = uuid.uuid4().hex
        payload = json.dumps({"id": command_id, "token": token, "key": key, "arg": arg})
        self.client.publish(topic(table, "command"), payload, qos=1)
        return command_id

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {t: dict(kinds) for t, kinds in self.tables.items()}

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, rc: Any, props: Any
    ) -> None:
        if not rc.is_failure:
            client.subscribe(f"{ROOT}/#", qos=1)
            self.connected.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        where = table_of(msg.topic)
        if where is None or where[1] == "command":
            return
        try:
            message = json.loads(msg.payload)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        table, kind = where
        msg_id = message.get("msg_id")
        with self._lock:
            seen = self._seen.setdefault(table, OrderedDict())
            if msg_id is not None:
                if msg_id in seen:
                    self.duplicates += 1
                    return
                seen[msg_id] = None
                if len(seen) > SEEN:
                    seen.popitem(last=False)
            message.setdefault("received_unix", time.time())
            self.tables.setdefault(table, {})[kind] = message
        self.listener(table, kind, message)
