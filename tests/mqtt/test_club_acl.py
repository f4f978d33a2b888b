"""docs/club/mosquitto.acl on a real Mosquitto: each table its own topics, the club page commands.

Per-table users (named as the tables) from ``mosquitto_passwd``; with MQTT
3.1.1 a publish the ACL refuses is dropped by the broker, and a subscription
it refuses delivers nothing, so each case is checked by what arrives.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from club_util import wait_for
from outside_parts import require

from firmware_host.mqtt.broker import Mosquitto

ACL = Path(__file__).resolve().parents[2] / "docs" / "club" / "mosquitto.acl"
USERS = {"t1": "pw-t1", "t2": "pw-t2", "club": "pw-club", "scoreboard": "pw-board"}


@pytest.fixture
def secured(tmp_path):
    require("mosquitto")
    passwd = tmp_path / "passwd"
    for user, password in USERS.items():
        create = ["-c"] if not passwd.exists() else []
        subprocess.run(["mosquitto_passwd", "-b", *create, str(passwd), user, password], check=True)
    broker = Mosquitto(tmp_path / "broker", auth=(passwd, ACL))
    broker.start()
    yield broker
    broker.stop()


class Client:
    def __init__(self, broker: Mosquitto, user: str | None, password: str | None = None) -> None:
        self.got: list[tuple[str, bytes]] = []
        self.refused: int | None = None
        self.ready = False
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"acl-{user}")
        if user is not None:
            self.client.username_pw_set(user, password or USERS[user])
        self.client.on_connect = self._connected
        self.client.on_message = lambda c, u, m: self.got.append((m.topic, m.payload))
        self.acked: set[int] = set()  # subscriptions the broker has answered (even refused)
        self.client.on_subscribe = lambda c, u, mid, codes, props: self.acked.add(mid)
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        wait_for(lambda: self.ready or self.refused is not None, 10, f"{user} to connect")

    def _connected(self, client, userdata, flags, rc, props) -> None:
        if rc.is_failure:
            self.refused = rc.value
        else:
            self.ready = True

    def subscribe(self, topic: str) -> None:
        """Returns once the broker has answered: a message published before that is lost."""
        _, mid = self.client.subscribe(topic, qos=1)
        wait_for(lambda: mid in self.acked, 10, f"the broker to answer {topic}")

    def publish(self, topic: str, text: str) -> None:
        self.client.publish(topic, text, qos=1).wait_for_publish(5)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def test_each_table_writes_only_its_topics_and_reads_only_its_commands(secured):
    anonymous = Client(secured, None)
    assert anonymous.refused is not None and not anonymous.ready  # no user: refused
    wrong = Client(secured, "t1", "not-the-password")
    assert wrong.refused is not None
    t1, t2 = Client(secured, "t1"), Client(secured, "t2")
    club, board = Client(secured, "club"), Client(secured, "scoreboard")
    try:
        club.subscribe("club/#")
        board.subscribe("club/#")
        t1.subscribe("club/t1/command")
        t2.subscribe("club/t1/command")  # another table's commands: refused by the ACL
        t1.publish("club/t1/verdict", "t1's own verdict")
        t1.publish("club/t2/verdict", "forged as t2")  # dropped by the broker
        club.publish("club/t1/command", "from the club page")
        club.publish("club/t1/verdict", "forged by the page")  # dropped
        board.publish("club/t1/command", "from the scoreboard")  # dropped
        wait_for(lambda: club.got and t1.got, 10, "the allowed messages")
        time.sleep(1.0)  # and nothing refused arrives after them
        seen = {(topic, payload.decode()) for topic, payload in club.got}
        assert seen == {("club/t1/verdict", "t1's own verdict")}  # a command: its table's only
        assert {(t, p.decode()) for t, p in board.got} == seen
        assert [(t, p.decode()) for t, p in t1.got] == [("club/t1/command", "from the club page")]
        assert t2.got == []
    finally:
        for client in (t1, t2, club, board, anonymous, wrong):
            client.close()


def test_no_one_but_the_table_reads_its_referee_token(secured):
    """The read-only scoreboard (and the club page's own user) never read a command: it
    carries the referee's token, which works on the table's own page too (issue 23)."""
    t1, club, board = Client(secured, "t1"), Client(secured, "club"), Client(secured, "scoreboard")
    try:
        for reader in (club, board):
            reader.subscribe("club/#")
            reader.subscribe("club/+/command")
        t1.subscribe("club/t1/command")
        club.publish("club/t1/command", '{"id": "1", "token": "tok-table-1-secret"}')
        t1.publish("club/t1/command/result", '{"id": "1", "ok": true}')
        t1.publish("club/t1/verdict", "a verdict")
        wait_for(lambda: t1.got and len(board.got) >= 2 and len(club.got) >= 2, 10, "messages")
        time.sleep(1.0)  # and nothing refused arrives after them
        assert [p for _, p in t1.got] == [b'{"id": "1", "token": "tok-table-1-secret"}']
        for reader in (club, board):
            assert {t for t, _ in reader.got} == {"club/t1/command/result", "club/t1/verdict"}
            assert not any(b"tok-table-1-secret" in p for _, p in reader.got)
    finally:
        for client in (t1, club, board):
            client.close()
