"""The transport through real file descriptors: a pty pair, a local TCP peer, loop://."""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from firmware_host.transport import Backoff, Chunk, LinkState, LinkStatus, SerialTransport

FAST = Backoff(initial_s=0.01, max_s=0.05)


class StatusLog:
    """Collects LinkStatus reports and lets a test wait for one."""

    def __init__(self) -> None:
        self.items: list[LinkStatus] = []
        self._cond = threading.Condition()

    def __call__(self, status: LinkStatus) -> None:
        with self._cond:
            self.items.append(status)
            self._cond.notify_all()

    def wait_for(self, state: LinkState, *, after: int = 0, timeout_s: float = 2.0) -> LinkStatus:
        with self._cond:
            ok = self._cond.wait_for(
                lambda: any(s.state is state for s in self.items[after:]), timeout_s
            )
            assert ok, f"no {state} in {self.items[after:]}"
            return next(s for s in self.items[after:] if s.state is state)

    def __len__(self) -> int:
        with self._cond:
            return len(self.items)


class TcpPeer:
    """A one-connection TCP server on a fixed port that can vanish and come back."""

    def __init__(self, port: int = 0) -> None:
        self.server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.port = self.server.getsockname()[1]
        self.conn: socket.socket | None = None
        self._accepted = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            self.conn, _ = self.server.accept()
        except OSError:
            return
        self._accepted.set()

    def connected(self, timeout_s: float = 2.0) -> socket.socket:
        assert self._accepted.wait(timeout_s), "the transport never connected"
        assert self.conn is not None
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.server.close()


def collect(link: SerialTransport, n_bytes: int, timeout_s: float = 2.0) -> list[Chunk]:
    chunks: list[Chunk] = []
    deadline = time.monotonic() + timeout_s
    while sum(len(c.data) for c in chunks) < n_bytes:
        chunks.append(link.chunks.get(timeout=max(0.0, deadline - time.monotonic())))
    return chunks


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, str]]:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    yield master, path
    for fd in (master, slave):
        try:
            os.close(fd)
        except OSError:
            pass  # the test already closed it ("unplugged")


def test_bytes_from_a_pty_arrive_in_order_with_monotonic_host_rx_ns(pty_pair):
    master, path = pty_pair
    with SerialTransport(path, backoff=FAST) as link:
        assert link.wait_open(2.0)
        before = time.monotonic_ns()
        sent = b""
        for i in range(5):
            piece = bytes([0, i, 0x55, 0xAA, 0x11]) * (i + 1)  # raw bytes, zeros included
            os.write(master, piece)
            sent += piece
            time.sleep(0.005)
        chunks = collect(link, len(sent))
        after = time.monotonic_ns()
    assert b"".join(c.data for c in chunks) == sent
    stamps = [c.host_rx_ns for c in chunks]
    assert stamps == sorted(stamps)
    assert before <= stamps[0] and stamps[-1] <= after
    assert link.stats.rx_bytes == len(sent)


def test_write_reaches_the_other_end_of_the_pty(pty_pair):
    master, path = pty_pair
    with SerialTransport(path) as link:
        assert link.wait_open(2.0)
        assert link.write(b"\x00\x01host\x00")
        got = b""
        while len(got) < 7:
            got += os.read(master, 64)
    assert got == b"\x00\x01host\x00"
    assert link.stats.tx_bytes == 7


def test_write_with_no_port_is_refused_as_a_value_and_the_open_failure_reported():
    statuses = StatusLog()
    with SerialTransport("/dev/does-not-exist", on_status=statuses, backoff=FAST) as link:
        failure = statuses.wait_for(LinkState.CONNECTING, after=1)
        assert not link.write(b"x")
    assert failure.error and failure.attempt == 1
    assert link.stats.tx_refused == 1
    assert statuses.items[-1].state is LinkState.CLOSED


def test_a_second_host_on_the_same_port_is_refused_not_fed_half_the_bytes(pty_pair):
    _, path = pty_pair
    statuses = StatusLog()
    with SerialTransport(path) as first:
        assert first.wait_open(2.0)
        with SerialTransport(path, on_status=statuses, backoff=FAST) as second:
            refused = statuses.wait_for(LinkState.CONNECTING, after=1)
            assert not second.is_open
    assert "lock" in refused.error


def test_closing_the_pty_master_is_reported_as_lost_and_retried_until_closed(pty_pair):
    master, path = pty_pair
    statuses = StatusLog()
    link = SerialTransport(path, on_status=statuses, backoff=FAST).open()
    try:
        statuses.wait_for(LinkState.OPEN)
        mark = len(statuses)
        os.close(master)  # the "cable" is gone: the slave reads EIO
        lost = statuses.wait_for(LinkState.LOST, after=mark)
        statuses.wait_for(LinkState.CONNECTING, after=mark)
        assert lost.error
        assert not link.is_open
        assert not link.write(b"x")
        assert link._supervisor is not None and link._supervisor.is_alive()
    finally:
        t0 = time.monotonic()
        link.close()
    assert time.monotonic() - t0 < 1.0
    assert statuses.items[-1].state is LinkState.CLOSED
    assert link.stats.losses == 1


def test_socket_peer_vanishing_is_reported_and_the_link_reconnects_when_it_returns():
    statuses = StatusLog()
    peer = TcpPeer()
    url = f"socket://127.0.0.1:{peer.port}"
    with SerialTransport(url, on_status=statuses, backoff=FAST) as link:
        # pyserial's socket:// discards what arrived before open() returned: wait for OPEN.
        statuses.wait_for(LinkState.OPEN)
        peer.connected().sendall(b"first")
        assert b"".join(c.data for c in collect(link, 5)) == b"first"

        mark = len(statuses)
        peer.close()
        statuses.wait_for(LinkState.LOST, after=mark)
        time.sleep(0.05)  # a few failed reopen attempts while the device is gone
        assert not link.write(b"lost")

        mark = len(statuses)
        peer = TcpPeer(peer.port)
        statuses.wait_for(LinkState.OPEN, after=mark)
        conn = peer.connected()
        conn.sendall(b"second")
        assert b"".join(c.data for c in collect(link, 6)) == b"second"
        assert link.write(b"back")
        assert conn.recv(16) == b"back"
    peer.close()
    assert link.stats.opens == 2 and link.stats.losses == 1


def test_a_raising_chunk_callback_does_not_kill_the_reader():
    seen: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    calls = []

    def flaky(chunk: Chunk) -> None:
        calls.append(chunk)
        if len(calls) == 1:
            raise ValueError("consumer bug")
        seen.put(chunk.data)

    with SerialTransport("loop://", on_chunk=flaky) as link:
        assert link.wait_open(2.0)
        link.write(b"boom")
        time.sleep(0.02)
        link.write(b"fine")
        got = b""
        while not got.endswith(b"fine"):
            got += seen.get(timeout=1.0)
        assert link.is_open
    assert link.stats.callback_errors == 1
