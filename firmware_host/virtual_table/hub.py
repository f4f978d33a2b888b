"""The hub's firmware, modelled: its own frames, per-node queues and the wire order.

:func:`build_wire` turns a :class:`MatchTruth` into everything the hub would
send, in the order the bytes reach the host, with an exact per-frame truth:

1. the sensor model (:mod:`.sensors`) says what each node reports and when;
2. the hub adds HELLO per boot, HEARTBEAT at 1 Hz, CLOCK_SYNC per present
   node (4 Hz, the cue 10 Hz, positive beacon delays, the cue's 5 % retries),
   NODE_STATUS and LOG on faults, LOG now and then;
3. every node's clock stamps its frames (:mod:`.clocks`), ``seq`` counts per
   node and boot;
4. per-node FIFO queues: a frame is ready once its node's latency has passed
   and every earlier frame of that node is out, so frames of different nodes
   reach the wire out of time order (by up to 30 ms) while each node's stay
   in ``seq`` order; the link's byte rate serialises them.

:class:`HostCommands` is the hub's answer to host frames (ACK, SET_INDICATOR,
REQUEST_HELLO, PING), shared by the live pty peer (:mod:`.peer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from protocol.catalogue import BY_NAME, FLAG_SIGNED, HOST_NODE, INDICATOR_STATES, NODE_NAMES
from protocol.encode import encode_records
from protocol.framing import BadFrame, Message, UnknownFrame, build_body
from protocol.layout import layout
from protocol.signing import tag_of

from .attacker import attack
from .clocks import CUE, WRAP, Timeline
from .faults import FaultPlan, damage
from .sensors import DAMAGED, FLOODED, LATE_BEACON, PLAIN, SENSOR_SETS, Batch, sense
from .signer import NodeSigning
from .truth import MatchTruth

SYNC_HZ, CUE_SYNC_HZ = 4.0, 10.0
WIRED_DELAY_US, CUE_DELAY_US, CUE_RETRY_P, CUE_RETRY_MS = (8, 20), (150, 400), 0.05, (1.0, 5.0)
SYNC_REPLY_MS = (0.5, 2.0)  # the peer's reply reaching the hub's queue
BAUD_S_PER_BYTE = 10 / 921_600
REBOOT_QUIET_S = 1.0  # nodes are re-enumerated after a hub reboot
OFFLINE_NOTICE_S = 0.3  # the hub notices a silent node after this long
HUB_BUFFER_FRAMES = 256  # frames the hub holds while the link is stalled
LOG_EVERY_S = (60.0, 180.0)
U16 = 0xFFFF
BALL_TRACK = BY_NAME["BALL_TRACK"].msg_type

FRAME_TRUTH = np.dtype(
    [
        ("offset", "<i8"),  # byte offset of the frame in the capture (-1: not written)
        ("length", "<i4"),  # bytes on the wire, delimiter included
        ("boot", "<i4"),  # index of the hub boot the frame belongs to
        ("node", "u1"),
        ("msg_type", "u1"),
        ("seq", "<u2"),
        ("t_us", "<u4"),  # the header stamp, as on the wire
        ("node_us", "<i8"),  # the same stamp, unwrapped
        ("stamp_hub_us", "<f8"),  # exact hub time (this boot, unwrapped) of the stamp
        ("event_hub_us", "<f8"),  # hub time of the physical event behind it (NaN: none)
        ("wire_hub_us", "<f8"),  # hub time the frame's first byte left the hub
        ("note", "u1"),  # sensors.PLAIN, RING_DOWN, ... , DAMAGED
    ]
)


@dataclass(frozen=True)
class HubConfig:
    """Everything about the virtual table that is not the match itself."""

    sensors: str = "full"
    tracker_hz: float = 120.0
    # share of shots the camera films with its phase at one of their ball contacts (tests)
    tracker_at_contacts: float = 0.0
    near_wrap: bool = False
    clock_ppm: tuple[tuple[int, float], ...] = ()  # (node, ppm): crystals set, not drawn
    seed: int = 0
    faults: FaultPlan = field(default_factory=FaultPlan)
    hub_serial: int = 0x5EB1_0001
    firmware: tuple[int, int, int] = (1, 0, 0)
    lead_s: float = 0.5  # the hub boots this long before the match's t = 0
    tail_s: float = 1.0  # and keeps talking this long after it

    @property
    def nodes(self) -> tuple[int, ...]:
        return SENSOR_SETS[self.sensors]

    @property
    def nodes_present(self) -> int:
        return sum(1 << n for n in self.nodes)


@dataclass
class Wire:
    """The hub's output in wire order, and the truth of every frame in it.

    ``chunks[k]`` starts leaving the hub at true time ``chunk_s[k]``; it is
    frame ``chunk_frame[k]`` (its truth ``truth[chunk_frame[k]]``) or, at -1,
    injected garbage.  ``hub_records[i]`` is the record of a hub (node 0) frame, so a live peer can re-encode it with
    its own ``seq`` and lamp state; ``None`` for other nodes.
    """

    chunks: list[bytes]  # what to write, in order: frames, and garbage from fault injection
    chunk_s: np.ndarray  # true time each chunk starts leaving the hub
    chunk_frame: np.ndarray  # index into truth / hub_records (-1: garbage)
    truth: np.ndarray  # FRAME_TRUTH, one row per frame, wire order
    hub_records: list[np.void | None]
    timeline: Timeline
    config: HubConfig
    plan: FaultPlan  # resolved: no "random" left
    start_s: float
    end_s: float


def _sync_batch(
    timeline: Timeline,
    cfg: HubConfig,
    plan: FaultPlan,
    rng: np.random.Generator,
    start_s: float,
    end_s: float,
) -> Batch:
    """CLOCK_SYNC beacons: header = hub clock at departure, peer_t_us = peer clock at arrival."""
    stamp, peer, delay = [], [], []
    for node in cfg.nodes:
        if node == 0:
            continue
        hz = CUE_SYNC_HZ if node == CUE else SYNC_HZ
        t = np.arange(start_s + 0.05 + rng.uniform(0, 1 / hz), end_s, 1 / hz)  # after HELLO
        if node == CUE:
            d = rng.uniform(*CUE_DELAY_US, len(t)) + np.where(
                rng.random(len(t)) < CUE_RETRY_P, rng.uniform(*CUE_RETRY_MS, len(t)) * 1e3, 0.0
            )
        else:
            d = rng.uniform(*WIRED_DELAY_US, len(t))
        stamp.append(t)
        peer.append(np.full(len(t), node))
        delay.append(d * 1e-6)
    t, peers, d = (np.concatenate(a) for a in (stamp, peer, delay))
    arrive = t + d
    return Batch.build(
        "CLOCK_SYNC",
        0,
        t,
        arrive,  # the peer's own stamp: the instant its clock was read
        d + rng.uniform(*SYNC_REPLY_MS, len(t)) * 1e-3,
        note=np.where(d > CUE_DELAY_US[1] * 1e-6, LATE_BEACON, PLAIN),
        peer=peers,
        peer_t_us=np.floor(timeline.ticks(peers, arrive)).astype(np.int64) % WRAP,
    )


def _heartbeat_batch(timeline: Timeline, cfg: HubConfig, plan: FaultPlan, end_s: float) -> Batch:
    """HEARTBEAT at 1 Hz per boot: uptime and the nodes that answer now."""
    stamps, uptimes = [], []
    for i, boot in enumerate(timeline.boots):
        stop = timeline.boots[i + 1].boot_s if i + 1 < len(timeline.boots) else end_s
        t = np.arange(boot.boot_s + 1.0, stop, 1.0)
        stamps.append(t)
        uptimes.append(np.rint(t - boot.boot_s))
    t = np.concatenate(stamps)
    ok = np.full(len(t), cfg.nodes_present)
    for node, start, stop in plan.offline:
        ok = np.where((t >= start + OFFLINE_NOTICE_S) & (t < stop), ok & ~(1 << node), ok)
    return Batch.build(
        "HEARTBEAT",
        0,
        t,
        np.full(len(t), np.nan),
        np.zeros(len(t)),
        uptime_s=np.concatenate(uptimes),
        nodes_ok=ok,
        indicator=INDICATOR_STATES["off"],
    )


def _hello_batch(timeline: Timeline, cfg: HubConfig, truth: MatchTruth) -> Batch:
    t = np.array([b.boot_s + 0.01 for b in timeline.boots])
    major, minor, patch = cfg.firmware
    return Batch.build(
        "HELLO",
        0,
        t,
        t,
        np.zeros(len(t)),
        fw_major=major,
        fw_minor=minor,
        fw_patch=patch,
        proto=1,
        boot_id=[b.boot_id for b in timeline.boots],
        hub_serial=cfg.hub_serial,
        table_length_mm=round(truth.table.length_mm),
        table_width_mm=round(truth.table.width_mm),
        ball_diameter_um=round(truth.table.ball_mm * 1000),
        nodes_present=cfg.nodes_present,
    )


def _status_batches(
    cfg: HubConfig, plan: FaultPlan, rng: np.random.Generator, start_s: float, end_s: float
) -> list[Batch]:
    """NODE_STATUS and a warning LOG when a node drops out and comes back; LOG now and then."""
    t, peer, code = [], [], []
    for node, off, on in plan.offline:
        t += [off + OFFLINE_NOTICE_S, on]
        peer += [node, node]
        code += [1, 0]
    t_arr = np.array(t, float)
    status = Batch.build(
        "NODE_STATUS", 0, t_arr, t_arr, np.zeros(len(t)), peer=peer, code=code, detail=0
    )
    texts = [
        f"node {NODE_NAMES[p]} {'online' if c == 0 else 'offline'}".encode()
        for p, c in zip(peer, code, strict=True)
    ]
    levels = [1 if c == 0 else 2 for c in code]
    chatter = (
        np.cumsum(rng.uniform(*LOG_EVERY_S, int((end_s - start_s) / LOG_EVERY_S[0]) + 1)) + start_s
    )
    chatter = chatter[chatter < end_s]
    talkers = rng.choice(cfg.nodes, len(chatter))
    temps = rng.uniform(20.0, 28.0, len(chatter))
    log_t = np.concatenate([t_arr, chatter])
    log_node = np.concatenate([np.zeros(len(t), int), talkers])
    log = Batch.build(
        "LOG",
        log_node,
        log_t,
        np.full(len(log_t), np.nan),
        np.where(log_node == 0, 0.0, rng.uniform(0.2e-3, 3e-3, len(log_t))),
        level=levels + [0] * len(chatter),
        text=texts
        + [
            f"{NODE_NAMES[n]}: board {c:.1f} C".encode()
            for n, c in zip(talkers, temps, strict=True)
        ],
    )
    return [status, log]


FLOOD_LATENCY_S = 10e-3  # a flooding tracker's frames reach the hub's queue this soon
FLOOD_SEED = 29  # the flood draws from its own generator: the match's noise stays the same


def _flood_batch(truth: MatchTruth, plan: FaultPlan, seed: int) -> Batch | None:
    """A tracker gone wrong (``flood-tracker``): extra BALL_TRACK frames at the plan's rate,
    16 balls each at random places on the cloth, all moving."""
    if not plan.floods:
        return None
    rng = np.random.default_rng((seed, FLOOD_SEED))
    t = np.concatenate([np.arange(a, b, 1.0 / rate) for rate, a, b in plan.floods])
    balls = np.zeros((len(t), 16), layout(BALL_TRACK).dtype["balls"].base)
    balls["ball"] = np.arange(16)
    balls["state"] = 1
    balls["x"] = rng.uniform(0, truth.table.length_mm * 10, balls.shape)
    balls["y"] = rng.uniform(0, truth.table.width_mm * 10, balls.shape)
    return Batch.build(
        "BALL_TRACK", 4, t, np.full(len(t), np.nan), np.full(len(t), FLOOD_LATENCY_S),
        note=FLOODED, frame=np.arange(len(t)) & 0xFFFF, count=16, balls=balls,
    )  # fmt: skip


def _serialise(ready: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """When each frame starts on the wire: not before it is ready, nor before the previous left."""
    tx = nbytes * BAUD_S_PER_BYTE
    before = np.concatenate([[0.0], np.cumsum(tx)[:-1]])  # link time used by earlier frames
    return before + np.maximum.accumulate(ready - before)


@dataclass
class _Frames:
    """Every candidate frame of every batch, flat: what the hub's steps work on."""

    batches: list[Batch]
    which: np.ndarray  # batch index
    row: np.ndarray  # row in that batch's records
    node: np.ndarray
    peer: np.ndarray  # CLOCK_SYNC: the node sampled; else 0
    stamp: np.ndarray
    event: np.ndarray
    ready: np.ndarray  # true time the hub has it queued
    note: np.ndarray
    boot: np.ndarray
    seq: np.ndarray

    @classmethod
    def of(cls, batches: list[Batch], timeline: Timeline) -> _Frames:
        batches = [b for b in batches if len(b)]
        sync = BY_NAME["CLOCK_SYNC"].msg_type
        stamp = np.concatenate([b.stamp_s for b in batches])
        return cls(
            batches,
            which=np.concatenate([np.full(len(b), i) for i, b in enumerate(batches)]),
            row=np.concatenate([np.arange(len(b)) for b in batches]),
            node=np.concatenate([b.records["node"] for b in batches]).astype(np.int64),
            peer=np.concatenate(
                [
                    b.records["peer"] if b.msg_type == sync else np.zeros(len(b), int)
                    for b in batches
                ]
            ).astype(np.int64),
            stamp=stamp,
            event=np.concatenate([b.event_s for b in batches]),
            ready=stamp + np.concatenate([b.latency_s for b in batches]),
            note=np.concatenate([b.note for b in batches]),
            boot=timeline.boot_index(stamp),
            seq=np.zeros(len(stamp), np.int64),
        )


def _reaching_the_hub(
    f: _Frames, timeline: Timeline, plan: FaultPlan, start_s: float, end_s: float
) -> np.ndarray:
    """Indices of the frames the hub gets.

    Not: before boot or after the end, from (or a beacon to) a node offline,
    from nodes still re-enumerating after a reboot, in flight across a reboot.
    """
    boot_s = np.array([b.boot_s for b in timeline.boots])
    enumerating = (f.boot > 0) & (f.stamp < boot_s[f.boot] + REBOOT_QUIET_S)
    keep = (f.stamp >= start_s) & (f.stamp < end_s)
    keep &= ~(enumerating & ((f.node != 0) | (f.peer != 0)))
    keep &= ~plan.offline_mask(f.node, f.stamp) & ~plan.offline_mask(f.peer, f.stamp)
    keep &= timeline.boot_index(f.ready) == f.boot
    return np.flatnonzero(keep)


def _queue(f: _Frames, idx: np.ndarray, span_s: float) -> np.ndarray:
    """Per node and boot a FIFO in stamp order: seq counts in it, nobody overtakes.

    Returns ``idx`` in queue order; fills ``f.seq`` and delays ``f.ready``.
    """
    order = idx[np.lexsort((f.stamp[idx], f.node[idx], f.boot[idx]))]
    group = f.boot[order] * 256 + f.node[order]
    first = np.concatenate([[True], group[1:] != group[:-1]])
    position = np.arange(len(order))
    f.seq[order] = position - np.maximum.accumulate(np.where(first, position, 0))
    f.ready[order] = np.maximum.accumulate(f.ready[order] + group * span_s) - group * span_s
    return order


def _stall(f: _Frames, order: np.ndarray, plan: FaultPlan) -> tuple[np.ndarray, np.ndarray]:
    """A stalled link: the hub holds what it has (up to its buffer) and drops the rest.

    Returns the frames sent and the true times frames were dropped (a seq
    gap the host counts, and HEARTBEAT's ``tx_dropped``).
    """
    alive = np.zeros(len(f.node), bool)
    alive[order] = True
    dropped_at = [np.zeros(0)]
    for stall_from, stall_to in plan.stalls:
        held = order[(f.ready[order] >= stall_from) & (f.ready[order] < stall_to)]
        held = held[np.argsort(f.ready[held], kind="stable")]
        dropped_at.append(f.ready[held[HUB_BUFFER_FRAMES:]])
        alive[held[HUB_BUFFER_FRAMES:]] = False
        f.ready[held] = stall_to
    return order[alive[order]], np.sort(np.concatenate(dropped_at))


def _encode(
    f: _Frames, sent: np.ndarray, node_us: np.ndarray, drop_t: np.ndarray, timeline: Timeline
) -> tuple[list[bytes], list[np.void | None]]:
    """Stamp, number and encode the frames sent (indexed like ``f``); keep hub records."""
    frames: list[bytes] = [b""] * len(f.node)
    hub_records: list[np.void | None] = [None] * len(f.node)
    boot_s = np.array([b.boot_s for b in timeline.boots])
    for i, batch in enumerate(f.batches):
        mine = sent[f.which[sent] == i]
        rec, rows = batch.records, f.row[mine]
        rec["t_us"][rows] = node_us[mine] % WRAP
        rec["seq"][rows] = f.seq[mine] & U16
        if batch.msg_type == BY_NAME["HEARTBEAT"].msg_type:
            since_boot = np.searchsorted(drop_t, f.stamp[mine]) - np.searchsorted(
                drop_t, boot_s[f.boot[mine]]
            )
            rec["tx_dropped"][rows] = np.minimum(since_boot, U16)
        for g, frame in zip(mine.tolist(), encode_records(rec[rows]), strict=True):
            frames[g] = frame
        for g in mine[f.node[mine] == 0].tolist():
            hub_records[g] = rec[f.row[g]]
    return frames, hub_records


def _frame_truth(
    f: _Frames, wire: np.ndarray, node_us: np.ndarray, wire_s: np.ndarray, timeline: Timeline
) -> np.ndarray:
    """FRAME_TRUTH rows of the frames in wire order (offsets are the caller's)."""
    out = np.zeros(len(wire), FRAME_TRUTH)
    boot = f.boot[wire]
    out["boot"] = boot
    out["node"] = f.node[wire]
    out["msg_type"] = np.array([b.msg_type for b in f.batches])[f.which[wire]]
    out["seq"] = f.seq[wire] & U16
    out["node_us"] = node_us[wire]
    out["t_us"] = node_us[wire] % WRAP
    # the stamp is floor(ticks): its exact instant is that fraction of a µs earlier
    exact = f.stamp[wire] - (timeline.ticks(f.node[wire], f.stamp[wire]) - node_us[wire]) * 1e-6
    out["stamp_hub_us"] = _hub_us(timeline, boot, exact)
    out["event_hub_us"] = _hub_us(timeline, boot, f.event[wire])
    out["wire_hub_us"] = _hub_us(timeline, boot, wire_s)
    out["note"] = f.note[wire]
    return out


def build_wire(truth: MatchTruth, cfg: HubConfig, signing: NodeSigning | None = None) -> Wire:
    """Everything the hub sends for ``truth``, in wire order, with per-frame truth.

    ``signing``: a firmware 1.2 table paired with a key before the match (its nodes in
    ``require`` sign every frame, ICD §9).  Faults spoil the signed bytes as the radio
    would; an attacker (``FaultPlan.attacks``) adds its frames last.
    """
    rng = np.random.default_rng(cfg.seed)
    start_s, end_s = -cfg.lead_s, truth.duration_s + cfg.tail_s
    plan = cfg.faults.resolve(rng, truth.duration_s, cfg.nodes)
    timeline = Timeline.create(rng, start_s, plan.reboots_s, cfg.near_wrap, cfg.clock_ppm)
    batches = sense(truth, cfg.nodes, rng, cfg.tracker_hz, cfg.tracker_at_contacts)
    flood = _flood_batch(truth, plan, cfg.seed) if 4 in cfg.nodes else None
    batches += [
        _hello_batch(timeline, cfg, truth),
        _heartbeat_batch(timeline, cfg, plan, end_s),
        _sync_batch(timeline, cfg, plan, rng, start_s, end_s),
        *_status_batches(cfg, plan, rng, start_s, end_s),
        *([flood] if flood is not None else []),
    ]
    f = _Frames.of(batches, timeline)
    order = _queue(f, _reaching_the_hub(f, timeline, plan, start_s, end_s), end_s - start_s + 10.0)
    sent, drop_t = _stall(f, order, plan)
    node_us = np.zeros(len(f.node), np.int64)
    node_us[sent] = np.floor(timeline.ticks(f.node[sent], f.stamp[sent])).astype(np.int64)
    frames, hub_records = _encode(f, sent, node_us, drop_t, timeline)

    wire = sent[np.lexsort((f.stamp[sent], f.ready[sent]))]
    wire_frames = [frames[g] for g in wire]
    if signing is not None:
        wire_frames = [signing.sign_chunk(frame) for frame in wire_frames]
    link_bytes = np.array([len(b) for b in wire_frames], float)
    link_bytes[f.note[wire] == FLOODED] = 0.0  # a flood rides a faster link beside the match
    wire_s = _serialise(f.ready[wire], link_bytes)
    chunks, chunk_frame, damaged = damage(wire_frames, wire_s, plan, rng)
    truth_rows = _frame_truth(f, wire, node_us, wire_s, timeline)
    if plan.attacks:
        chunks, chunk_frame = attack(
            chunks, chunk_frame, wire_s, truth_rows, plan, signing is not None
        )

    truth_rows["note"][damaged] = DAMAGED
    lengths = np.array([len(c) for c in chunks], np.int64)
    is_frame = chunk_frame >= 0
    truth_rows["offset"][chunk_frame[is_frame]] = (np.cumsum(lengths) - lengths)[is_frame]
    truth_rows["length"][chunk_frame[is_frame]] = lengths[is_frame]
    # garbage leaves right after the frame before it
    chunk_s = np.where(is_frame, wire_s[np.maximum(chunk_frame, 0)], np.nan)
    chunk_s = np.maximum.accumulate(np.nan_to_num(chunk_s, nan=start_s))
    return Wire(
        chunks=chunks,
        chunk_s=chunk_s,
        chunk_frame=chunk_frame,
        truth=truth_rows,
        hub_records=[hub_records[g] for g in wire],
        timeline=timeline,
        config=cfg,
        plan=plan,
        start_s=start_s,
        end_s=end_s,
    )


def _hub_us(timeline: Timeline, boot: np.ndarray, t_s: np.ndarray) -> np.ndarray:
    """Hub clock of the given boot at ``t_s`` (NaN stays NaN)."""
    out = np.full(len(t_s), np.nan)
    for b in np.unique(boot):
        sel = (boot == b) & np.isfinite(t_s)
        out[sel] = timeline.boots[b].hub_us(t_s[sel])
    return out


ACK_OK, ACK_UNKNOWN, ACK_BAD_ARGUMENT = 0, 1, 2
_RECENT_SEQS = 32


@dataclass
class HostCommands:
    """The hub's side of host frames (ICD §5), free of any I/O or clock.

    ``receive`` returns the ACK payload to send (or ``None``: not a frame
    the hub answers) and whether a HELLO must follow.  A retransmission of
    a ``seq`` already applied is acknowledged again but applied once.  The
    lamp: ``hold_ms`` > 0 shows the state that long, then the lamp goes
    back to what it showed before.
    """

    indicator: int = INDICATOR_STATES["off"]
    rx_bad: int = 0
    signs: bool = False  # firmware 1.2: takes SETUP_SIGNING (ICD §9); before it, "unknown type"
    #: the SETUP_SIGNING applied last: (key, require); the peer's nodes sign from then on
    signing: tuple[bytes, int] | None = None
    _recent: list[int] = field(default_factory=list)
    _hold: tuple[int, float] | None = None  # (state to go back to, until true s)

    def lamp(self, now_s: float) -> int:
        if self._hold is not None and now_s >= self._hold[1]:
            self.indicator, self._hold = self._hold[0], None
        return self.indicator

    def _signed_enough(self, frame: Message) -> bool:
        """ICD §9: with ``require`` bit 15 the hub takes only host frames signed with its
        key (SETUP_SIGNING aside: it brings the key)."""
        if self.signing is None or not self.signing[1] & (1 << 15):
            return True
        if frame.name == "SETUP_SIGNING":
            return True
        if frame.signature is None:
            return False
        flags = frame.flags & ~FLAG_SIGNED  # built plain, then the header as it was sent
        part = build_body(
            frame.msg_type, node=frame.node, seq=frame.seq, t_us=frame.t_us, flags=flags,
            **frame.fields,
        )[:-4]  # fmt: skip
        part = part[:3] + bytes([frame.flags]) + part[4:]
        return tag_of(self.signing[0], part, frame.signature.sig_ctr) == frame.signature.tag

    def receive(
        self, frame: Message | BadFrame | UnknownFrame, now_s: float
    ) -> tuple[dict[str, int] | None, bool]:
        if isinstance(frame, BadFrame):
            self.rx_bad = min(self.rx_bad + 1, U16)
            return None, False
        ack = {"acked_seq": frame.seq, "acked_type": frame.msg_type, "status": ACK_OK}
        if isinstance(frame, UnknownFrame) or frame.node != HOST_NODE or frame.msg_type < 0x80:
            return {**ack, "status": ACK_UNKNOWN}, False
        if not self._signed_enough(frame):
            return {**ack, "status": ACK_BAD_ARGUMENT}, False
        repeated = bool(frame.flags & 1) and frame.seq in self._recent
        if not repeated:
            self._recent = [*self._recent[-_RECENT_SEQS + 1 :], frame.seq]
        if frame.name == "SET_INDICATOR":
            state, hold_ms = frame.fields["state"], frame.fields["hold_ms"]
            if state not in INDICATOR_STATES.values():
                return {**ack, "status": ACK_BAD_ARGUMENT}, False
            if not repeated:
                before = self.lamp(now_s)
                self._hold = (before, now_s + hold_ms / 1000) if hold_ms else None
                self.indicator = state
            return ack, False
        if frame.name == "SETUP_SIGNING":
            if not self.signs:
                return {**ack, "status": ACK_UNKNOWN}, False
            self.signing = (frame.fields["key"], frame.fields["require"])
            return ack, False
        return ack, frame.name == "REQUEST_HELLO" and not repeated
