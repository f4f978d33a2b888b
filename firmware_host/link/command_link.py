"""Host → table commands with ACK and retry (ICD §5).

Two layers.  :class:`CommandScheduler` is the pure protocol: a stop-and-wait
queue that numbers host frames, encodes them through the catalogue, matches
ACKs and decides retransmissions; it reads no clock (every call carries
``now_ns``) and does no I/O, so tests drive it with a fake clock.
:class:`CommandLink` runs it on one thread against a byte writer (normally
:meth:`firmware_host.link.transport.SerialTransport.write`) and resolves a
``concurrent.futures.Future`` per command.

    link = CommandLink(transport.write, on_health=report)
    with link:
        link.set_indicator("foul", rule=15).result()   # or fire and forget
        decoder_sees_ack -> link.on_ack(acked_seq, acked_type, status)
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Self

from construct import ConstructError

from protocol.catalogue import BY_NAME, FLAG_RETRANSMISSION, HOST_NODE, INDICATOR_STATES
from protocol.framing import encode_frame

log = logging.getLogger("firmware_host.command_link")  # the name logs have always shown

ACK_TIMEOUT_NS = 50_000_000  # ICD §5: no ACK within 50 ms -> resend
MAX_RETRIES = 3  # ICD §5: at most 3 resends, then the link has failed


class Outcome(enum.Enum):
    ACKED = "acked"  # ACK with status 0: the hub applied it
    REFUSED = "refused"  # ACK with status != 0 (unknown type, bad argument, busy); not retried
    NO_ACK = "no ack"  # 1 + MAX_RETRIES transmissions, none acknowledged
    SUPERSEDED = "superseded"  # a newer SET_INDICATOR replaced it before it was sent
    CLOSED = "closed"  # the link closed before an outcome


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What became of one host command; every ``*_ns`` is host ``time.monotonic_ns()``."""

    name: str
    outcome: Outcome
    seq: int | None  # None if never sent
    transmissions: int
    status: int | None = None  # the ACK's status code
    submitted_ns: int = 0
    first_tx_ns: int | None = None
    done_ns: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.ACKED

    @property
    def round_trip_ns(self) -> int | None:
        """First transmission to its outcome: the link latency, retries included."""
        return None if self.first_tx_ns is None else self.done_ns - self.first_tx_ns


class LinkHealth(enum.Enum):
    UNKNOWN = "unknown"  # nothing acknowledged or failed yet
    OK = "ok"  # the last command was answered
    FAILED = "failed"  # the last command got no ACK after every retry


@dataclass(frozen=True, slots=True)
class HealthChange:
    """The indicator link changed health; reported once per change."""

    health: LinkHealth
    host_ns: int
    name: str  # the command whose outcome proved it
    seq: int | None


@dataclass
class CommandStats:
    submitted: int = 0
    transmissions: int = 0
    retransmissions: int = 0
    acked: int = 0
    refused: int = 0
    failed: int = 0
    superseded: int = 0
    stray_acks: int = 0  # ACKs for nothing in flight: duplicates of a resent frame, late ones


@dataclass
class _Command:
    name: str
    fields: dict[str, Any]
    handle: Any
    submitted_ns: int
    seq: int | None = None
    t_us: int = 0
    transmissions: int = 0
    first_tx_ns: int | None = None
    deadline_ns: int = 0
    signature: tuple[bytes, int] | None = None  # (key, sig_ctr): a resend carries the same


@dataclass
class Step:
    """What the scheduler wants done now: bytes to write, outcomes, health changes."""

    frames: list[bytes] = field(default_factory=list)
    done: list[tuple[Any, CommandResult]] = field(default_factory=list)
    health: list[HealthChange] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.frames or self.done or self.health)


class CommandScheduler:
    """Stop-and-wait ARQ of ICD §5 without clock or I/O.

    One command is in flight at a time, so a resend can never overtake a
    newer command (the lamp must end in the state last asked for).  ``seq``
    is taken when a command is first sent, so the host's own sequence has
    no gaps.  A resend is the same frame (same ``seq`` and ``t_us``) with
    flags bit 0 set.

    >>> s = CommandScheduler()
    >>> s.submit("PING", {"token": 7}, now_ns=0, handle="p")
    >>> len(s.poll(now_ns=0).frames), s.next_deadline_ns()
    (1, 50000000)
    >>> s.on_ack(0, 0x82, 0, now_ns=1_000_000)
    True
    >>> [(h, r.outcome.value) for h, r in s.poll(now_ns=1_000_000).done]
    [('p', 'acked')]
    """

    def __init__(
        self,
        *,
        first_seq: int = 0,
        ack_timeout_ns: int = ACK_TIMEOUT_NS,
        max_retries: int = MAX_RETRIES,
        sign: Callable[[], tuple[bytes, int] | None] | None = None,
    ) -> None:
        self.ack_timeout_ns = ack_timeout_ns
        #: (key, sig_ctr) for a new frame when the hub wants host frames signed (ICD §9)
        self.sign = sign
        self.max_retries = max_retries
        self.health = LinkHealth.UNKNOWN
        self.stats = CommandStats()
        self._next_seq = first_seq & 0xFFFF
        self._queue: collections.deque[_Command] = collections.deque()
        self._in_flight: _Command | None = None
        self._out = Step()

    def submit(self, name: str, fields: dict[str, Any], *, now_ns: int, handle: Any = None) -> None:
        """Queue a command; a queued SET_INDICATOR is replaced by a newer one."""
        spec = BY_NAME.get(name)
        if spec is None or not spec.to_table:
            raise ValueError(f"{name!r} is not a host command")
        try:
            spec.payload.build(fields)  # a bad argument fails here, in the caller
        except (ConstructError, KeyError) as exc:
            raise ValueError(f"{name}: bad argument {fields!r}: {exc}") from None
        self.stats.submitted += 1
        if name == "SET_INDICATOR":
            for old in [c for c in self._queue if c.name == name]:
                self._queue.remove(old)
                self.stats.superseded += 1
                self._finish(old, Outcome.SUPERSEDED, now_ns)
        self._queue.append(_Command(name, dict(fields), handle, now_ns))

    def on_ack(self, acked_seq: int, acked_type: int, status: int, *, now_ns: int) -> bool:
        """Match an ACK from the hub; False (counted) if it answers nothing in flight."""
        cmd = self._in_flight
        if cmd is None or cmd.seq != acked_seq or BY_NAME[cmd.name].msg_type != acked_type:
            self.stats.stray_acks += 1
            return False
        self._in_flight = None
        if status == 0:
            self.stats.acked += 1
            self._finish(cmd, Outcome.ACKED, now_ns, status)
        else:
            self.stats.refused += 1
            self._finish(cmd, Outcome.REFUSED, now_ns, status)
        self._set_health(LinkHealth.OK, cmd, now_ns)
        return True

    def poll(self, *, now_ns: int) -> Step:
        """Resend or give up on an overdue command, start the next one; drain the outbox."""
        cmd = self._in_flight
        if cmd is not None and now_ns >= cmd.deadline_ns:
            if cmd.transmissions <= self.max_retries:
                self.stats.retransmissions += 1
                self._transmit(cmd, now_ns)
            else:
                self._in_flight = None
                self.stats.failed += 1
                self._finish(cmd, Outcome.NO_ACK, now_ns)
                self._set_health(LinkHealth.FAILED, cmd, now_ns)
        if self._in_flight is None and self._queue:
            cmd = self._queue.popleft()
            cmd.seq = self._next_seq
            cmd.t_us = (now_ns // 1000) & 0xFFFFFFFF
            self._next_seq = (self._next_seq + 1) & 0xFFFF
            self._in_flight = cmd
            self._transmit(cmd, now_ns)
        out, self._out = self._out, Step()
        return out

    def next_deadline_ns(self) -> int | None:
        """When :meth:`poll` next has work without new input (None: only on input)."""
        if self._in_flight is not None:
            return self._in_flight.deadline_ns
        return None

    @property
    def idle(self) -> bool:
        return self._in_flight is None and not self._queue

    def close(self, *, now_ns: int) -> Step:
        """Give every unfinished command the CLOSED outcome."""
        pending = ([self._in_flight] if self._in_flight else []) + list(self._queue)
        self._in_flight = None
        self._queue.clear()
        for cmd in pending:
            self._finish(cmd, Outcome.CLOSED, now_ns)
        out, self._out = self._out, Step()
        return out

    def _transmit(self, cmd: _Command, now_ns: int) -> None:
        assert cmd.seq is not None
        flags = FLAG_RETRANSMISSION if cmd.transmissions else 0
        if not cmd.transmissions and self.sign is not None and cmd.name != "SETUP_SIGNING":
            cmd.signature = self.sign()  # SETUP_SIGNING goes before the hub has the key
        frame = encode_frame(
            cmd.name,
            node=HOST_NODE,
            seq=cmd.seq,
            t_us=cmd.t_us,
            flags=flags,
            sign_with=cmd.signature,
            **cmd.fields,
        )
        if cmd.first_tx_ns is None:
            cmd.first_tx_ns = now_ns
        cmd.transmissions += 1
        cmd.deadline_ns = now_ns + self.ack_timeout_ns
        self.stats.transmissions += 1
        self._out.frames.append(frame)

    def _finish(
        self, cmd: _Command, outcome: Outcome, now_ns: int, status: int | None = None
    ) -> None:
        result = CommandResult(
            cmd.name,
            outcome,
            cmd.seq,
            cmd.transmissions,
            status,
            cmd.submitted_ns,
            cmd.first_tx_ns,
            now_ns,
        )
        self._out.done.append((cmd.handle, result))

    def _set_health(self, health: LinkHealth, cmd: _Command, now_ns: int) -> None:
        if health is not self.health:
            self.health = health
            self._out.health.append(HealthChange(health, now_ns, cmd.name, cmd.seq))


def indicator_state(state: int | str) -> int:
    """An indicator state by ICD number or catalogue name (``"foul"`` → 3)."""
    if isinstance(state, str):
        try:
            return INDICATOR_STATES[state]
        except KeyError:
            raise ValueError(f"unknown indicator state {state!r}") from None
    return state


Writer = Callable[[bytes], object]
HealthCallback = Callable[[HealthChange], object]
SentCallback = Callable[[bytes, int], object]  # the frame's wire bytes, host_tx_ns


class CommandLink:
    """The scheduler on its own thread, against a real writer and real time.

    Threading: :meth:`submit` and :meth:`on_ack` may be called from any
    thread and never block on I/O.  One thread ("command link") writes the
    frames, resolves the futures and calls ``on_health`` and ``on_sent``
    (every frame written, resends too, with its host time: a recording's
    ``.tx`` side file); future callbacks run there too, so they must be quick.  ``write`` returning False (link
    down) costs the attempt like a frame lost on the wire.
    """

    def __init__(
        self,
        write: Writer,
        *,
        on_health: HealthCallback | None = None,
        ack_timeout_s: float = ACK_TIMEOUT_NS / 1e9,
        max_retries: int = MAX_RETRIES,
        first_seq: int = 0,
        on_sent: SentCallback | None = None,
        sign: Callable[[], tuple[bytes, int] | None] | None = None,
    ) -> None:
        self._write = write
        self._on_health = on_health
        self._on_sent = on_sent
        self._core = CommandScheduler(
            first_seq=first_seq,
            ack_timeout_ns=round(ack_timeout_s * 1e9),
            max_retries=max_retries,
            sign=sign,
        )
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None

    @property
    def health(self) -> LinkHealth:
        return self._core.health

    @property
    def stats(self) -> CommandStats:
        return self._core.stats

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="command link", daemon=True)
            self._thread.start()
        return self

    def close(self, timeout_s: float = 1.0) -> None:
        """Finish every pending command as CLOSED and stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
            if self._thread is None:  # never started: settle the futures here
                step = self._core.close(now_ns=time.monotonic_ns())
        if self._thread is None:
            self._act(step)
        else:
            self._thread.join(timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands ------------------------------------------------------------

    def submit(self, name: str, **fields: Any) -> Future[CommandResult]:
        """Queue any host command by catalogue name; the future holds its :class:`CommandResult`."""
        future: Future[CommandResult] = Future()
        future.set_running_or_notify_cancel()  # the wire cannot take a frame back
        with self._cond:
            now_ns = time.monotonic_ns()
            if self._closing:  # shutting down is not an error: the command just never goes out
                future.set_result(
                    CommandResult(name, Outcome.CLOSED, None, 0, None, now_ns, None, now_ns)
                )
                return future
            self._core.submit(name, fields, now_ns=now_ns, handle=future)
            self._cond.notify()
        return future

    def set_indicator(
        self, state: int | str, rule: int = 0, hold_ms: int = 0
    ) -> Future[CommandResult]:
        """Drive the table's lamp; ``hold_ms`` 0 keeps the state until changed."""
        return self.submit(
            "SET_INDICATOR", state=indicator_state(state), rule=rule, hold_ms=hold_ms
        )

    def request_hello(self) -> Future[CommandResult]:
        """Ask the hub to repeat HELLO (host attached mid-stream)."""
        return self.submit("REQUEST_HELLO")

    def ping(self, token: int) -> Future[CommandResult]:
        return self.submit("PING", token=token)

    def call(self, name: str, *, timeout_s: float = 1.0, **fields: Any) -> CommandResult:
        """Blocking convenience: submit and wait for the outcome.

        The outcome always comes within (1 + retries) × 50 ms of the frame
        being sent; ``timeout_s`` only guards against a stalled queue.
        """
        return self.submit(name, **fields).result(timeout_s)

    def on_ack(self, acked_seq: int, acked_type: int, status: int) -> bool:
        """Feed an ACK from the decoder; False if it answered nothing in flight."""
        with self._cond:
            matched = self._core.on_ack(acked_seq, acked_type, status, now_ns=time.monotonic_ns())
            if matched:
                self._cond.notify()
        return matched

    # -- thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closing:
                    step = self._core.close(now_ns=time.monotonic_ns())
                else:
                    step = self._core.poll(now_ns=time.monotonic_ns())
                    if not step:
                        deadline = self._core.next_deadline_ns()
                        wait_s = (
                            None if deadline is None else (deadline - time.monotonic_ns()) / 1e9
                        )
                        if wait_s is None or wait_s > 0:
                            self._cond.wait(wait_s)
                        continue
            self._act(step)
            if self._closing and self._core.idle:
                return

    def _act(self, step: Step) -> None:
        for frame in step.frames:
            # stamped before the write: an answer read on another thread is always later
            sent_ns = time.monotonic_ns()
            try:
                written = self._write(frame)
            except OSError as exc:  # a writer that raises instead of returning False
                log.warning("command frame not written: %s", exc)
                continue
            if written is not False and self._on_sent is not None:
                self._on_sent(frame, sent_ns)
        for change in step.health:
            if self._on_health is None:  # else the consumer tells it, once, in its own words
                level = logging.WARNING if change.health is LinkHealth.FAILED else logging.INFO
                log.log(
                    level,
                    "indicator link %s (%s seq %s)",
                    change.health.value,
                    change.name,
                    change.seq,
                )
                continue
            try:
                self._on_health(change)
            except Exception:  # the consumer's bug must not stop the retries
                log.exception("on_health callback raised")
        for future, result in step.done:
            if isinstance(future, Future):
                future.set_result(result)
