"""The club's side of the broker: every table's messages, each once, and each table's latest.

A persistent MQTT session (``clean_session`` off, a fixed client id): while
this subscriber is away the broker keeps its QoS 1 messages, so a club page
or a scoreboard restarted, or a broker restarted, misses none.  Duplicates
(a table resends what the broker never acknowledged) are dropped by their
bytes: a resend is the same bytes (its ``msg_id`` and ``at_unix`` included),
while a message that only shares an id is another message.  Ids are
predictable (the spool's epoch, then a counter), so a client that published
ahead with the next ids would otherwise hide every real verdict.  Only the
kinds shown once each (verdicts, events, command results) are de-duplicated;
the others are a latest value, the same however often they come.

Anyone who can publish on a table's topics may be hostile (docs/security.md):
every message is checked before anything keeps it (:func:`checked`: its size,
JSON without NaN, its depth, the types of the fields the page reads); a bad
one is refused, counted and logged, and the network thread goes on.  The
thread is this module's own, so :meth:`Club.feed_alive` can tell a page's
health that the feed has stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt

from ..untrusted import NONE, ListOf, Refusals, Refused, Spec, check_shape, json_object
from .publisher import Tls, client_for
from .topics import PUBLISHED, ROOT, BrokerUrl, table_of, topic

log = logging.getLogger(__name__)

SEEN = 1024  # messages remembered per table for de-duplication (a resend is within 200)
#: kinds shown once each; the others are a latest value, the same however often it comes
ONCE = ("verdict", "event", "command/result")
MAX_MESSAGE = 65_536  # bytes: a table's largest message but an event (health) is about 3 kB
MAX_EVENT = 1 << 20  # bytes: a long shot's shot_end carries every ball's path (30 kB seen)
MAX_TABLES = 200  # tables one club page follows; past it, a new table's messages are refused
MAX_LINK = 2048  # characters of a table page's address
STOP_S = 5.0  # close() waits this long for the network thread
Listener = Callable[[str, str, dict[str, Any]], None]  # (table, kind, message)


VERDICT: Spec = {
    "kind": (str,),
    "verdict": (str,),
    "shot": (int, NONE),
    "rules": ListOf(str),
    "satisfied": (str, NONE),
    "reason": (str,),
    "t_us": (int,),
}
LAMP: Spec = {"state": (str,), "rule": (int, NONE), "t_us": (int, NONE)}
#: what the club page and a scoreboard read of each kind, with the types they read it as
SHAPES: dict[str, Spec] = {
    "verdict": VERDICT,
    "lamp": LAMP,
    "state": {
        "table": (str,),
        "match": {"frame": (int,), "to_play": (int,), "pocketed": (dict,)},
        "last_verdict": VERDICT,
        "lamp": LAMP,
        "web": (str, NONE),
    },
    "online": {"table": (str,), "online": (bool,), "web": (str, NONE), "at": (int, float)},
    "health": {
        "link": (str,),
        "verdicts": (int,),
        "problems": ListOf(str),
        "web": (str, NONE),
        "mqtt": {"connected": (bool,), "queued": (int,)},
    },
    "event": {"type": (str,), "t_us": (int,)},
    "command/result": {
        "id": (str, NONE),
        "ok": (bool,),
        "error": (str,),
        "key": (str,),
        "duplicate": (bool,),
    },
}
COMMON: Spec = {"msg_id": (str,), "at_unix": (int, float)}


def checked(kind: str, payload: bytes) -> dict[str, Any]:
    """A table's message of ``kind``, or :class:`Refused` saying what is wrong with it."""
    message = json_object(payload, MAX_EVENT if kind == "event" else MAX_MESSAGE)
    check_shape(message, COMMON)
    check_shape(message, SHAPES[kind])
    check_link(message.get("web"))
    return message


def check_link(web: str | None) -> None:
    """A table's page, which the club page makes a link of: ``http(s)://host...`` only (a
    ``javascript:`` one would run in the club page's origin when clicked)."""
    if web is None:
        return
    parts = urlsplit(web)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(web) > MAX_LINK:
        raise Refused('"web" must be an http:// or https:// address')
    if not web.isprintable() or " " in web:
        raise Refused('"web" must be an address without spaces or control characters')


class Club:
    """Subscribes to what tables publish (``club/+/verdict``, …, never a command);
    ``listener(table, kind, message)`` once per message."""

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
        self.refusals = Refusals(log, "club: a message")
        self.connected = threading.Event()  # set once the broker has the subscription
        self._seen: dict[str, OrderedDict[bytes, None]] = {}  # table -> digests, oldest first
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="club feed", daemon=True)
        self._closing = False
        self.feed_error: str | None = None  # why the network thread ended, if it did
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
        self.client.on_subscribe = self._on_subscribe

    @property
    def refused(self) -> dict[str, int]:
        """Messages refused so far, by reason."""
        return dict(self.refusals.counts)

    def start(self) -> Club:
        self.client.connect_async(self.url.host, self.url.port, keepalive=5)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing = True
        self.client.disconnect()
        self._thread.join(STOP_S)
        self.refusals.flush()

    def feed_alive(self) -> bool:
        """False once the network thread has ended without a close (the page says so)."""
        return self._thread.is_alive() or self._closing

    def _loop(self) -> None:
        """paho's network loop (its reconnections too) on a thread whose end is seen."""
        try:
            self.client.loop_forever(retry_first_connection=True)
        except Exception as exc:  # said and shown in the health: the feed is dead
            self.feed_error = f"{type(exc).__name__}: {exc}"
            log.exception("club: the broker feed stopped")
        finally:
            self.connected.clear()
            if not self._closing and self.feed_error is None:
                self.feed_error = "the network loop ended"

    def command(
        self, table: str, key: str, arg: int, token: str, command_id: str | None = None
    ) -> str:
        """Send a referee control to one table; its id (the result comes on command/result)."""
        command_id = command_id or uuid.uuid4().hex
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
            client.subscribe([(f"{ROOT}/+/{kind}", 1) for kind in PUBLISHED])

    def _on_subscribe(
        self, client: mqtt.Client, userdata: Any, mid: int, codes: list[Any], props: Any
    ) -> None:
        # Connected means subscribed: a message published between CONNACK and SUBACK
        # never reaches this client, so nobody may count on the feed before this.
        if not any(code.is_failure for code in codes):
            self.connected.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        where = table_of(msg.topic)
        if where is None or where[1] == "command":
            return
        try:
            message = checked(where[1], msg.payload)
        except Refused as exc:
            self.refusals.add(msg.topic, str(exc))
            return
        table, kind = where
        with self._lock:
            if table not in self.tables and len(self.tables) >= MAX_TABLES:
                self.refusals.add(msg.topic, f"a table more than the {MAX_TABLES} followed")
                return
            if kind in ONCE:
                seen = self._seen.setdefault(table, OrderedDict())
                digest = hashlib.blake2b(msg.payload, digest_size=16).digest()
                if digest in seen:
                    self.duplicates += 1
                    return
                seen[digest] = None
                if len(seen) > SEEN:
                    seen.popitem(last=False)
            message.setdefault("received_unix", time.time())
            self.tables.setdefault(table, {})[kind] = message
        try:
            self.listener(table, kind, message)
        except Exception:  # a bug for one message: said and counted, the feed goes on
            log.exception("club: %s not handled", msg.topic)
            self.refusals.counts["not handled (a bug: see the log)"] += 1
