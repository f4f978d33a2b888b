"""What turns the port's bytes into outcomes for the daemon: compiled, or a cold start.

:class:`Compiled` is the pipeline in the daemon's own thread (numba kernels
loaded from the cache).  :class:`ColdStart` is what ``run`` uses while the
kernels are not compiled yet (see ``docs/startup.md``):

* every input (a chunk with its ``host_rx_ns``, a tick, the end) is an *op*,
  numbered, kept, and sent to the same pipeline running interpreted in a
  worker process (:mod:`.interpreted`); its outcomes come back in op order
  and are published as they come;
* the hub's ACKs never wait for a pipeline (the command link resends after
  50 ms): :class:`~firmware_host.link.acks.AckSniffer` picks them out of the bytes in the transport's
  reader thread, as they arrive, for every engine; while the worker runs
  behind the wire, the nodes' health (silent after 2 s) and the frame count
  cannot wait for it either, so :class:`FrameSniffer` reads who is talking
  from the same bytes;
* when the warm-up process (:mod:`.warmup`) has compiled the kernels, a fresh
  compiled pipeline replays every op so far in this thread (numba's first
  compile is not safe across threads; this is the one thread), the outcomes
  of the ops the worker already answered are compared and dropped, the rest
  published, and the worker is stopped.  The pipeline is deterministic: the
  same ops give the same events and lines, compiled or interpreted.

Each engine's ``feed``/``idle``/``finish`` return the outcomes to publish now.
"""

from __future__ import annotations

import copy
import logging
import pickle
import queue
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cobs import cobs

from protocol.catalogue import (
    BY_NAME,
    BY_TYPE,
    FLAG_RETRANSMISSION,
    HEADER_SIZE,
    MAX_BODY,
    MIN_BODY,
    NODE_NAMES,
    PROTOCOL_VERSION,
    Header,
    crc32,
)
from protocol.layout import layout
from protocol.ratelimit import CALM, limit_text
from rules import RulesConfig

from ..pipeline import Step

if TYPE_CHECKING:
    from ..pipeline import Pipeline

log = logging.getLogger("firmware_host.engine")  # the name logs have always shown

#: Decoded frames the daemon itself acts on (the command link, the log).
HOST_TABLES = ("HELLO", "NODE_STATUS", "LOG")  # not ACK: AckSniffer
COLD_TICK_S = 0.02  # a tick op at most this often while interpreted (every op is kept)
FEED, TICK, FLUSH, PRESS = "feed", "tick", "flush", "press"
#: (FEED, data, host_rx_ns) | (TICK, host_now_ns) | (FLUSH,) | (PRESS, key, arg, host_now_ns)
Op = tuple[Any, ...]


@dataclass
class Outcome:
    """What the pipeline made of one op, as the daemon needs it.

    ``bad`` and ``losses`` are the running totals after the op (``None``:
    not known here, keep the last); ``notices`` are new since the last op.
    """

    tables: dict[str, Any] = field(default_factory=dict)
    step: Step = field(default_factory=Step)
    bad_total: int | None = None
    bad: dict[str, int] | None = None
    notices: list[str] = field(default_factory=list)
    losses: dict[str, int] | None = None
    decoder_stats: dict[str, Any] | None = None  # the decoder's totals (with the FLUSH outcome)
    nodes: tuple[int, ...] = ()  # the nodes a good frame came from in this op (health)
    balls: dict[str, list[float]] | None = None  # the op's last tracker frame (the live page)
    state: Any = None  # the referee's MatchState after an op that gave lines (None: as before)


def heard_from(decoded: Any) -> tuple[int, ...]:
    """The nodes alive in a feed: a good frame from them, or a CLOCK_SYNC that sampled
    them (they answered the hub's beacon with nothing to report: a cushion nobody hits)."""
    import numpy as np

    from protocol.kernels import OK

    frames = decoded.frames
    nodes = [frames["node"][frames["status"] == OK]]
    if "CLOCK_SYNC" in decoded.tables:
        nodes.append(decoded.tables["CLOCK_SYNC"]["peer"])
    return tuple(int(n) for n in np.unique(np.concatenate(nodes)))


def latest_balls(decoded: Any) -> dict[str, list[float]] | None:
    """Where the tracker saw the balls in a feed's last BALL_TRACK frame (mm; ``None``: none).

    One small dict per feed, whatever the frame rate: the live page draws
    the table from it, and nothing else on the refereeing path looks at it.
    """
    track = decoded.tables.get("BALL_TRACK")
    if track is None or not len(track):
        return None
    last = track[-1]
    return {
        str(int(b["ball"])): [int(b["x"]) / 10, int(b["y"]) / 10, int(b["state"])]
        for b in last["balls"][: int(last["count"])]
    }


class Engine(Protocol):
    """What the daemon asks of an engine: everything it uses, nothing probed for.

    ``sniffs_nodes``: the engine answers later than the wire, so the
    reader thread itself reads who is talking (:meth:`sniff`) for the
    nodes' health.  ``behind``: the end of input still waits for the
    engine to catch up (a hang-up must not cut it short).  ``pipeline``:
    the compiled pipeline (the match state, the hub's time of a host
    instant, a resume), ``None`` while a cold start still runs interpreted.
    """

    sniffs_nodes: bool

    @property
    def behind(self) -> bool: ...
    @property
    def pipeline(self) -> Pipeline | None: ...
    def sniff(self, data: bytes) -> Sniffed: ...
    def feed(self, data: bytes, host_rx_ns: int) -> list[Outcome]: ...
    def idle(self, host_now_ns: int) -> list[Outcome]: ...
    def press(self, key: str, arg: int, host_now_ns: int) -> list[Outcome]: ...
    def finish(self, abandon: bool = False) -> Iterable[Outcome]: ...
    def decoder_stats(self) -> dict[str, Any]: ...
    def losses(self) -> dict[str, int]: ...


def refusal_text(refused: Any) -> str:
    """A frame the signature check refused (ICD §9), named for the log: which node, which
    seq and counter, why."""
    frame = refused.frame
    node = NODE_NAMES.get(frame.node, str(frame.node))
    ctr = frame.signature.sig_ctr if getattr(frame, "signature", None) else None
    signed = f", sig_ctr {ctr}" if ctr is not None else ""
    name = getattr(frame, "name", "UNKNOWN")
    return f"refused {refused.reason} frame from {node}: {name} seq {frame.seq}{signed}"


def flood_texts(marks: Any) -> list[str]:
    """Where a node's flood starts or ends (``Decoded.marks``, protocol.ratelimit), in words
    for the log: once per flood, never per frame dropped."""
    out = []
    for node, seq, rate in zip(
        marks["node"].tolist(), marks["seq"].tolist(), marks["rate"].tolist()
    ):
        name = NODE_NAMES.get(node, str(node))
        if rate == CALM:
            out.append(f"{name} keeps to its rate limit again: its frames are taken from seq {seq}")
        else:
            out.append(
                f"{name} floods the link: beyond {limit_text(node)}; its frames are dropped and "
                f"counted from seq {seq}, its data set aside until it keeps to the limit"
            )
    return out


class Compiled:
    """The pipeline in the calling thread; every op's outcome at once."""

    sniffs_nodes = False  # every outcome says who was heard, as soon as it was read
    behind = False

    def __init__(self, rules: RulesConfig | None = None, signing: Any = None) -> None:
        from ..pipeline import Pipeline  # numba: imported (not compiled) only when needed

        self.pipeline = Pipeline(rules, signing)
        self._bad_total = 0

    def apply(self, op: Op) -> Outcome:
        pipe = self.pipeline
        tables: dict[str, Any] = {}
        nodes: tuple[int, ...] = ()
        balls = None
        refusals: list[str] = []
        if op[0] == FEED:
            decoded = pipe.decoder.feed(op[1])
            refusals = [refusal_text(r) for r in decoded.refused] + flood_texts(decoded.marks)
            tables = {k: v for k, v in decoded.tables.items() if k in HOST_TABLES}
            nodes = heard_from(decoded)
            balls = latest_balls(decoded)
            step = pipe.feed_decoded(decoded, op[2])
        elif op[0] == TICK:
            step = pipe.tick(op[1])
        elif op[0] == PRESS:
            step = pipe.press(op[1], op[2], op[3])
        else:
            step = pipe.flush()
        bad_total = pipe.decoder.bad_total
        changed = bad_total != self._bad_total
        self._bad_total = bad_total
        return Outcome(
            tables,
            step,
            bad_total,
            pipe.decoder.stats().bad if changed else None,  # None: as before
            refusals + pipe.events.take_notices(),
            pipe.events.losses(),
            vars(pipe.decoder.stats()) if op[0] == FLUSH else None,
            nodes,
            balls,
            copy.deepcopy(pipe.referee.state) if step.lines else None,
        )

    def feed(self, data: bytes, host_rx_ns: int) -> list[Outcome]:
        return [self.apply((FEED, data, host_rx_ns))]

    def idle(self, host_now_ns: int) -> list[Outcome]:
        return [Outcome(step=self.pipeline.tick(host_now_ns))]

    def press(self, key: str, arg: int, host_now_ns: int) -> list[Outcome]:
        return [self.apply((PRESS, key, arg, host_now_ns))]

    def finish(self, abandon: bool = False) -> list[Outcome]:
        return [self.apply((FLUSH,))]

    def sniff(self, data: bytes) -> Sniffed:
        """Nothing: the outcome of the same read names the nodes (no worker to wait for)."""
        return Sniffed()

    def decoder_stats(self) -> dict[str, Any]:
        return vars(self.pipeline.decoder.stats())

    def losses(self) -> dict[str, int]:
        return self.pipeline.events.losses()


def _header_offset(name: str) -> int:
    """Where a header field starts in a frame's body, from the catalogue's Header."""
    names = [sub.name for sub in Header.subcons]
    return sum(sub.sizeof() for sub in Header.subcons[: names.index(name)])


@dataclass
class Sniffed:
    """What the raw bytes of one read showed, before any pipeline judged them."""

    nodes: set[int] = field(default_factory=set)  # a good frame from them, or a sync sampled them
    frames: int = 0  # good frames of a known type, retransmissions left out


class FrameSniffer:
    """Who is talking, out of raw bytes in pure Python, as they arrive (a cold start).

    While the pipeline runs interpreted it may answer seconds after the wire
    (docs/startup.md), but the command link resends after 50 ms and a node
    is "silent" after 2 s: so the reader thread looks at each frame itself.
    COBS and the CRC are checked by the C ``cobs`` codec and ``zlib``; only
    the header's node and a CLOCK_SYNC's peer are read, at offsets derived
    from the catalogue.  A few microseconds a frame.  (ACKs: :class:`~firmware_host.link.acks.AckSniffer`,
    for every engine.)
    """

    SYNC = BY_NAME["CLOCK_SYNC"].msg_type
    NODE_AT = _header_offset("node")
    FLAGS_AT = _header_offset("flags")
    PEER_AT = HEADER_SIZE + next(f.offset for f in layout(SYNC).fields if f.name == "peer")

    def __init__(self) -> None:
        self._carry = b"\x00"  # from the last delimiter on: the start of the next frame

    def feed(self, data: bytes) -> Sniffed:
        *frames, rest = (self._carry + data).split(b"\x00")
        self._carry = rest if len(rest) <= MAX_BODY + 2 else b""  # an over-long run: garbage
        out = Sniffed()
        for raw in frames:
            body = _checked_body(raw)
            if body is None:
                continue
            out.nodes.add(body[self.NODE_AT])
            if body[1] == self.SYNC:
                out.nodes.add(body[self.PEER_AT])
            if not body[self.FLAGS_AT] & FLAG_RETRANSMISSION:
                out.frames += 1
        return out


def _checked_body(raw: bytes) -> bytes | None:
    """A frame's body if its COBS, length, CRC, version and type are good (ICD order)."""
    try:
        body = cobs.decode(raw)
    except cobs.DecodeError:
        return None
    if not MIN_BODY <= len(body) <= MAX_BODY:
        return None
    if crc32(body[:-4]) != int.from_bytes(body[-4:], "little"):
        return None
    return body if body[0] == PROTOCOL_VERSION and body[1] in BY_TYPE else None


class Worker:
    """The client side of an interpreted worker (:mod:`.interpreted`) on its pipes.

    Ops are pickled by a writer thread (a worker running behind never blocks
    the daemon); a reader thread queues the outcomes, ``None`` at its end.
    """

    def __init__(self, proc: subprocess.Popen[bytes], rules: RulesConfig | None) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.sent = 0
        self.outcomes: queue.SimpleQueue[Outcome | None] = queue.SimpleQueue()
        self._ops: queue.SimpleQueue[Op | None] = queue.SimpleQueue()
        self._ops.put(("rules", rules or RulesConfig()))
        threading.Thread(target=self._write, name="interpreted-in", daemon=True).start()
        threading.Thread(target=self._read, name="interpreted-out", daemon=True).start()

    def send(self, op: Op) -> None:
        self.sent += 1
        self._ops.put(op)

    def _write(self) -> None:
        pipe = self.proc.stdin
        assert pipe is not None
        try:
            while (op := self._ops.get()) is not None:
                pickle.dump(op, pipe, protocol=pickle.HIGHEST_PROTOCOL)
                if self._ops.empty():
                    pipe.flush()
            pipe.close()
        except (OSError, ValueError):  # the worker is gone: the reader says so
            pass

    def _read(self) -> None:
        pipe = self.proc.stdout
        assert pipe is not None
        try:
            while True:
                self.outcomes.put(pickle.load(pipe))
        except (EOFError, OSError, pickle.UnpicklingError, ValueError):
            self.outcomes.put(None)

    def stop(self) -> None:
        """Close its input and end it (its outcomes from now on are not wanted)."""
        self._ops.put(None)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ColdStart:
    """Interpreted in a worker until the warm-up is done, then compiled here.

    ``warmup`` (``None``: nothing is being compiled, e.g. numba cannot cache
    here) is a :class:`.warmup.Background`, watched through ``returncode``.
    The daemon takes ACKs from the raw bytes for every engine, and while
    this one runs behind, the nodes heard and the frames read too
    (:attr:`sniffs_nodes`, :meth:`sniff`).  While the worker is busy, the
    chunks that arrive are joined into ops of up to ``OP_BYTES`` (as if one
    read had returned them all): the worker's cost per op is paid less often
    and the compiled replay has fewer ops to go through, while a worker that
    fell behind still answers, and publishes, verdict by verdict.
    """

    sniffs_nodes = True  # the daemon's reader thread reads who is talking (sniff)
    IN_FLIGHT = 2  # ops sent to the worker and not answered yet, at most
    # Chunks joined into one op up to this size (about a second of a full-sensor table): the
    # worker answers op by op, so a verdict waits at most for the rest of its op.  Unbounded,
    # a worker that had fallen behind got the whole backlog as one op, and every verdict in
    # it came out together when it was done.
    OP_BYTES = 16_384

    def __init__(
        self,
        worker: subprocess.Popen[bytes],
        warmup: Any,
        rules: RulesConfig | None = None,
    ) -> None:
        self.rules = rules
        self._worker: Worker | None = Worker(worker, rules)
        self.warmup = warmup
        self._ops: list[Op] | None = [] if warmup is not None else None
        self._steps: list[Step] = []  # what the worker's outcomes published, op by op
        self._answered = 0
        self._sent = 0
        self._pending: list[tuple[bytes, int]] = []  # chunks not sent yet, with host_rx_ns
        self._last_op_at = 0.0
        self._worker_stats: dict[str, Any] = {}
        self._losses: dict[str, int] = {}
        self.sniffer = FrameSniffer()
        self._sniffed_frames = 0  # good frames read, counted as they arrive
        self.compiled: Compiled | None = None
        self.switched_at_op: int | None = None  # where the compiled pipeline took over
        self.disagreements = 0  # ops whose compiled outcome differed from the worker's

    @property
    def behind(self) -> bool:
        """Still interpreted: the end of input waits for the worker to catch up."""
        return self.compiled is None

    @property
    def pipeline(self) -> Pipeline | None:
        """The compiled pipeline once it took over (``None``: still interpreted)."""
        return self.compiled.pipeline if self.compiled is not None else None

    # -- the engine interface ------------------------------------------------------------

    def feed(self, data: bytes, host_rx_ns: int) -> list[Outcome]:
        if self.compiled is not None:
            return self.compiled.feed(data, host_rx_ns)
        self._pending.append((data, host_rx_ns))
        out = self._collect()
        if self.compiled is None:
            self._send_pending()
        return out

    def idle(self, host_now_ns: int) -> list[Outcome]:
        if self.compiled is not None:
            return self.compiled.idle(host_now_ns)
        out = self._collect()
        if self.compiled is None:
            self._send_pending()
            if (
                self._worker is not None
                and self._answered == self._sent
                and time.monotonic() - self._last_op_at >= COLD_TICK_S
            ):
                self._send((TICK, host_now_ns))
        return out

    def press(self, key: str, arg: int, host_now_ns: int) -> list[Outcome]:
        if self.compiled is not None:
            return self.compiled.press(key, arg, host_now_ns)
        self._send_pending(force=True)  # the bytes read before the press come first
        self._send((PRESS, key, arg, host_now_ns))
        return self._collect()

    def finish(self, abandon: bool = False) -> Iterator[Outcome]:
        """The end of input: the worker's last outcomes, each as it comes, or the compiled
        flush.

        A generator: a worker still behind at the end of a match answers for
        seconds, and each verdict is published as it is decided (they once
        came all together when the last op was answered: a cold start's
        verdicts 2 to 6 at the same instant, the end).  ``abandon`` (a
        signal): nothing more is wanted, nothing is waited for.
        """
        if abandon:
            return
        if self.compiled is not None:
            yield from self.compiled.finish()
            return
        self._send_pending(force=True)
        self._send((FLUSH,))
        while self._worker is not None and self._answered < self._sent:
            yield from self._collect(block=True, switch=False)
        if self._worker is not None:  # every op answered, the flush too
            self.close()
            return
        # The worker died on the way: the compiled pipeline replays every op, the flush too.
        if self.warmup is not None:
            self.warmup.wait()
        yield from self._switch(fallback=True)

    def sniff(self, data: bytes) -> Sniffed:
        """The reader thread's own look at a read: who is talking and the frames (see
        FrameSniffer); this thread only counts the frames."""
        got = self.sniffer.feed(data)
        self._sniffed_frames += got.frames
        return got

    def decoder_stats(self) -> dict[str, Any]:
        """The decoder's totals as the worker last sent them, with the frames read so far
        (the worker may be seconds behind); the compiled decoder's once it took over."""
        if self.compiled is not None:
            return self.compiled.decoder_stats()
        judged = int(self._worker_stats.get("frames", 0))
        return {**self._worker_stats, "frames": max(judged, self._sniffed_frames)}

    def losses(self) -> dict[str, int]:
        return self.compiled.losses() if self.compiled else self._losses

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    # -- inside ----------------------------------------------------------------------------

    def _send_pending(self, force: bool = False) -> None:
        """The chunks read meanwhile as feed ops of whole chunks up to ``OP_BYTES`` each
        (with the last one's host time), while the worker has room (``force``: all now)."""
        while self._pending and (force or self._sent - self._answered < self.IN_FLIGHT):
            size = taken = 0
            while taken < len(self._pending) and (not taken or size < self.OP_BYTES):
                size += len(self._pending[taken][0])
                taken += 1
            chunks, self._pending = self._pending[:taken], self._pending[taken:]
            self._send((FEED, b"".join(c for c, _ in chunks), chunks[-1][1]))

    def _send(self, op: Op) -> None:
        self._last_op_at = time.monotonic()
        self._sent += 1
        if self._ops is not None:
            self._ops.append(op)
        if self._worker is not None:
            self._worker.send(op)

    def _collect(self, block: bool = False, switch: bool = True) -> list[Outcome]:
        """The worker's outcomes that came back; the switch once the warm-up is done."""
        out = []
        worker = self._worker
        while worker is not None:
            try:
                got = worker.outcomes.get(timeout=0.05) if block else worker.outcomes.get_nowait()
            except queue.Empty:
                break
            if got is None:  # the worker ended: it said why on stderr
                worker.stop()
                status = worker.proc.returncode
                self._worker = worker = None
                if self._ops is None:  # nothing kept, nothing compiling: no way on
                    raise RuntimeError(f"the interpreted pipeline stopped (exit {status})")
                log.error(
                    "the interpreted pipeline stopped; the verdicts wait for the compiled one"
                )
                break
            self._answered += 1
            if self._ops is not None:
                self._steps.append(got.step)
            if got.losses is not None:
                self._losses = got.losses
            if got.decoder_stats is not None:
                self._worker_stats = got.decoder_stats
            out.append(got)
            block = False
        if switch and self.warmup is not None and self.warmup.returncode is not None:
            out += self._switch()
        return out

    def _switch(self, fallback: bool = False) -> list[Outcome]:
        warmup, self.warmup = self.warmup, None
        if warmup is not None and warmup.returncode != 0 and not fallback:
            log.warning(
                "the numba warm-up failed (exit %s): the table is refereed in pure Python "
                "for this session",
                warmup.returncode,
            )
            if self._worker is not None:
                self._ops, self._steps = None, []  # no switch to come: keep nothing
                return []
        started = time.monotonic()
        self._send_pending(force=True)
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        compiled = Compiled(self.rules)
        ops, self._ops = self._ops or [], None
        out = []
        for i, op in enumerate(ops):
            got = compiled.apply(op)
            if i < self._answered:
                if got.step != self._steps[i]:
                    self.disagreements += 1
                continue
            out.append(got)
        if self.disagreements:
            log.warning(
                "%d of %d inputs gave other events or lines compiled than interpreted",
                self.disagreements,
                self._answered,
            )
        self.compiled, self.switched_at_op, self._steps = compiled, self._answered, []
        log.info(
            "compiled pipeline took over after op %d of %d (replayed in %.1f s)",
            self._answered,
            len(ops),
            time.monotonic() - started,
        )
        return out
