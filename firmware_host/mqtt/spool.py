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
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from ..files import NotAFile, is_regular

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
-- A latest-value message replaces the one still queued on its topic, in the same statement
-- as its insert: a verdict's write (on the pipeline thread, before the lamp) is then one
-- statement, and the thread gives up the GIL to SQLite once instead of once per row.
CREATE TRIGGER IF NOT EXISTS latest_replaces BEFORE INSERT ON queue WHEN NEW.policy = 2
BEGIN
    DELETE FROM queue WHERE topic = NEW.topic AND policy = 2;
END;
"""
ROWS_PER_STATEMENT = 500  # four parameters a row, well under SQLite's limit


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
        if self.path.exists() and not is_regular(self.path):
            raise NotAFile(f"not a regular file ({self.path})")
        # One daemon per spool: two would hand the same messages to the broker twice over.
        # The lock file is opened without following a symlink, and never truncated.
        lock = self.path.with_name(self.path.name + ".lock")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        self._lock = os.fdopen(os.open(lock, flags, 0o600), "r+b")
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
        # No checkpoint at a commit: the one that crossed 1 000 pages copied the log into the
        # file and synced both, on whichever thread committed (the pipeline thread, before a
        # lamp: tens of ms).  ``checkpoint`` does it, on its own connection, from the
        # publisher thread; SQLite's PASSIVE checkpoint never blocks a writer.
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer = sqlite3.connect(self.path, check_same_thread=False)
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
        if not batch:
            return
        with self._use:
            rows, dropped, last = self.rows, self.dropped, self.last
            db = self._db
            many = len(batch) > ROWS_PER_STATEMENT
            try:
                if many:
                    db.execute("BEGIN")
                for at in range(0, len(batch), ROWS_PER_STATEMENT):
                    self._insert(batch[at : at + ROWS_PER_STATEMENT])
                if many:
                    db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self.rows, self.dropped, self.last = rows, dropped, last
                raise
            self._trim()

    def _insert(self, batch: list[tuple[str, str, bool, int]]) -> None:
        """One statement (atomic on its own); the trigger replaces latest-value rows."""
        db = self._db
        changes = db.total_changes
        found = db.execute(
            "INSERT INTO queue (topic, payload, retain, policy) VALUES "
            + ",".join(["(?, ?, ?, ?)"] * len(batch)),
            [
                v
                for topic, payload, retain, policy in batch
                for v in (topic, payload, int(retain), policy)
            ],
        )
        replaced = db.total_changes - changes - len(batch)  # the trigger's deletes
        self.rows += len(batch) - replaced
        self.last = found.lastrowid

    def _trim(self) -> None:
        """Past ``max_rows``, the oldest droppable messages go, counted."""
        db = self._db
        over = self.rows - self.max_rows
        if over <= 0:
            return
        try:
            gone = db.execute(
                "DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE policy != ? "
                "ORDER BY seq LIMIT ?)",
                (KEEP, over),
            ).rowcount
            self.rows -= gone
            self.dropped += gone
            self._set_meta("dropped", str(self.dropped))
        except sqlite3.Error:  # (a full disk) what was put is kept; trimmed at the next put
            return

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

    def checkpoint(self) -> None:
        """The write-ahead log into the file (call it from one thread, every few seconds);
        the log would otherwise grow with every message ever queued."""
        self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        self._checkpointer.close()
        with self._use:
            self._db.close()
        self._lock.close()
