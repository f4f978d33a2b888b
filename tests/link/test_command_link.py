"""Host commands with ACK/retry (ICD §5): the pure scheduler on a fake clock, then the
threaded link against a responder on the far end of a real pty, in real time."""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_host.link.command_link import (
    ACK_TIMEOUT_NS,
    CommandLink,
    CommandScheduler,
    HealthChange,
    LinkHealth,
    Outcome,
    indicator_state,
)
from firmware_host.link.transport import Backoff, Chunk, SerialTransport
from protocol.catalogue import BY_NAME, FLAG_RETRANSMISSION, HOST_NODE
from protocol.framing import Message, encode_frame, parse_frame

MS = 1_000_000


def wire(frame: bytes) -> Message:
    msg = parse_frame(frame[:-1])
    assert isinstance(msg, Message), msg
    return msg


def run_until_done(s: CommandScheduler, acks_after: int | None, start_ns: int = 0):
    """Drive one submitted command; ACK from the ``acks_after``-th transmission (0-based)."""
    now, sent, done = start_ns, [], []
    while not done:
        step = s.poll(now_ns=now)
        sent += [wire(f) for f in step.frames]
        done += step.done
        if step.frames and acks_after is not None and len(sent) > acks_after:
            s.on_ack(sent[-1].seq, sent[-1].msg_type, 0, now_ns=now + MS)
            done += s.poll(now_ns=now + MS).done
        now = s.next_deadline_ns() or now
    return sent, done


# -- the pure scheduler --------------------------------------------------------


@pytest.mark.parametrize(
    ("acks_after", "outcome", "transmissions"),
    [
        (0, Outcome.ACKED, 1),  # healthy hub
        (1, Outcome.ACKED, 2),
        (2, Outcome.ACKED, 3),  # the two first frames lost
        (3, Outcome.ACKED, 4),  # the last resend is still good
        (None, Outcome.NO_ACK, 4),  # 1 + 3 and no more
    ],
)
def test_resends_the_same_frame_flagged_until_acked_or_three_resends(
    acks_after, outcome, transmissions
):
    s = CommandScheduler(first_seq=41)
    s.submit("SET_INDICATOR", {"state": 3, "rule": 15, "hold_ms": 0}, now_ns=7_000 * MS, handle="h")
    sent, done = run_until_done(s, acks_after, start_ns=7_000 * MS)
    ((handle, result),) = done
    assert (handle, result.outcome, result.transmissions) == ("h", outcome, transmissions)
    assert len(sent) == transmissions
    assert {(m.seq, m.t_us, m.node) for m in sent} == {(41, 7_000_000, HOST_NODE)}
    assert [m.flags for m in sent] == [0] + [FLAG_RETRANSMISSION] * (transmissions - 1)
    assert all(m.fields == {"state": 3, "rule": 15, "hold_ms": 0} for m in sent)
    assert s.poll(now_ns=10**12).frames == []  # nothing more, ever


def test_resends_are_spaced_by_the_ack_timeout_and_failure_comes_after_the_last():
    s = CommandScheduler()
    s.submit("PING", {"token": 1}, now_ns=0)
    times = []
    now = 0
    while True:
        step = s.poll(now_ns=now)
        times += [now] * len(step.frames)
        if step.done:
            break
        assert s.poll(now_ns=now + ACK_TIMEOUT_NS - 1) == type(step)()  # not a nanosecond early
        now = s.next_deadline_ns()
    assert times == [0, 50 * MS, 100 * MS, 150 * MS]
    assert step.done[0][1].done_ns == 200 * MS


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(0, Outcome.ACKED), (1, Outcome.REFUSED), (2, Outcome.REFUSED), (3, Outcome.REFUSED)],
)
def test_any_ack_ends_the_command_and_proves_the_link(status, outcome):
    s = CommandScheduler()
    s.submit("PING", {"token": 9}, now_ns=0)
    (frame,) = s.poll(now_ns=0).frames
    assert s.on_ack(wire(frame).seq, BY_NAME["PING"].msg_type, status, now_ns=3 * MS)
    step = s.poll(now_ns=3 * MS)
    ((_, result),) = step.done
    assert (result.outcome, result.status, result.round_trip_ns) == (outcome, status, 3 * MS)
    assert [h.health for h in step.health] == [LinkHealth.OK]


@pytest.mark.parametrize(
    ("acked_seq", "acked_type", "matches"),
    [(5, 0x82, True), (4, 0x82, False), (6, 0x82, False), (5, 0x80, False)],
)
def test_only_an_ack_naming_the_frame_in_flight_counts(acked_seq, acked_type, matches):
    s = CommandScheduler(first_seq=5)
    s.submit("PING", {"token": 9}, now_ns=0)
    s.poll(now_ns=0)
    assert s.on_ack(acked_seq, acked_type, 0, now_ns=MS) is matches
    assert s.stats.stray_acks == (0 if matches else 1)
    assert bool(s.poll(now_ns=MS).done) is matches


def test_one_command_in_flight_and_seq_wraps():
    s = CommandScheduler(first_seq=0xFFFF)
    for token in (1, 2):
        s.submit("PING", {"token": token}, now_ns=0)
    (first,) = s.poll(now_ns=0).frames
    assert s.poll(now_ns=MS).frames == []  # the second waits for the first
    s.on_ack(0xFFFF, 0x82, 0, now_ns=2 * MS)
    (second,) = s.poll(now_ns=2 * MS).frames
    assert (wire(first).seq, wire(second).seq) == (0xFFFF, 0)
    assert (wire(first).fields["token"], wire(second).fields["token"]) == (1, 2)


def test_a_queued_indicator_is_superseded_by_a_newer_one_but_the_frame_in_flight_is_not():
    s = CommandScheduler()
    steps = []
    for state in (1, 2, 3):
        s.submit("SET_INDICATOR", {"state": state, "rule": 0, "hold_ms": 0}, now_ns=0, handle=state)
        steps.append(s.poll(now_ns=0))
    assert [wire(f).fields["state"] for st_ in steps for f in st_.frames] == [1]
    assert [(h, r.outcome, r.seq) for st_ in steps for h, r in st_.done] == [
        (2, Outcome.SUPERSEDED, None)
    ]
    s.on_ack(0, 0x80, 0, now_ns=MS)
    step = s.poll(now_ns=MS)
    assert [wire(f).fields["state"] for f in step.frames] == [3]
    assert wire(step.frames[0]).seq == 1  # the superseded command burnt no seq


def test_health_is_reported_once_per_change():
    s = CommandScheduler()
    seen: list[LinkHealth] = []
    now = 0
    for acks_after in (None, None, 0, 0, None):
        s.submit("PING", {"token": 0}, now_ns=now)
        while True:
            step = s.poll(now_ns=now)
            seen += [h.health for h in step.health]
            if step.done:
                break
            if step.frames and acks_after is not None:
                s.on_ack(wire(step.frames[0]).seq, 0x82, 0, now_ns=now)
            else:
                now = s.next_deadline_ns()
    assert seen == [LinkHealth.FAILED, LinkHealth.OK, LinkHealth.FAILED]


def test_close_settles_every_pending_command():
    s = CommandScheduler()
    for token in (1, 2):
        s.submit("PING", {"token": token}, now_ns=0, handle=token)
    s.poll(now_ns=0)
    step = s.close(now_ns=MS)
    assert [(h, r.outcome, r.transmissions) for h, r in step.done] == [
        (1, Outcome.CLOSED, 1),
        (2, Outcome.CLOSED, 0),
    ]
    assert s.idle


@pytest.mark.parametrize(
    ("name", "fields", "ok"),
    [
        ("PING", {"token": 2**32 - 1}, True),
        ("PING", {"token": 2**32}, False),
        ("PING", {"token": -1}, False),
        ("PING", {}, False),
        ("REQUEST_HELLO", {}, True),
        ("HELLO", {}, False),  # table -> host only
        ("NO_SUCH", {}, False),
    ],
)
def test_a_bad_command_fails_in_the_caller_not_on_the_wire(name, fields, ok):
    s = CommandScheduler()
    if ok:
        s.submit(name, fields, now_ns=0)
    else:
        with pytest.raises(ValueError, match=name):
            s.submit(name, fields, now_ns=0)
    assert s.idle is not ok and s.stats.submitted == int(ok)


@pytest.mark.parametrize(("state", "number"), [("off", 0), ("foul", 3), ("fault", 6), (4, 4)])
def test_indicator_state_by_name_or_number(state, number):
    assert indicator_state(state) == number


def test_unknown_indicator_state_name_is_refused():
    with pytest.raises(ValueError, match="glow"):
        indicator_state("glow")


@settings(max_examples=60, deadline=None)
@given(
    losses=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=8),
    first_seq=st.integers(0, 0xFFFF),
)
def test_every_command_gets_one_outcome_and_new_frames_count_up_by_one(losses, first_seq):
    """Property: whatever the hub loses, each command ends exactly once, within 1 + 3 frames,
    and the host's seq rises by one per new frame (resends repeat it)."""
    s = CommandScheduler(first_seq=first_seq)
    for i in range(len(losses)):
        s.submit("PING", {"token": i}, now_ns=0, handle=i)
    now, sent, done = 0, [], []
    while len(done) < len(losses):
        step = s.poll(now_ns=now)
        done += step.done
        for frame in step.frames:
            msg = wire(frame)
            sent.append(msg)
            attempt = sum(m.seq == msg.seq for m in sent) - 1
            if not losses[msg.fields["token"]][attempt]:
                s.on_ack(msg.seq, msg.msg_type, 0, now_ns=now)
        now = s.next_deadline_ns() or now
    assert sorted(h for h, _ in done) == list(range(len(losses)))
    for handle, result in done:
        expect_ok = not all(losses[handle])
        assert result.ok is expect_ok
        assert result.transmissions == (losses[handle].index(False) + 1 if expect_ok else 4)
    new = [m.seq for m in sent if not m.flags & FLAG_RETRANSMISSION]
    assert new == [(first_seq + k) & 0xFFFF for k in range(len(losses))]


# -- the threaded link over a real pty, in real time --------------------------------


class Responder:
    """The hub's side of the command link on the pty master: decodes host frames and
    ACKs them, except the ones ``ignore`` says to drop."""

    def __init__(self, master: int, ignore: Callable[[int], bool]) -> None:
        self.master = master
        self.ignore = ignore
        self.received: list[tuple[int, Message]] = []  # (monotonic_ns, message)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        buf, seq = b"", 0
        while not self._stop.is_set():
            if not select.select([self.master], [], [], 0.01)[0]:
                continue
            buf += os.read(self.master, 4096)
            *frames, buf = buf.split(b"\x00")
            for raw in filter(None, frames):
                msg = parse_frame(raw)
                assert isinstance(msg, Message)
                self.received.append((time.monotonic_ns(), msg))
                if not self.ignore(len(self.received) - 1):
                    ack = encode_frame(
                        "ACK",
                        seq=seq,
                        t_us=seq * 1000,
                        acked_seq=msg.seq,
                        acked_type=msg.msg_type,
                        status=0,
                    )
                    os.write(self.master, ack)
                    seq += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(1.0)


class AckFeeder:
    """What the daemon's decoder does for the link: find ACK frames in the chunks."""

    def __init__(self) -> None:
        self.link: CommandLink | None = None
        self._buf = b""

    def __call__(self, chunk: Chunk) -> None:
        self._buf += chunk.data
        *frames, self._buf = self._buf.split(b"\x00")
        for raw in filter(None, frames):
            msg = parse_frame(raw)
            if isinstance(msg, Message) and msg.name == "ACK" and self.link is not None:
                self.link.on_ack(
                    msg.fields["acked_seq"], msg.fields["acked_type"], msg.fields["status"]
                )


@pytest.fixture
def pty_link() -> Iterator[Callable[[Callable[[int], bool]], tuple[CommandLink, Responder, list]]]:
    master, slave = os.openpty()
    feeder = AckFeeder()
    transport = SerialTransport(
        os.ttyname(slave), on_chunk=feeder, backoff=Backoff(0.01, 0.05)
    ).open()
    assert transport.wait_open(2.0)
    started: list = []

    def make(ignore: Callable[[int], bool]):
        health: list[HealthChange] = []
        link = CommandLink(transport.write, on_health=health.append).start()
        feeder.link = link
        responder = Responder(master, ignore)
        started.append((link, responder))
        return link, responder, health

    yield make
    for link, responder in started:
        link.close()
        responder.stop()
    transport.close()
    os.close(master)
    os.close(slave)


def test_healthy_hub_acks_the_first_frame(pty_link):
    link, responder, health = pty_link(lambda i: False)
    result = link.set_indicator("foul", rule=15).result(timeout=1.0)
    assert (result.outcome, result.transmissions, result.status) == (Outcome.ACKED, 1, 0)
    assert result.round_trip_ns < ACK_TIMEOUT_NS
    ((_, msg),) = responder.received
    assert (msg.name, msg.node, msg.flags, msg.fields["state"]) == (
        "SET_INDICATOR",
        HOST_NODE,
        0,
        3,
    )
    assert [h.health for h in health] == [LinkHealth.OK]


def test_two_lost_frames_are_resent_with_the_same_seq_and_flag_then_acked(pty_link):
    link, responder, _ = pty_link(lambda i: i < 2)
    result = link.call("PING", token=0xC0FFEE, timeout_s=1.0)
    assert (result.outcome, result.transmissions) == (Outcome.ACKED, 3)
    msgs = [m for _, m in responder.received]
    assert [(m.seq, m.flags, m.t_us) for m in msgs] == [
        (msgs[0].seq, f, msgs[0].t_us) for f in (0, 1, 1)
    ]
    gaps_ms = [(b - a) / MS for (a, _), (b, _) in zip(responder.received, responder.received[1:])]
    assert all(40 <= g < 250 for g in gaps_ms), gaps_ms


def test_a_silent_hub_gets_exactly_four_frames_then_the_link_is_reported_failed(pty_link):
    link, responder, health = pty_link(lambda i: True)
    result = link.request_hello().result(timeout=1.0)
    time.sleep(0.1)  # two more ACK timeouts: no fifth frame may follow
    assert (result.outcome, result.transmissions) == (Outcome.NO_ACK, 4)
    assert len(responder.received) == 4
    assert {m.seq for _, m in responder.received} == {result.seq}
    assert 200 * MS <= result.round_trip_ns < 600 * MS
    assert [(h.health, h.name) for h in health] == [(LinkHealth.FAILED, "REQUEST_HELLO")]
    assert link.health is LinkHealth.FAILED


def test_commands_after_close_resolve_as_closed_instead_of_raising():
    written: list[bytes] = []
    link = CommandLink(written.append)
    pending = link.ping(1)  # never started: close() must still settle it
    link.close()
    late = link.set_indicator("off")
    assert [f.result(0).outcome for f in (pending, late)] == [Outcome.CLOSED, Outcome.CLOSED]
    assert written == []
