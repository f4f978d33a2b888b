"""Referee commands over a real Mosquitto: every malformed one answered, never acted on, and a
good one acted on once per id (tables/club page: tests/mqtt/test_club_page.py)."""

from __future__ import annotations

import json

import paho.mqtt.client as mqtt
import pytest
from club_util import as_printed, running_broker, wait_for

from firmware_host.live.referee_token import RefereeToken
from firmware_host.mqtt.publisher import TablePublisher
from firmware_host.mqtt.spool import Spool
from firmware_host.mqtt.topics import broker_url
from firmware_host.pipeline import check_press

TOKEN = "table-1-secret"


@pytest.fixture
def broker(tmp_path):
    yield from running_broker(tmp_path)


CASES = [
    (b"not json", "invalid JSON"),
    (b"[]", "not a JSON object"),
    (json.dumps({"id": 7, "token": TOKEN, "key": "accept"}), 'no "id" string'),
    (json.dumps({"id": "a", "token": TOKEN, "key": 5}), 'no "key" string'),
    (json.dumps({"id": "b", "token": TOKEN, "key": "accept", "arg": "x"}), '"arg" must be an integer'),
    (json.dumps({"id": "c", "token": 123, "key": "accept"}), 'refused: "token" must be a string'),
    (json.dumps({"id": "d", "key": "accept"}), "refused: wrong or missing referee token"),
    (json.dumps({"id": "e", "token": "not-the-token", "key": "accept"}), "refused: wrong or missing referee token"),
    (json.dumps({"id": "f", "token": TOKEN, "key": "nonsense"}), "key 'nonsense': not a keypad key"),
    (json.dumps({"id": "g", "token": TOKEN, "key": "referee_foul", "arg": 3}), "arg 3: a referee foul names item 15, 16 or 17"),
]  # fmt: skip


def test_bad_commands_are_answered_and_a_good_one_acts_once(broker, tmp_path):
    pressed: list[tuple[str, int, str]] = []

    def press(key: str, arg: int = 0, *, source: str = "page") -> None:  # as Daemon.press
        pressed.append((*check_press(key, arg), source))

    table = TablePublisher(
        broker_url(broker.url), "t1", Spool(tmp_path / "q.sqlite"), press=press,
        token=RefereeToken(TOKEN),
    ).start()  # fmt: skip
    results: list[dict] = []
    referee = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="referee")
    referee.on_message = lambda c, u, msg: results.append(as_printed(json.loads(msg.payload)))
    referee.connect("127.0.0.1", broker.port)
    referee.subscribe("club/t1/command/result", qos=1)
    referee.loop_start()
    try:
        wait_for(lambda: table.connected, 10, "the table to connect")
        good = json.dumps({"id": "ok-1", "token": TOKEN, "key": "new_frame"})
        for payload, _ in [*CASES, (good, None), (good, None)]:
            referee.publish("club/t1/command", payload, qos=1).wait_for_publish(5)
        wait_for(lambda: len(results) == len(CASES) + 2, 10, "every answer")
    finally:
        referee.loop_stop()
        table.close(1.0)
    for (_, says), result in zip(CASES, results, strict=False):
        assert result["ok"] is False and says in result["error"], result
    assert results[-2] == {"id": "ok-1", "ok": True, "key": "new_frame"}
    assert results[-1] == {**results[-2], "duplicate": True}
    assert pressed == [("new_frame", 0, "mqtt command ok-1")]  # logged with its id
