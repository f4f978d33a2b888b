"""The club page in a real headless Chromium: 4 virtual tables on a real Mosquitto.

``club-sim`` plays the tables (each its own pty and daemon), ``club`` serves
the page; both are the commands a club runs.  The referee's controls go over
the broker to one table, which checks its own token and acts once per id.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from club_util import Subscriber, as_printed, command, page_url, running_broker, wait_for
from proc_util import doc_picture
from web_util import chromium

pytestmark = pytest.mark.wall_s(45)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
TABLES = ["sim1", "sim2", "sim3", "sim4"]


@pytest.fixture
def broker(tmp_path):
    yield from running_broker(tmp_path)


def referee_fouls(subscriber: Subscriber, table: str) -> list[dict]:
    """The table's referee_foul keypad events (a random match presses only accept and
    new_frame: these came from the controls)."""
    return [
        m for t, kind, m in list(subscriber.messages) if t == table and kind == "event"
        and m.get("type") == "keypad" and m.get("key") == "referee_foul"
    ]  # fmt: skip


def press(browser, table: str, key: str, arg: int, token: str) -> str:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    card = browser.find_element(By.ID, f"table-{table}")
    field = card.find_element(By.CLASS_NAME, "token")
    field.clear()
    field.send_keys(token)
    Select(card.find_element(By.CLASS_NAME, "key")).select_by_visible_text(key)
    number = card.find_element(By.CLASS_NAME, "arg")
    number.clear()
    number.send_keys(str(arg))
    result = card.find_element(By.CLASS_NAME, "result")
    card.find_element(By.TAG_NAME, "button").click()
    wait_for(lambda: result.text not in ("", "sent…"), 15, f"{table}'s answer")
    return result.text


def test_the_club_page_shows_every_table_and_sends_a_control_to_one(broker, tmp_path):
    from selenium.webdriver.common.by import By

    tokens_file = tmp_path / "tokens.json"
    subscriber = Subscriber(broker.url)
    sim = command(
        "club-sim", "--tables", "4", "--mqtt", broker.url, "--minutes", "1.5", "--speed", "3",
        "--tokens", str(tokens_file), "--spool-dir", str(tmp_path / "spools"), "--json",
    )  # fmt: skip
    club = command("club", "--mqtt", broker.url, "--web", "127.0.0.1:0")
    browser = None
    try:
        url = page_url(club)
        threading.Thread(target=lambda: list(club.stderr), daemon=True).start()
        browser = chromium()
        browser.set_window_size(1300, 900)
        browser.get(url)
        shown: dict[str, list[dict]] = {}

        def every_table_shows_a_verdict() -> bool:
            for table in TABLES:
                items = browser.find_elements(By.CSS_SELECTOR, f"#table-{table} li[data-line]")
                shown[table] = [json.loads(li.get_attribute("data-line")) for li in items]
            return all(shown.values())

        wait_for(every_table_shows_a_verdict, 120, "a verdict on every table's card")
        for table in TABLES:  # each card shows its own table's verdicts, none of another's
            published = subscriber.lines(table)
            assert all(as_printed(v) in published for v in shown[table]), table
            online = browser.find_element(By.CSS_SELECTOR, f"#table-{table} .online")
            assert online.text == "online"
        tokens = json.loads(tokens_file.read_text())

        # Without the token, or with another table's, the table refuses.
        assert press(browser, "sim2", "referee_foul", 16, "").startswith("refused")
        assert press(browser, "sim2", "referee_foul", 16, tokens["sim3"]).startswith("refused")
        # With its token, that table acts, once; no other table does.
        assert press(browser, "sim2", "referee_foul", 16, tokens["sim2"]) == "done: referee_foul"
        wait_for(lambda: referee_fouls(subscriber, "sim2"), 10, "sim2's keypad event")
        time.sleep(1.0)
        assert [(k["key"], k["arg"]) for k in referee_fouls(subscriber, "sim2")] == [
            ("referee_foul", 16)
        ]
        assert not any(referee_fouls(subscriber, t) for t in TABLES if t != "sim2")
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(doc_picture("club-page.png", tmp_path)))

        # A command delivered twice (the same id) is acted on once; the second says so.
        results = []
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="test-referee")
        client.on_message = lambda c, u, msg: results.append(json.loads(msg.payload))
        client.connect("127.0.0.1", broker.port)
        client.subscribe("club/sim3/command/result", qos=1)
        client.loop_start()
        time.sleep(0.5)
        twice = {"id": "twice-1", "token": tokens["sim3"], "key": "referee_foul", "arg": 15}
        for _ in range(2):
            client.publish("club/sim3/command", json.dumps(twice), qos=1).wait_for_publish(5)
        wait_for(lambda: len(results) >= 2, 10, "two results from sim3")
        wait_for(lambda: referee_fouls(subscriber, "sim3"), 20, "sim3's keypad event")
        time.sleep(1.0)  # a second keypad event, were there one, would be here by now
        client.loop_stop()
        assert [r["ok"] for r in results] == [True, True] and results[1]["duplicate"] is True
        assert [(k["key"], k["arg"]) for k in referee_fouls(subscriber, "sim3")] == [
            ("referee_foul", 15)
        ]
    finally:
        if browser is not None:
            browser.quit()
        club.terminate()
        club.wait(10)
        out, err = sim.communicate(timeout=120)
        subscriber.close()
    assert sim.returncode == 0, err
    summary = json.loads(out)
    assert sorted(summary["tables"]) == TABLES
