"""The table's outbox on disk: what it publishes waits here until the broker has it.

SQLite from the standard library: one file, a transaction per batch, and a
daemon killed outright (SIGKILL, a power cut of the process) finds its queue
again at the next start.  Only the publisher thread touches it; the pipeline
thread never waits for the disk or the network.

The lamp waits for a line to be durable, not for SQLite: the pipeline thread
copies the line's rows into a journal beside the spool (``Journal``: a
memory map of a file, so the copy lands in the kernel's page cache with no
system call, and the thread never gives up the GIL it then has to wait to
get back); the publisher thread moves them into SQLite, noting the last
journal record it moved in the same transaction.  A SIGKILL loses nothing
the kernel holds: the next start moves what the journal has past that mark
(docs/club.md, "Durable before the lamp").

Bounded: past ``max_rows`` the oldest *droppable* messages (events, the lamp)
go first and are counted; verdicts and notices are never dropped.  A topic
that only matters at its latest value (state, health) keeps one queued
message: the newer replaces the older.  Each row's ``seq`` grows for the
file's life, and with the file's random ``epoch`` makes the message id.
"""

from __future__ import annotations

import binascii
import fcntl
import mmap
import os
import secrets
import sqlite3
import stat
import struct
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
JOURNAL_BYTES = 1 << 20  # lines not yet moved into SQLite (a verdict's rows: a few kB)

Batch = list[tuple[str, str, bool, int]]  # (topic, payload, retain, policy) each


class Journal:
    """Records appended to a memory-mapped file, each ``HEADER`` (body length, CRC-32 of
    number and body, number) then the body; the numbers grow.  An append is a memory copy:
    no system call, so a thread holding the GIL keeps it.  The file's blocks are allocated
    when it is made (``posix_fallocate``): a full disk is said then, never met by a write
    into the map (which would be a SIGBUS).  A record cut short by a SIGKILL fails its CRC
    and ends the reading; so does an older record from before the last ``clear``."""

    HEADER = struct.Struct("<IIQ")

    def __init__(self, path: Path, size: int = JOURNAL_BYTES) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotAFile(f"not a regular file ({path})")
            held = os.fstat(fd).st_size
            if held > size:  # (made with a bigger size) what it holds is read, then it shrinks
                with mmap.mmap(fd, held) as old:
                    self._records = _records(bytes(old))
                os.ftruncate(fd, size)
            os.posix_fallocate(fd, 0, size)
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        if held <= size:
            self._records = _records(self._map)
        for page in range(0, size, mmap.PAGESIZE):  # in memory now, not at a lamp's write
            self._map[page] = self._map[page]
        self.size = size
        self.at = 0  # where the next record goes
        self.last = max((n for n, _ in self._records), default=0)

    def records(self) -> list[tuple[int, bytes]]:
        """``(number, body)`` of each whole record the file held when opened, in order."""
        return self._records

    def append(self, number: int, body: bytes) -> bool:
        """False (nothing written) when it would not fit: the caller writes another way."""
        end = self.at + self.HEADER.size + len(body)
        if end > self.size:
            return False
        head = self.HEADER.pack(len(body), _crc(number, body), number)
        self._map[self.at + self.HEADER.size : end] = body
        self._map[self.at : self.at + self.HEADER.size] = head
        self.at, self.last = end, number
        return True

    def clear(self) -> None:
        """Every record is in SQLite: the next goes at the start (what follows is older)."""
        self._map[: self.HEADER.size] = bytes(self.HEADER.size)
        self.at = 0

    def close(self) -> None:
        self._map.close()


def _crc(number: int, body: bytes) -> int:
    return binascii.crc32(body, binascii.crc32(number.to_bytes(8, "little")))


def _records(data: bytes | mmap.mmap) -> list[tuple[int, bytes]]:
    found: list[tuple[int, bytes]] = []
    at, last, size = 0, 0, Journal.HEADER.size
    while at + size <= len(data):
        length, crc, number = Journal.HEADER.unpack_from(data, at)
        body = bytes(data[at + size : at + size + length])
        if length == 0 or len(body) < length or number <= last or _crc(number, body) != crc:
            break
        found.append((number, body))
        at, last = at + size + length, number
    return found


def _encode(batch: Batch) -> bytes:
    """Rows as one journal body: fields and rows split by NUL, which neither a topic nor a
    JSON text (``json.dumps`` escapes control characters) holds."""
    return "\0".join(
        f"{topic}\0{payload}\0{int(retain)}{policy}" for topic, payload, retain, policy in batch
    ).encode()


def _decode(body: bytes) -> Batch:
    fields = body.decode().split("\0")
    return [
        (fields[i], fields[i + 1], fields[i + 2][0] == "1", int(fields[i + 2][1:]))
        for i in range(0, len(fields), 3)
    ]


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
        # The lines a SIGKILL caught in the journal, not yet in SQLite: moved now, in order.
        self._journal_lock = threading.Lock()  # the pipeline thread's appends, short
        self._journal = Journal(self.path.with_name(self.path.name + ".journal"))
        moved = self._journaled = int(self._meta("journaled") or 0)
        caught = [(n, body) for n, body in self._journal.records() if n > moved]
        if caught:
            self.put([row for _, body in caught for row in _decode(body)], caught[-1][0])
        self._journal.clear()
        self._journal.last = self._journaled = max(moved, self._journal.last)
        self.recovered = len(caught)  # lines the last run journaled and did not move

    def journal(self, batch: Batch) -> int | None:
        """Rows made durable against the process's death with no system call (any thread):
        the journal record's number, for :meth:`put`'s ``journaled``; None when the journal
        is full (the caller puts them itself)."""
        body = _encode(batch)
        with self._journal_lock:
            number = self._journal.last + 1
            return number if self._journal.append(number, body) else None

    def _meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return found[0] if found else None

    def _set_meta(self, key: str, value: str) -> str:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        return value

    def put(self, batch: Batch, journaled: int = 0) -> None:
        """``(topic, payload, retain, policy)`` each, in order, in one transaction: all or none
        (a full disk raises ``sqlite3.Error`` with the queue as it was).  ``journaled``: the
        last journal record these rows include (noted in the same transaction; the journal
        is cleared once nothing newer was appended)."""
        if not batch:
            return
        with self._use:
            rows, dropped, last = self.rows, self.dropped, self.last
            db = self._db
            many = len(batch) > ROWS_PER_STATEMENT or journaled > self._journaled
            try:
                if many:
                    db.execute("BEGIN")
                for at in range(0, len(batch), ROWS_PER_STATEMENT):
                    self._insert(batch[at : at + ROWS_PER_STATEMENT])
                if journaled > self._journaled:
                    self._set_meta("journaled", str(journaled))
                if many:
                    db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self.rows, self.dropped, self.last = rows, dropped, last
                raise
            if journaled > self._journaled:
                self._journaled = journaled
                with self._journal_lock:
                    if self._journal.last == journaled:  # nothing newer: start it again
                        self._journal.clear()
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
        with self._journal_lock:
            self._journal.close()
        self._lock.close()
