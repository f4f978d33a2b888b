"""The host daemon: a live table's port → pipeline → verdicts → foul lamp.

One thread runs the pipeline (the transport's reader thread only queues
chunks), so the decoder, the timing core and the referee never need locks.
Everything from the outside world arrives here with its host receive time;
the cores below see only bytes and ``host_rx_ns``.  The pipeline sits behind
an *engine* (:mod:`.engine`): compiled in this thread, or, on a first start
while the numba kernels compile, interpreted in a worker process until the
compiled pipeline takes over (``docs/startup.md``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.catalogue import ACK_STATUS, HOST_NODE, KEYPAD_CODES, NODE_NAMES, NODE_STATUS_CODES
from protocol.framing import encode_frame
from protocol.signing import SETUP_SIGNING
from rules import MatchState, RulesConfig

from ..checkpoint import Checkpoints
from ..link.acks import AckSniffer
from ..link.command_link import MAX_RETRIES, CommandLink, HealthChange, LinkHealth
from ..link.recorder import CaptureRecorder
from ..link.transport import DEFAULT_BAUD, Chunk, LinkState, LinkStatus, SerialTransport
from ..pipeline import Pipeline, Step, check_press
from ..untrusted import log_text
from .engine import Compiled, Engine, Outcome
from .listeners import Callbacks, Lamp, Listener, Listeners, Recording
from .release_lag import SENSED, ReleaseLag

log = logging.getLogger("firmware_host.daemon")  # the name logs have always shown
#: The referee's presses: an audit record, told at INFO whatever the verbosity (``run`` sets
#: this logger's level) and never summed away by the rate limit (``extra=AUDIT``).
presses_log = logging.getLogger("firmware_host.presses")
AUDIT = {"audit": True}

TICK_S = 0.005  # how often a quiet link still releases settled events
HANG_UP_S = 2.0  # a closed port: how long "match over" may take to be read, with hang_up
CATCH_UP_BYTES = 65_536  # queued reads judged together at most (a pipeline catching up)
BAD_REPORT_S = 1.0  # bad frames are summed into one log line at most this often
LOG_LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)

Sink = Callable[[dict[str, Any]], None]


@dataclass
class DaemonStats:
    """What a session saw, for its closing summary."""

    chunks: int = 0
    bytes: int = 0
    events: int = 0
    verdicts: int = 0
    link_losses: int = 0
    reboots: int = 0  # the fusion's boot events after the first (the start, or a resume's)
    indicator_failures: int = 0
    record_lost: int = 0  # bytes read but not recorded (disk full, ...): logged, refereeing went on
    decoder: dict[str, Any] = field(default_factory=dict)
    release_lag: ReleaseLag = field(default_factory=ReleaseLag)  # compiled pipeline only
    losses: dict[str, int] = field(default_factory=dict)  # timing core and fusion (EventStream)
    sink_failures: dict[str, int] = field(default_factory=dict)  # sink name -> calls that raised


class Daemon:
    """Referee a table on ``url`` (any pyserial URL) until ``stop`` is set.

    What it decides goes to its sinks (:mod:`.listeners`): ``on_line`` and
    ``on_event`` here, the recorder with ``record_dir``, the lamp always, and
    any other with :meth:`listen` (the page, the broker, the status file).
    """

    def __init__(
        self,
        url: str,
        *,
        baud: int = DEFAULT_BAUD,
        rules: RulesConfig | None = None,
        record_dir: str | Path | None = None,
        record_part_bytes: int | None = None,
        on_event: Sink | None = None,
        on_line: Sink | None = None,
        engine: Engine | None = None,
        signing: Any = None,
    ) -> None:
        self.url = url
        #: the table key's check (protocol.signing.SignatureCheck): SETUP_SIGNING at connect
        self.signing = signing
        self.engine: Engine = engine or Compiled(rules, signing)
        self.record_dir = record_dir
        # Opened now, so an unusable directory is an OSError here, before the port is touched.
        # flush_bytes=1: every chunk goes to the kernel as it is read, so a daemon killed
        # outright (SIGKILL, a watchdog restart) loses none of what it judged, and the next
        # start resumes the match from all of it (service/resume.py)
        self.recorder = (
            CaptureRecorder(record_dir, max_bytes=record_part_bytes, flush_bytes=1, rx_times=True)
            if record_dir
            else None
        )
        #: the pipeline saved at frame starts, for a restart to resume from (checkpoint.py)
        self.checkpoints = Checkpoints(record_dir) if record_dir else None
        self.stats = DaemonStats()
        # Health, as the pipeline thread sees it (read by service/health.py)
        self.heard_ns: dict[int, int] = {}  # node -> host time of its last good frame or sync
        self.nodes_present: set[int] = set()  # the last HELLO's nodes_present
        # False from a host command never acknowledged (after its resends) to the next ACK
        self.indicator_ok = True
        self.indicator_problem: str | None = None  # why not, in the log's words
        self.last_verdict: dict[str, Any] | None = None
        self._state = MatchState()  # a cold start's, until its worker sends lines
        self._hello_wanted = threading.Event()
        self._presses: queue.SimpleQueue[tuple[str, int, int]] = queue.SimpleQueue()
        self._pressed = 0
        self.connected = threading.Event()  # set while the port is open
        # The hub's ACKs are taken from the bytes in the reader thread, as they arrive: the
        # pipeline thread can be busy for seconds (its first feed loads the numba kernels),
        # far beyond the command link's 50 ms a transmission (docs/transport.md).  An engine
        # that answers late (a cold start) has the same thread read who is talking too
        # (engine.FrameSniffer).
        self._chunks: queue.SimpleQueue[Chunk] = queue.SimpleQueue()
        self._sniffer = AckSniffer()
        self._sniffs = self.engine.sniffs_nodes
        self._transport = SerialTransport(
            url, baudrate=baud, on_status=self._link_status, on_chunk=self._receive
        )
        self._link = CommandLink(
            self._transport.write,
            on_health=self._health,
            on_sent=self._sent,
            sign=signing.sign_host if signing is not None else None,
        )
        #: the sinks, the lamp last (it acts on a line once the others have kept and shown it)
        self.listeners = Listeners(last=Lamp(self._link))
        if on_line is not None or on_event is not None:
            self.listeners.add(Callbacks(on_line, on_event))
        if self.recorder is not None:
            self.listeners.add(Recording(self.recorder))
        self._boot_id: int | None = None
        #: the pipeline has seen the table boot (a boot event, or a resumed recording's): the
        #: fusion's next boot event is a reboot
        self.booted = False
        # Set with `hang_up`: once stopped, the peer closing the port is its end, not a loss.
        # An event, not the loop's own flag: the pipeline thread may be busy when it comes.
        self._hang_up_after: threading.Event | None = None
        self._bad_seen = 0
        self._bad_now: dict[str, int] = {}
        self._bad_reported_at = 0.0
        self._losses_seen: dict[str, int] = {}
        self._losses_reported_at = 0.0

    @property
    def pipeline(self) -> Pipeline | None:
        """The compiled pipeline (None while a cold start still runs interpreted)."""
        return self.engine.pipeline

    @property
    def referee_state(self) -> Any:
        """The match state after the last line: the compiled pipeline's, or, while a cold
        start referees interpreted, the one its worker sent with its last lines (the start
        of a match before any)."""
        pipeline = self.pipeline
        return pipeline.referee.state if pipeline is not None else self._state

    def listen(self, listener: Listener, *, first: bool = False) -> None:
        """One more sink (the live page, the broker, the status file), told after the sinks
        already there (``first``: before them, as the broker's durable spool wants: a line
        is printed, and the lamp driven, only once it is kept); called before :meth:`run`."""
        self.listeners.add(listener, first=first)

    def run(
        self,
        stop: threading.Event,
        abandon: threading.Event | None = None,
        hang_up: bool = False,
    ) -> DaemonStats:
        """Referee until ``stop``; then judge what was read.

        ``abandon`` set (a signal): nothing the pipeline still holds is waited
        for.  ``hang_up``: the peer closes the port after the stop (the virtual
        table), so a pipeline still catching up (a cold start) finishes with
        the port closed, its last lamp commands unsent, instead of seeing the
        link lost.
        """
        abandoning = abandon is not None and abandon.is_set()
        finished = False
        self._hang_up_after = stop if hang_up else None
        try:
            with self._transport.open(), self._link.start():
                chunks = self._chunks
                while not stop.is_set():
                    self._turn(chunks)
                    # the status file's watchdog ping from here stops when the pipeline stalls
                    self.listeners.turn(time.monotonic_ns())
                # Nothing read is lost: judge what the port delivered before the stop.
                for _ in range(chunks.qsize()):
                    self._take(chunks.get_nowait())
                self._take_presses()
                abandoning = abandon is not None and abandon.is_set()
                if not (hang_up and self.engine.behind):
                    self._apply(self.engine.finish(abandoning))
                    finished = True
            if not finished:
                self._apply(self.engine.finish(abandoning))
        finally:
            self.listeners.close()
            if self.recorder is not None:
                self.stats.record_lost = self.recorder.bytes_lost
            self.stats.sink_failures = self.listeners.failures
        self.stats.decoder = self.engine.decoder_stats()
        self.stats.losses = self.engine.losses()
        return self.stats

    def press(self, key: str, arg: int = 0, *, source: str = "page") -> None:
        """A referee's key from outside the table (the page, the broker), as the keypad's.

        Any thread may call it; a bad key or arg is a ValueError here, at
        once.  The pipeline thread judges it on its next turn (within
        ``TICK_S``), exactly as a KEYPAD frame at that instant.  Each press
        taken is logged with who pressed it (``source``: the page's client
        address, the broker's command id).
        """
        key, arg = check_press(key, arg)
        presses_log.info("referee press from %s: %s %d", source, key, arg, extra=AUDIT)
        self._presses.put((key, arg, time.monotonic_ns()))  # its instant: when pressed

    def _take_presses(self) -> None:
        while not self._presses.empty():
            key, arg, now = self._presses.get_nowait()  # pressed at `now`, taken after the
            # bytes the pipeline has had: a replay presses it there (the .tx's offset)
            self._pressed += 1  # told as a KEYPAD frame the host sent: a recording keeps it
            frame = encode_frame(
                "KEYPAD",
                node=HOST_NODE,
                seq=self._pressed & 0xFFFF,
                t_us=now // 1000 & 0xFFFFFFFF,
                key=KEYPAD_CODES[key],
                arg=arg,
            )
            self.listeners.sent(frame, now)
            self._apply(self.engine.press(key, arg, now))

    def _sent(self, frame: bytes, host_tx_ns: int) -> None:
        """A frame the host sent, to the sinks (the recording) -- but never SETUP_SIGNING: the
        key is written nowhere (docs/security.md).  Its type is the encoded frame's third byte."""
        if len(frame) > 2 and frame[2] != SETUP_SIGNING:
            self.listeners.sent(frame, host_tx_ns)

    def _turn(self, chunks: queue.SimpleQueue) -> None:
        self._take_presses()
        if self._hello_wanted.is_set() and self.signing is not None:
            # the key first (ICD §9): the hub's answers and nodes sign from then on
            self._link.submit("SETUP_SIGNING", **self.signing.setup_fields())
        if self._hello_wanted.is_set():
            # Joined mid-stream (or the cable came back): ask who the table is.
            self._hello_wanted.clear()
            self._link.request_hello()
        try:
            chunk = chunks.get(timeout=TICK_S)
        except queue.Empty:
            self._apply(self.engine.idle(time.monotonic_ns()))
            return
        # Reads that queued up while the pipeline worked (a busy machine) are judged as one:
        # the pipeline's cost per call is paid once, so a backlog shrinks instead of growing.
        data, host_rx_ns = [self._record(chunk)], chunk.host_rx_ns
        size = len(chunk.data)
        while size < CATCH_UP_BYTES and not chunks.empty():
            chunk = chunks.get_nowait()
            data.append(self._record(chunk))
            size, host_rx_ns = size + len(chunk.data), chunk.host_rx_ns
        self._apply(self.engine.feed(b"".join(data), host_rx_ns))
        self._checkpoint()

    def _take(self, chunk: Chunk) -> None:
        self._apply(self.engine.feed(self._record(chunk), chunk.host_rx_ns))
        self._checkpoint()

    def _checkpoint(self) -> None:
        """After a feed: the compiled pipeline has had exactly the bytes recorded so far."""
        pipeline = self.pipeline
        if self.checkpoints is None or self.recorder is None or pipeline is None:
            return
        position = self.recorder.position()
        if position is not None:
            self.checkpoints.after_feed(pipeline, *position, self.recorder.bytes_written)

    def _record(self, chunk: Chunk) -> bytes:
        """Count a read and tell the sinks as it was read (the recording: its own host time
        in the .rxt), before it is judged."""
        self.stats.chunks += 1
        self.stats.bytes += len(chunk.data)
        self.listeners.read(chunk.data, chunk.host_rx_ns)
        return chunk.data

    def _receive(self, chunk: Chunk) -> None:
        """The reader thread: the hub's ACKs to the command link at once (and, with an
        engine that answers late, the nodes heard, at the read's own time), then the queue."""
        acks = self._sniffer.feed(chunk.data)
        if acks:
            self._acks(acks)
        if self._sniffs:
            sniffed = self.engine.sniff(chunk.data)
            self.heard_ns.update(dict.fromkeys(sniffed.nodes, chunk.host_rx_ns))
        self._chunks.put(chunk)

    def _apply(self, outcomes: Iterable[Outcome]) -> None:
        """Publish each outcome as it comes (a cold start's finish yields them as the worker
        answers)."""
        for outcome in outcomes:
            if outcome.nodes and not self._sniffs:  # else heard as read (_receive)
                now = time.monotonic_ns()
                self.heard_ns.update(dict.fromkeys(outcome.nodes, now))
            if outcome.state is not None:
                self._state = outcome.state
            self._frames(outcome.tables)
            if outcome.balls is not None:
                self.listeners.balls(outcome.balls)
            self._report_bad(outcome)
            self._publish(outcome.step)
            self._report_losses(outcome)

    def _acks(self, acks: Any) -> None:
        for ack in acks:
            if ack["status"]:
                log.warning(
                    "hub refused host frame %d: %s",
                    ack["acked_seq"],
                    ACK_STATUS.get(int(ack["status"])),
                )
            self._link.on_ack(int(ack["acked_seq"]), int(ack["acked_type"]), int(ack["status"]))

    def _frames(self, tables: dict[str, Any]) -> None:
        """Frames the host itself acts on: boots, node health, logs (ACKs: :meth:`_receive`)."""
        for hello in tables.get("HELLO", ()):
            boot_id = int(hello["boot_id"])
            if self._boot_id is None:
                log.info(
                    "table: hub serial %d, boot_id %08x, fw %d.%d.%d",
                    hello["hub_serial"],
                    boot_id,
                    hello["fw_major"],
                    hello["fw_minor"],
                    hello["fw_patch"],
                )
            self._boot_id = boot_id
            if not self.indicator_ok:  # the table is up (again): is the link back too?
                self._link.ping(boot_id)
            present = int(hello["nodes_present"])
            self.nodes_present = {n for n in range(16) if present >> n & 1}
        for status in tables.get("NODE_STATUS", ()):
            log.warning(
                "node %s: %s (detail %d)",
                NODE_NAMES.get(int(status["peer"]), status["peer"]),
                NODE_STATUS_CODES.get(int(status["code"]), status["code"]),
                status["detail"],
            )
        if "LOG" in tables:
            from protocol.decoder import record_message

            for rec in tables["LOG"]:
                entry = record_message(rec)
                level = LOG_LEVELS[min(entry.fields["level"], 3)]
                text = log_text(str(entry.fields["text"]))  # a node's words: never a forged line
                log.log(level, "%s: %s", NODE_NAMES.get(entry.node, entry.node), text)

    def _report_bad(self, outcome: Outcome) -> None:
        if outcome.bad is not None:
            self._bad_now = outcome.bad
        bad = outcome.bad_total
        if bad is None:
            return
        now = time.monotonic()
        if bad > self._bad_seen and now - self._bad_reported_at >= BAD_REPORT_S:
            log.warning("%d bad frames dropped so far (%s)", bad, self._bad_now)
            self._bad_seen, self._bad_reported_at = bad, now

    def _report_losses(self, outcome: Outcome) -> None:
        """The timing core's notices once each; its loss counters summed, at most once a second."""
        for notice in outcome.notices:
            log.warning("%s", notice)
        losses = outcome.losses
        if losses is None:
            return
        now = time.monotonic()
        if losses != self._losses_seen and now - self._losses_reported_at >= BAD_REPORT_S:
            log.warning("timing and fusion dropped or refused data so far: %s", losses)
            self._losses_seen, self._losses_reported_at = losses, now

    def _publish(self, step: Step) -> None:
        pipeline = self.pipeline
        hub_now = None
        if pipeline is not None and step.events:
            hub_now = pipeline.hub_time_at(time.monotonic_ns())
        for event in step.events:
            if hub_now is not None and event["type"] in SENSED:
                self.stats.release_lag.add((hub_now - event["t_us"]) / 1000)
            if event["type"] == "boot":
                self._boot(event)
            self.stats.events += 1
            self.listeners.event(event)
        for line in step.lines:
            if line.get("kind") == "verdict":
                self.stats.verdicts += 1
                self.last_verdict = line
            self.listeners.line(line, self.referee_state)

    def _boot(self, event: dict[str, Any]) -> None:
        """The fusion's boot event: the table's first, or a reboot (with its HELLO's boot_id,
        or none: the timeline inferred it from the restarted clocks, its HELLO lost)."""
        if self.booted:
            self.stats.reboots += 1
            boot_id = event.get("boot_id")
            log.warning(
                "hub rebooted (boot_id %s); clocks and counters restart",
                "unknown" if boot_id is None else f"{boot_id:08x}",
            )
        self.booted = True

    def _link_status(self, status: LinkStatus) -> None:
        if status.state is LinkState.OPEN:
            log.info("port %s open", status.url)
            self.connected.set()
            self._hello_wanted.set()
            return
        self.connected.clear()
        ending = self._hang_up_after
        # The table says "match over", then closes its port; on a busy machine the thread
        # that reads its words may not have run yet: give it a moment (this thread is the
        # transport's, which has nothing to read from a closed port anyway).
        lost = status.state in (LinkState.LOST, LinkState.GONE)
        if lost and ending is not None and ending.wait(HANG_UP_S):
            log.info("port %s closed by the table at the end of its match", status.url)
            self._transport.closing.wait(HANG_UP_S)  # no reopen: run closes the transport
        elif lost:
            self.stats.link_losses += 1
            again = "; reconnecting" if status.state is LinkState.LOST else ""
            log.warning("port %s lost (%s)%s", status.url, status.error, again)

    def _health(self, change: HealthChange) -> None:
        """The command link's health, told once per change, in the words the status file
        holds (``indicator``, ``indicator_problem``): the log and ``status`` always agree."""
        ending = self._hang_up_after
        if (
            change.health is LinkHealth.FAILED
            and ending is not None
            and (ending.is_set() or not self.connected.is_set() and ending.wait(HANG_UP_S))
        ):  # stopped, or the port closed and the stop follows (as in _link_status)
            # the virtual table's match is over and its port closed: nothing to drive
            log.info("%s seq %s not sent: the table closed its port", change.name, change.seq)
        elif change.health is LinkHealth.FAILED:
            self.stats.indicator_failures += 1
            self.indicator_ok = False
            self.indicator_problem = (
                f"no ACK for {change.name} seq {change.seq} after {MAX_RETRIES} resends"
            )
            # A REQUEST_HELLO sent before the table booted goes unanswered; the table's first
            # HELLO re-probes the link (_frames), so that one is only a warning.
            level = logging.WARNING if change.name == "REQUEST_HELLO" else logging.ERROR
            log.log(level, "indicator link failed: %s", self.indicator_problem)
        elif change.health is LinkHealth.OK:
            self.indicator_ok = True
            self.indicator_problem = None
            log.info("indicator link ok (%s seq %s acknowledged)", change.name, change.seq)
