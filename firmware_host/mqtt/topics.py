"""The topic tree and the broker's address: one definition for tables, the club page and tests.

``club/<table>/`` then:

* ``verdict``: every EVENTS.md verdict and notice line, in order, QoS 1;
* ``event``: every ordered event (EVENTS.md), QoS 1;
* ``lamp``: the lamp as the table last set it, ``{"state", "rule", "t_us"}``;
* ``health``: the daemon's status (``firmware-host status``'s facts and problems), 1 Hz;
* ``state`` (retained): the match state, the last verdict, the lamp, the table's live page;
* ``online`` (retained): ``{"online": true, ...}`` on connect, ``false`` by the last will;
* ``command``: the referee's controls for this table (with the referee's token: only the
  club page writes it and only this table reads it); ``command/result``: their outcome.

Every payload is one JSON object with ``"msg_id"``: unique per message, the
same when a message is delivered twice (then the same bytes, by which consumers drop
duplicates: an id alone can be forged).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

ROOT = "club"
DEFAULT_PORT = 1883
DEFAULT_TLS_PORT = 8883
KINDS = ("verdict", "event", "lamp", "health", "state", "online", "command", "command/result")
#: what a reader (the club page, a scoreboard) subscribes to: never ``command``, which carries
#: the referee's token for its table alone (docs/club/mosquitto.acl lets no one else read it)
PUBLISHED = tuple(k for k in KINDS if k != "command")


def topic(table: str, kind: str) -> str:
    """``club/<table>/<kind>``.

    >>> topic("t1", "verdict")
    'club/t1/verdict'
    """
    assert kind in KINDS, kind
    return f"{ROOT}/{table}/{kind}"


def table_of(name: str) -> tuple[str, str] | None:
    """``(table, kind)`` of a topic of the tree, or None.

    >>> table_of("club/t1/command/result"), table_of("other/x")
    (('t1', 'command/result'), None)
    """
    parts = name.split("/", 2)
    if len(parts) != 3 or parts[0] != ROOT or parts[2] not in KINDS:
        return None
    return parts[1], parts[2]


def check_table(name: str) -> str:
    """A table id usable as one topic level: no ``/``, ``+`` or ``#``."""
    bad = [c for c in "/+#" if c in name]
    if bad:
        raise ValueError(f"{name!r}: a table id for MQTT must not contain {' '.join(bad)}")
    return name


@dataclass(frozen=True)
class BrokerUrl:
    """``mqtt://[USER[:PASSWORD]@]HOST[:PORT]`` or ``mqtts://`` (TLS)."""

    host: str
    port: int
    tls: bool = False
    username: str | None = None
    password: str | None = None

    def __str__(self) -> str:  # never the password: this is what logs show
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}"


def broker_url(text: str) -> BrokerUrl:
    """Parse ``--mqtt``; a ValueError names what is wrong.

    >>> broker_url("mqtt://127.0.0.1:1884")
    BrokerUrl(host='127.0.0.1', port=1884, tls=False, username=None, password=None)
    >>> broker_url("mqtts://hall").port
    8883
    """
    parts = urlsplit(text)
    if parts.scheme not in ("mqtt", "mqtts"):
        raise ValueError(f"{text!r}: not mqtt://HOST[:PORT] (or mqtts:// for TLS)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{text!r}: the port must be 1 to 65535") from None
    if not parts.hostname or parts.path not in ("", "/") or parts.query or port == 0:
        raise ValueError(f"{text!r}: not mqtt://HOST[:PORT] (or mqtts:// for TLS)")
    tls = parts.scheme == "mqtts"
    return BrokerUrl(
        parts.hostname,
        port or (DEFAULT_TLS_PORT if tls else DEFAULT_PORT),
        tls,
        unquote(parts.username) if parts.username else None,
        unquote(parts.password) if parts.password else None,
    )
