"""The table's outbox on disk: what it publishes waits here until the broker has it.

SQLite from the standard library: one file, a transaction per batch, and a
daemon killed outright (SIGKILL, a power cut of the process) finds its queue
again at the next start.  Only the publisher thread touches it; the pipeline
thread never waits for the disk or the network.

Bounded: past ``max_rows`` the oldest *droppable* messages (events, the lamp)
go first and are counted; verdicts and notices are never dropped.  A topic
that only matters at its latest value (state, health) keeps one queued
message: the newer replaces the older.  Each row's ``seq`` grows for the
file's life, and with the file's random ``epoch`` makes the message id.
"""

from __future__ import annotations

import fcntl
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_ROWS = 100_000

KEEP, DROPPABLE, LATEST = 0, 1, 2  # how a message may go before the broker has it

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    retain INTEGER NOT NULL,
    policy INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_policy ON queue (policy, seq);
CREATE TABLE IF NOT EXISTS commands (id TEXT PRIMARY KEY, result TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Row:
    seq: int
    topic: str
    payload: str  # a JSON object without its msg_id (added as it is sent)
    retain: bool


class Spool:
    def __init__(self, path: str | Path, max_rows: int = DEFAULT_MAX_ROWS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_rows = max_rows
        # One daemon per spool: two would hand the same messages to the broker twice over.
        self._lock = open(self.path.with_name(self.path.name + ".lock"), "w")  # noqa: SIM115
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise OSError(f"{self.path}: in use by another daemon") from None
        # check_same_thread off: the pipeline thread writes a line (durable before the lamp),
        # the publisher thread the rest; one at a time (``_use``)
        self._use = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # survives the process's death
        self._db.executescript(SCHEMA)
        self.epoch = self._meta("epoch") or self._set_meta("epoch", secrets.token_hex(4))
        self.dropped = int(self._meta("dropped") or 0)
        self.rows = self._db.execute("SELECT count(*) FROM queue").fetchone()[0]
        self.last = self._db.execute("SELECT coalesce(max(seq), 0) FROM queue").fetchone()[0]

    def _meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else None

    def _set_meta(self, key: str, value: str) -> str:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        return value

    def put(self, batch: list[tuple[str, str, bool, int]]) -> None:
        """``(topic, payload, retain, policy)`` each, in order, in one transaction: all or none
        (a full disk raises ``sqlite3.Error`` with the queue as it was)."""
        with self._use:
            rows, dropped, last = self.rows, self.dropped, self.last
            db = self._db
            db.execute("BEGIN")
            try:
                self._insert(batch)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                self.rows, self.dropped, self.last = rows, dropped, last
                raise

    def _insert(self, batch: list[tuple[str, str, bool, int]]) -> None:
        db = self._db
        for topic, payload, retain, policy in batch:
            if policy == LATEST:
                self.rows -= db.execute(
                    "DELETE FROM queue WHERE topic = ? AND policy = ?", (topic, LATEST)
                ).rowcount
            self.last = db.execute(
                "INSERT INTO queue (topic, payload, retain, policy) VALUES (?, ?, ?, ?)",
                (topic, payload, int(retain), policy),
            ).lastrowid
            self.rows += 1
        over = self.rows - self.max_rows
        if over > 0:
            gone = db.execute(
                "DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE policy != ? "
                "ORDER BY seq LIMIT ?)",
                (KEEP, over),
            ).rowcount
            self.rows -= gone
            self.dropped += gone
            self._set_meta("dropped", str(self.dropped))

    def after(self, seq: int, limit: int) -> list[Row]:
        """The oldest ``limit`` messages after ``seq``, in order."""
        with self._use:
            found = self._db.execute(
                "SELECT seq, topic, payload, retain FROM queue WHERE seq > ? ORDER BY seq LIMIT ?",
                (seq, limit),
            ).fetchall()
        return [Row(s, t, p, bool(r)) for s, t, p, r in found]

    def done(self, seqs: list[int]) -> None:
        """The broker has these (PUBACK): they leave the queue."""
        with self._use:
            self.rows -= self._db.execute(
                f"DELETE FROM queue WHERE seq IN ({','.join('?' * len(seqs))})", seqs
            ).rowcount

    def message_id(self, seq: int) -> str:
        return f"{self.epoch}-{seq}"

    def command_result(self, command_id: str) -> str | None:
        """The outcome already given for a command id (a command acts once)."""
        with self._use:
            found = self._db.execute("SELECT result FROM commands WHERE id = ?", (command_id,))
            row = found.fetchone()
        return row[0] if row else None

    def remember_command(self, command_id: str, result: str) -> None:
        with self._use:
            self._db.execute("INSERT OR REPLACE INTO commands VALUES (?, ?)", (command_id, result))

    def close(self) -> None:
        with self._use:
            self._db.close()
        self._lock.close()
