"""The table's outbox on disk (firmware_host/mqtt/spool.py): order, bound, restart."""

from __future__ import annotations

import json

import pytest
from proc_util import forked

from firmware_host.mqtt.spool import DROPPABLE, KEEP, LATEST, Spool
from firmware_host.mqtt.topics import broker_url, table_of


def message(topic: str, n: int, policy: int) -> tuple[str, str, bool, int]:
    return (topic, json.dumps({"n": n}), False, policy)


def test_messages_come_out_in_order_and_leave_when_acknowledged(tmp_path):
    spool = Spool(tmp_path / "q.sqlite")
    spool.put([message("club/t/verdict", n, KEEP) for n in range(10)])
    rows = spool.after(0, 4)
    assert [json.loads(r.payload)["n"] for r in rows] == [0, 1, 2, 3]
    assert [json.loads(r.payload)["n"] for r in spool.after(rows[-1].seq, 100)] == list(
        range(4, 10)
    )
    spool.done([rows[0].seq, rows[1].seq])
    assert spool.rows == 8 and json.loads(spool.after(0, 1)[0].payload)["n"] == 2


def test_past_the_bound_the_oldest_events_go_counted_and_no_verdict_ever(tmp_path):
    spool = Spool(tmp_path / "q.sqlite", max_rows=100)
    for n in range(300):  # one verdict for every four events, in many batches
        policy = KEEP if n % 5 == 0 else DROPPABLE
        spool.put([message("club/t/verdict" if policy == KEEP else "club/t/event", n, policy)])
    left = [(r.topic, json.loads(r.payload)["n"]) for r in spool.after(0, 1000)]
    verdicts = [n for t, n in left if t.endswith("verdict")]
    events = [n for t, n in left if t.endswith("event")]
    assert verdicts == list(range(0, 300, 5))  # all 60, in order
    assert len(left) == spool.rows == 100 and spool.dropped == 240 - len(events)
    assert events == [n for n in range(300) if n % 5][-len(events) :]  # the newest kept
    assert [n for _, n in left] == sorted(n for _, n in left)


def test_a_latest_value_topic_keeps_one_queued_message(tmp_path):
    spool = Spool(tmp_path / "q.sqlite")
    spool.put([message("club/t/health", 1, LATEST), message("club/t/verdict", 2, KEEP)])
    spool.put([message("club/t/health", 3, LATEST)])
    assert [json.loads(r.payload)["n"] for r in spool.after(0, 10)] == [2, 3]


def test_a_restart_finds_the_queue_its_ids_and_its_counter(tmp_path):
    path = tmp_path / "q.sqlite"
    spool = Spool(path, max_rows=100)
    spool.put([message("club/t/event", n, DROPPABLE) for n in range(150)])
    first = spool.after(0, 1)[0].seq
    epoch, dropped = spool.epoch, spool.dropped
    spool.close()
    again = Spool(path, max_rows=100)
    assert (again.epoch, again.dropped, again.rows) == (epoch, dropped, 100) and dropped == 50
    assert again.after(0, 1)[0].seq == first
    again.put([message("club/t/verdict", 999, KEEP)])
    last = again.after(0, 1000)[-1]
    assert last.seq == 151 and again.message_id(last.seq) == f"{epoch}-{last.seq}"


def test_a_command_id_is_remembered_across_a_restart(tmp_path):
    spool = Spool(tmp_path / "q.sqlite")
    spool.remember_command("c1", '{"ok": true}')
    spool.close()
    assert Spool(tmp_path / "q.sqlite").command_result("c1") == '{"ok": true}'


@pytest.mark.parametrize(
    ("text", "host", "port", "tls", "user"),
    [
        ("mqtt://127.0.0.1", "127.0.0.1", 1883, False, None),
        ("mqtt://hall:1884", "hall", 1884, False, None),
        ("mqtts://hall", "hall", 8883, True, None),
        ("mqtt://t1:secret@hall:1", "hall", 1, False, "t1"),
    ],
)
def test_broker_urls(text, host, port, tls, user):
    url = broker_url(text)
    assert (url.host, url.port, url.tls, url.username) == (host, port, tls, user)
    assert "secret" not in str(url)


@pytest.mark.parametrize(
    "text", ["http://hall", "mqtt://", "mqtt://hall:0", "mqtt://hall:99999", "mqtt://h/x", "hall"]
)
def test_bad_broker_urls_say_why(text):
    with pytest.raises(ValueError, match="mqtt://HOST|the port must be"):
        broker_url(text)


def test_topics_name_the_table_and_the_kind():
    assert table_of("club/t-1/state") == ("t-1", "state")
    assert table_of("club/t-1/unknown") is None and table_of("elsewhere/t/state") is None


def test_a_batch_the_disk_refuses_leaves_the_queue_as_it_was(tmp_path):
    import sqlite3

    spool = Spool(tmp_path / "q.sqlite")
    spool.put([message("club/t/verdict", 1, KEEP)])
    with pytest.raises(sqlite3.Error):  # the second row cannot be written (as a full disk)
        spool.put([message("club/t/verdict", 2, KEEP), ("club/t/verdict", None, False, KEEP)])
    assert spool.rows == 1 and [json.loads(r.payload)["n"] for r in spool.after(0, 9)] == [1]
    assert spool.last == 1
    spool.put([message("club/t/verdict", 3, KEEP)])  # and it goes on afterwards
    assert [json.loads(r.payload)["n"] for r in spool.after(0, 9)] == [1, 3]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "--mqtt", "http://hall"], "--mqtt: 'http://hall': not mqtt://HOST[:PORT]"),
        (["run", "--mqtt", "mqtt://127.0.0.1:1"], "--mqtt needs --table ID"),
        (["run", "--mqtt", "mqtt://127.0.0.1:1", "--table", "a/b"], "must not contain /"),
        (["run", "--mqtt", "mqtt://h", "--table", "t", "--mqtt-ca", "/nonexistent"], "--mqtt-ca /nonexistent: cannot read it"),
        (["club-sim", "--prefix", "a+"], "--prefix 'a+1': a table id for MQTT must not contain +"),
        (["club", "--web", "8090"], "--mqtt URL: the broker is required"),
    ],
    ids=["scheme", "no-table", "slash", "no-ca", "prefix", "club-no-broker"],
)  # fmt: skip
def test_a_bad_club_option_is_one_line_and_status_2(args, says):
    import sys

    command = [sys.executable, "-m", "firmware_host", *args]
    done = forked.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr


def test_one_daemon_per_spool(tmp_path):
    first = Spool(tmp_path / "q.sqlite")
    with pytest.raises(OSError, match="in use by another daemon"):
        Spool(tmp_path / "q.sqlite")
    first.close()
    Spool(tmp_path / "q.sqlite").close()  # free again once the first has gone


def test_a_put_never_checkpoints_the_log_the_publisher_thread_does(tmp_path):
    """A verdict's put runs on the pipeline thread before the lamp: the commit that crossed
    SQLite's 1 000-page mark also copied the log into the file and synced both (tens of
    ms).  Puts only append to the log; ``checkpoint`` (the publisher thread's) copies it."""
    path = tmp_path / "q.sqlite"
    spool = Spool(path, max_rows=10_000)
    before = path.stat().st_size
    for n in range(1500):  # 6 MB: past 1 000 pages of 4 kB
        spool.put([("club/t1/event", json.dumps({"n": n, "pad": "x" * 4000}), False, DROPPABLE)])
    assert path.stat().st_size == before
    assert path.with_name("q.sqlite-wal").stat().st_size > 4_000_000
    spool.checkpoint()
    assert path.stat().st_size > 4_000_000
    spool.close()


KILLED_AFTER = """
import json, os, signal, sys
from firmware_host.mqtt.spool import Spool
spool = Spool(sys.argv[1])
batches = json.loads(sys.argv[2])
numbers = [spool.journal([tuple(row) for row in batch]) for batch in batches]
if sys.argv[3] == "moved":  # the first batch also reached SQLite, the journal not cleared
    spool.put([tuple(row) for row in batches[0]], numbers[0])
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("moved", ["journaled", "moved"])
def test_rows_journaled_before_a_sigkill_are_in_the_spool_once_at_the_next_start(tmp_path, moved):
    """The lamp's durable write is the journal's memory copy (no system call): a SIGKILL
    right after it loses nothing, and what SQLite already had is not queued twice."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    path = tmp_path / "q.sqlite"
    spool = Spool(path)
    spool.put([message("club/t/verdict", 0, KEEP)])
    spool.close()
    batches = [
        [message("club/t/event", 1, DROPPABLE), message("club/t/verdict", 2, KEEP)],
        [message("club/t/state", 3, LATEST), message("club/t/verdict", 4, KEEP)],
        [
            message("club/t/state", 5, LATEST),
            ("club/t/verdict", '{"n":6,"t":"a\\u0000b"}', True, 0),
        ],
    ]
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER, str(path), json.dumps(batches), moved],
        check=False,  # killed on purpose: its status is checked below
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    again = Spool(path)
    left = [(r.topic, json.loads(r.payload)["n"], r.retain) for r in again.after(0, 100)]
    assert left == [
        ("club/t/verdict", 0, False),
        ("club/t/event", 1, False),
        ("club/t/verdict", 2, False),
        ("club/t/verdict", 4, False),
        ("club/t/state", 5, False),  # the newer state replaced the older, as in SQLite
        ("club/t/verdict", 6, True),
    ]
    assert again.recovered == (3 if moved == "journaled" else 2)
    again.close()
    assert [r.topic for r in Spool(path).after(0, 100)] == [t for t, _, _ in left]  # once
