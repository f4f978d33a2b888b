"""A table's publisher: the daemon's lines, events, lamp, state and health onto the broker.

paho-mqtt (the Eclipse project's client: MQTT 3.1.1 and 5, TLS, last will,
automatic reconnection, a network thread of its own via ``loop_start``)
rather than aiomqtt: the daemon is threads, not asyncio, and aiomqtt is a
wrapper around paho anyway.

The pipeline thread puts an event on an in-memory outbox and returns (no
encoding, no disk, no network).  A verdict or notice line is different: it
is written to the on-disk :class:`~.spool.Spool` with everything queued
before it, in one SQLite transaction, before the daemon prints it or drives
the lamp (``attach`` hands it the line first), so that a line anyone saw is
published, also across a SIGKILL.  The publisher thread writes the rest of
the outbox to the spool, hands the oldest messages to paho
while the broker is connected (a window of ``WINDOW``), and deletes each
from the spool when the broker acknowledges it (QoS 1 PUBACK).  paho resends
what was in flight after a reconnection; after a restart the spool resends
everything unacknowledged.  A message may so arrive twice, never out of
order and never not at all: consumers drop duplicates by their bytes (a resend is
the same bytes; ``msg_id`` alone can be forged: docs/club.md).
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from rules import indicator_for

from ..jsonout import dumps, match_state
from ..live.listeners import Listener
from ..untrusted import Refusals, Refused, json_object
from .spool import DROPPABLE, KEEP, LATEST, Spool
from .topics import BrokerUrl, table_of, topic

log = logging.getLogger(__name__)

WINDOW = 200  # messages handed to paho and not yet acknowledged
TICK_S = 0.05  # the publisher thread looks at the spool at least this often
CHECKPOINT_S = 5.0  # the spool's write-ahead log is copied into its file this often
KEEPALIVE_S = 5  # a broker gone silent is noticed within 1.5 x this
RECONNECT_S = (0.2, 2.0)  # paho's reconnection back-off, first and longest
DISK_REPORT_S = 60.0  # a spool that cannot be written is logged at most this often
FLUSH_S = 5.0  # at a stop, the queue gets this long to reach a connected broker
MAX_COMMAND = 4096  # bytes: a referee's command is under 200
MAX_PACKET = 65_536  # bytes: the broker sends this table no bigger packet (MQTT 5)
REFUSED_RETRY_S = 30.0  # after the broker refused a message, it is tried again this late
STALL_S = 30.0  # connected, messages waiting, and none acknowledged this long: stalled
MAX_ID = 128  # characters of a command's id (a uuid is 32)

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
    v5: bool = False,
) -> mqtt.Client:
    """A paho client for ``url``: credentials and TLS set, not connected (shared with the club).

    ``persistent``: the broker keeps this client's subscriptions and QoS 1
    messages while it is away (``clean_session`` off; MQTT 3.1.1).  ``v5``: MQTT 5,
    whose PUBACK says when the broker refused a message (3.1.1's acknowledges a
    publish the ACL drops as if it were taken)."""
    if v5:
        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
        )
    else:
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
        if url.username is None:  # the documented ACL's user: the table's id (%u)
            url = replace(url, username=table)
        self.url = url
        self.table = table
        self.spool = spool
        self.web = web  # this table's live page, for the club page's link
        self.press = press
        self.token = token  # a RefereeToken: .check(given) -> bool
        self.connected = False
        self.sent = 0  # messages the broker acknowledged
        self.refused = 0  # messages the broker refused (MQTT 5: not authorized, ...)
        self.unusable = 0  # spool rows that could not be sent (a damaged file): dropped, said
        self.refused_why: str | None = None  # the last refusal, until a message is taken again
        self._retry_at = 0.0  # after a refusal, nothing is handed to paho before this
        self._progress_at = time.monotonic()  # the last acknowledgement, or when idle
        self.queued = spool.rows
        self._last_verdict: dict[str, Any] | None = None  # these two: the pipeline thread's
        self._lamp: dict[str, Any] | None = None
        self._health: tuple[dict[str, Any], list[str]] | None = None  # the last one given
        self._inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._inflight: dict[int, tuple[int, str]] = {}  # paho mid -> (spool seq, topic)
        self._handed = 0  # the last seq handed to paho
        # encoded, not yet in SQLite (journaled, or the disk refused them: full), in order
        self._unwritten: list[tuple[str, str, bool, int]] = []
        self._journaled = 0  # the last journal record on _unwritten
        self._outbox: list[tuple[str, Any, bool, int, float]] = []  # queued, not yet written
        self._outbox_lock = threading.Lock()
        self._writing = threading.Lock()  # one writer at a time: the spool keeps their order
        self._disk_said = -DISK_REPORT_S
        self._closing = threading.Event()
        self._flush_s = FLUSH_S
        self.refusals = Refusals(log, f"table {table}: a referee command")
        self._thread = threading.Thread(target=self._run, name="mqtt-publisher", daemon=True)
        self.client = client_for(url, f"table-{table}", tls, password, v5=True)
        self.client.will_set(self._topic("online"), self._online(False), qos=1, retain=True)
        self.client.on_connect = self._connected
        self.client.on_disconnect = self._disconnected
        self.client.on_publish = lambda c, u, mid, rc, props: self._inbox.put(("ack", mid, rc))
        self.client.on_message = lambda c, u, msg: self._inbox.put(("cmd", msg.payload))

    def _topic(self, kind: str) -> str:
        return topic(self.table, kind)

    def _online(self, online: bool) -> str:
        return dumps({"table": self.table, "online": online, "web": self.web, "at": time.time()})

    # -- the daemon's sinks (the pipeline thread) -------------------------------------------

    def line(self, line: dict[str, Any], state: dict[str, Any] | None, lamp: Any) -> None:
        """A verdict or notice; the match state after it; the lamp it set (or None).

        Durable before it returns: the daemon calls this before it prints the line or
        drives the lamp, so a line anyone saw is in the spool and reaches the broker,
        also across a SIGKILL.  It costs the pipeline thread a copy into the spool's
        journal (a memory map: the kernel has it once the process dies, and no system
        call gives up the GIL); the publisher thread moves it into SQLite.
        bench/durable_lamp.py measures it."""
        at = time.time()
        self._queue("verdict", line, False, KEEP, at, wake=False)  # written below, here
        if lamp is not None:
            self._lamp = {"state": lamp.state, "rule": lamp.rule, "t_us": line["t_us"]}
            self._queue("lamp", self._lamp, False, DROPPABLE, at, wake=False)
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
        self._queue("state", retained, True, LATEST, at, wake=False)
        self._durable()
        self._inbox.put(("wake",))  # the publisher thread moves it into SQLite and sends it

    def event(self, event: dict[str, Any]) -> None:
        self._queue("event", event, False, DROPPABLE, time.time())
        if event["type"] == "shot_start":
            self.lamp("ready", None, event["t_us"])

    def lamp(self, state: str, rule: Any, t_us: int) -> None:
        self._lamp = {"state": state, "rule": rule, "t_us": t_us}
        self._queue("lamp", self._lamp, False, DROPPABLE, time.time())

    def health(self, status: dict[str, Any], problems: list[str]) -> None:
        """The 1 Hz health (service/health.py), with this publisher's own counters."""
        self._health = status, problems
        health = {**status, "problems": problems, "web": self.web, "mqtt": self.counters()}
        self._queue("health", health, False, LATEST, time.time())

    def _queue(
        self, kind: str, obj: Any, retain: bool, policy: int, at: float, wake: bool = True
    ) -> None:
        """Into the outbox (in order), and wake the publisher thread to write it."""
        with self._outbox_lock:
            self._outbox.append((kind, obj, retain, policy, at))
        if wake:
            self._inbox.put(("wake",))

    def _rows(self) -> None:
        """The outbox encoded onto ``_unwritten`` (under ``_outbox_lock``): the order kept."""
        taken, self._outbox = self._outbox, []
        for kind, obj, retain, policy, at in taken:
            text = dumps(obj, separators=(",", ":")) if not isinstance(obj, str) else obj
            payload = with_key(text, "at_unix", f"{at:.6f}")
            self._unwritten.append((self._topic(kind), payload, retain, policy))

    def _durable(self) -> None:
        """The outbox durable now (the pipeline thread, before the lamp): into the spool's
        journal, no system call; SQLite's write is the publisher thread's (``_write``).  A
        full journal (SQLite refusing for a long while) is written the slow way, here."""
        with self._outbox_lock:
            fresh = len(self._unwritten)
            self._rows()
            number = self.spool.journal(self._unwritten[fresh:])
            if number is not None:
                self._journaled = number
                return
        self._write()

    def _write(self) -> None:
        """What is unwritten into the spool's SQLite, in order, in one transaction (either
        thread), with the last journal record it includes.

        A disk that refuses (full) keeps the messages in memory, tried again each tick."""
        with self._writing:
            with self._outbox_lock:
                self._rows()
                batch, journaled = list(self._unwritten), self._journaled
            if batch:
                try:
                    self.spool.put(batch, journaled)
                    with self._outbox_lock:  # what was journaled meanwhile stays
                        del self._unwritten[: len(batch)]
                except sqlite3.Error as exc:
                    now = time.monotonic()
                    if now - self._disk_said >= DISK_REPORT_S:
                        self._disk_said = now
                        log.error(
                            "mqtt spool %s: %s; %d messages held in memory",
                            self.spool.path,
                            exc,
                            len(batch),
                        )
            self.queued = self.spool.rows + len(self._unwritten)

    def counters(self) -> dict[str, Any]:
        waited = time.monotonic() - self._progress_at
        return {
            "connected": self.connected,
            "queued": self.queued,
            "dropped_events": self.spool.dropped,
            "sent": self.sent,
            "refused": self.refused,
            "refused_why": self.refused_why,
            "unusable": self.unusable,
            "stalled_s": round(waited, 1) if self.connected and waited > STALL_S else None,
            "running": self._thread.is_alive() or not self._thread.ident,
        }

    def facts(self) -> dict[str, Any]:
        """For the status file (``service/health.py``): this publisher's counters."""
        return {"mqtt": {"broker": str(self.url), **self.counters()}}

    def attach(self, daemon: Any) -> TablePublisher:
        """Publish what ``daemon`` decides: its lines with the match state and lamp, its events,
        its health; first, before it prints a line or drives the lamp (a line anyone saw is
        durable)."""
        daemon.listen(_Sink(self), first=True)
        return self

    # -- life ------------------------------------------------------------------------------

    def start(self) -> TablePublisher:
        """Connect in the background (a broker away now is retried) and start publishing."""
        connect = Properties(PacketTypes.CONNECT)
        connect.MaximumPacketSize = MAX_PACKET  # the broker sends nothing bigger (a command)
        self.client.connect_async(
            self.url.host,
            self.url.port,
            keepalive=KEEPALIVE_S,
            clean_start=True,
            properties=connect,
        )
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
        self._write()  # what came after the publisher thread stopped: kept for the next start
        self.spool.close()
        self.refusals.flush()

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
        checkpoint_at = time.monotonic() + CHECKPOINT_S
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
                if time.monotonic() >= checkpoint_at:  # here: never on the pipeline thread
                    checkpoint_at = time.monotonic() + CHECKPOINT_S
                    self.spool.checkpoint()
            except Exception:  # a bug here must not end the table's publishing for good
                log.exception("mqtt publisher: %d messages not handled", len(items))
            if self._closing.is_set():
                flush_until = flush_until or time.monotonic() + self._flush_s
                idle = not self.connected or (self.spool.rows == 0 and not self._outbox)
                if idle or time.monotonic() > flush_until:
                    break

    def _take(self, items: list[tuple[Any, ...]]) -> None:
        acked: list[int] = []
        commands: list[bytes] = []
        for item in items:
            what = item[0]
            if what == "ack":
                handed = self._inflight.pop(item[1], None)
                if handed is not None and item[2].is_failure:
                    self._refused(handed[1], item[2])
                elif handed is not None:
                    acked.append(handed[0])
            elif what == "conn":
                if item[1] != self.connected:
                    log.info("broker %s %s", self.url, "connected" if item[1] else "lost")
                self.connected = item[1]
                if self._health is not None:  # the queued one says "not connected": not so
                    self.health(*self._health)
            elif what == "cmd":
                commands.append(item[1])
        self._write()  # what the pipeline queued first: no message waits on a command
        for payload in commands:
            self._queue("command/result", self._command(payload), False, KEEP, time.time())
        self._write()
        if acked:
            self._progress_at = time.monotonic()
            self.refused_why = None
            try:
                self.spool.done(acked)
                self.sent += len(acked)
            except sqlite3.Error as exc:  # sent again after a restart: a duplicate, not a loss
                log.error("mqtt spool %s: %s", self.spool.path, exc)

    def _refused(self, where: str, reason: Any) -> None:
        """The broker refused a message (MQTT 5 PUBACK): it stays in the spool, and from
        ``REFUSED_RETRY_S`` on everything still queued is handed over again, in order."""
        self.refused += 1
        why = f"{reason} on {where}"
        if why != self.refused_why:
            log.error(
                "broker %s refused %s; kept in the spool and tried again every %g s. The "
                "documented ACL lets a table's user write only club/<user>/..., so the "
                "broker user must be the table id (docs/club.md)",
                self.url,
                why,
                REFUSED_RETRY_S,
            )
        self.refused_why = why
        self._retry_at = time.monotonic() + REFUSED_RETRY_S
        self._handed = 0  # the refused row and those after it go again at the retry

    def _send(self) -> None:
        if time.monotonic() < self._retry_at:
            return
        free = WINDOW - len(self._inflight)
        if free <= 0 or self._handed >= self.spool.last:  # nothing new to hand over
            if not self._inflight:
                self._progress_at = time.monotonic()  # idle is not stalled
            return
        for row in self.spool.after(self._handed, free):
            self._handed = row.seq
            msg_id = self.spool.message_id(row.seq)
            payload = with_key(row.payload, "msg_id", f'"{msg_id}"')
            try:
                if table_of(row.topic) is None or table_of(row.topic)[0] != self.table:
                    raise ValueError("not one of this table's topics")
                info = self.client.publish(row.topic, payload, qos=1, retain=row.retain)
            except ValueError as exc:  # a damaged spool file: that row goes, the rest go on
                log.error("mqtt spool %s: row %d (%r) dropped: %s", self.spool.path, row.seq,
                          row.topic[:80], exc)  # fmt: skip
                self.spool.done([row.seq])
                self.unusable += 1
                continue
            self._inflight[info.mid] = (row.seq, row.topic)

    def _command(self, payload: bytes) -> dict[str, Any]:
        """A referee's control: checked, acted on once per id; its outcome, to publish.

        Anyone who may write the command topic may be hostile: any payload
        costs only its own answer (the messages around it are already queued)."""
        try:
            result = self._act(payload)
        except Exception:  # a bug for one command: said, answered, and publishing goes on
            log.exception("referee command not handled")
            result = {"id": None, "ok": False, "error": "not handled (the table's log says why)"}
        if not result["ok"]:
            self.refusals.add("the command topic", str(result["error"]))
        return result

    def _act(self, payload: bytes) -> dict[str, Any]:
        try:
            command = json_object(payload, MAX_COMMAND)
        except Refused as exc:
            return {"id": None, "ok": False, "error": str(exc)}
        command_id = command.get("id")
        if not isinstance(command_id, str) or not 0 < len(command_id) <= MAX_ID:
            return {"id": None, "ok": False, "error": f'no "id" string (1 to {MAX_ID} characters)'}
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


class _Sink(Listener):
    """The publisher as one of the daemon's sinks (live/listeners.py).  Its ``close`` is
    run's, after the daemon's run (what is queued gets its moment to reach the broker)."""

    name = "broker"

    def __init__(self, publisher: TablePublisher) -> None:
        self.publisher = publisher

    def on_line(self, line: dict[str, Any], state: Any) -> None:
        self.publisher.line(line, match_state(state), indicator_for(line))

    def on_event(self, event: dict[str, Any]) -> None:
        self.publisher.event(event)

    def on_health(self, status: dict[str, Any], problems: list[str]) -> None:
        self.publisher.health(status, problems)
