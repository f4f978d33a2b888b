"""The transport through real file descriptors: a pty pair, a local TCP peer, loop://."""

from __future__ import annotations

import grp
import logging
import os
import pwd
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import tty
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from proc_util import as_nobody

from firmware_host.link.transport import (
    Backoff,
    Chunk,
    LinkState,
    LinkStatus,
    SerialTransport,
    access_problem,
    low_latency,
)

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


def _pty_numbered(path: str) -> tuple[int, int]:
    """A new pty at ``path``: the kernel gives the lowest free number, so the one just freed."""
    held = []
    try:
        for _ in range(8):  # another test may take the number first: then the next one freed
            master, slave = os.openpty()
            if os.ttyname(slave) == path:
                return master, slave
            held.append((master, slave))
        pytest.skip(f"{path} was not given out again here")
    finally:
        for fd in (fd for pair in held for fd in pair):
            os.close(fd)


def test_a_closed_pty_is_gone_and_its_number_given_to_another_program_is_left_alone():
    master, slave = os.openpty()
    path = os.ttyname(slave)
    os.close(slave)  # the table holds only its side: the number frees when that closes
    statuses = StatusLog()
    link = SerialTransport(path, on_status=statuses, backoff=FAST).open()
    try:
        statuses.wait_for(LinkState.OPEN)
        mark = len(statuses)
        os.close(master)  # the table's side is gone: the slave reads EIO
        gone = statuses.wait_for(LinkState.GONE, after=mark)
        assert "not reopened" in gone.error and not link.is_open
        stranger, its_slave = _pty_numbered(path)  # a shell, another virtual table
        try:
            tty.setraw(its_slave)
            sent = bytes(range(1, 256)) * 8
            os.write(stranger, sent)
            time.sleep(0.3)  # FAST backoff: dozens of reopen attempts, were there any
            os.set_blocking(its_slave, False)
            got = b""
            with suppress(BlockingIOError):
                while len(got) < len(sent):
                    got += os.read(its_slave, 4096)
            assert got == sent  # every byte its own, none taken by us
            assert link.stats.opens == 1 and not link.write(b"SET_INDICATOR")
            assert [s.state for s in statuses.items[mark:]] == [LinkState.GONE]
        finally:
            os.close(stranger)
            os.close(its_slave)
    finally:
        t0 = time.monotonic()
        link.close()
    assert time.monotonic() - t0 < 1.0
    assert statuses.items[-1].state is LinkState.CLOSED
    assert link.stats.losses == 1


def test_a_symlink_to_a_pty_is_reopened_when_the_bridge_points_it_at_a_new_one(pty_pair, tmp_path):
    master, path = pty_pair
    link_path = tmp_path / "table"  # socat's pty,link=...
    link_path.symlink_to(path)
    statuses = StatusLog()
    with SerialTransport(str(link_path), on_status=statuses, backoff=FAST) as link:
        statuses.wait_for(LinkState.OPEN)
        mark = len(statuses)
        os.close(master)
        lost = statuses.wait_for(LinkState.LOST, after=mark)
        assert lost.error
        statuses.wait_for(LinkState.CONNECTING, after=mark)
        again, slave = os.openpty()  # the bridge restarted: a new pty, the link moved to it
        try:
            link_path.unlink()
            link_path.symlink_to(os.ttyname(slave))
            statuses.wait_for(LinkState.OPEN, after=mark)
            os.write(again, b"second")
            assert b"".join(c.data for c in collect(link, 6)) == b"second"
            # counted while the new pty is up: closing it below is a second loss, which the
            # reader may see before the transport is closed
            assert link.stats.opens == 2 and link.stats.losses == 1
        finally:
            os.close(again)
            os.close(slave)


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


# -- a real serial port: issue 24 -------------------------------------------------------------


def _open_as_nobody(path: str) -> str:
    """What a terminal program or ModemManager, run by another user, gets from open(2)."""
    done = subprocess.run(
        ["/bin/sh", "-c", f"exec 3<>'{path}' && echo opened"],
        preexec_fn=as_nobody_now,
        capture_output=True,
        text=True,
        check=False,
    )
    return (done.stdout + done.stderr).strip()


def as_nobody_now() -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


def test_while_the_daemon_has_the_port_no_other_program_can_open_it(pty_pair):
    _, path = pty_pair
    os.chmod(path, 0o666)  # anyone may open it: only the exclusive mode can refuse
    assert _open_as_nobody(path) == "opened"
    with SerialTransport(path) as link:
        assert link.wait_open(2.0)
        assert "Device or resource busy" in _open_as_nobody(path)
    assert _open_as_nobody(path) == "opened", "released when the transport closed"


def fake_sysfs(tmp_path: Path, device: str, timer_ms: int) -> Path:
    """/sys as the ftdi_sio driver lays it out: dev/char/MAJ:MIN/device/latency_timer."""
    rdev = os.stat(device).st_rdev
    port = tmp_path / "sys" / "dev" / "char" / f"{os.major(rdev)}:{os.minor(rdev)}" / "device"
    port.mkdir(parents=True)
    (port / "latency_timer").write_text(f"{timer_ms}\n")
    return tmp_path / "sys"


def test_the_ftdi_latency_timer_is_set_to_1_ms_when_the_port_opens(pty_pair, tmp_path, caplog):
    _, path = pty_pair
    sysfs = fake_sysfs(tmp_path, path, 16)
    logs = caplog.at_level(logging.INFO, logger="firmware_host.transport")
    with logs, SerialTransport(path, sysfs=sysfs) as link:
        assert link.wait_open(2.0)
    timer = next(sysfs.rglob("latency_timer"))
    assert timer.read_text().strip() == "1"
    assert f"{path}: USB latency timer 16 ms -> 1 ms" in caplog.messages


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory anyone may read (pytest's tmp_path is under a root-only one)."""
    where = Path(tempfile.mkdtemp(prefix="fh-sysfs-"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where)


def test_an_unprivileged_daemon_says_how_to_set_the_latency_timer(pty_pair, open_dir):
    _, path = pty_pair
    sysfs = fake_sysfs(open_dir, path, 16)  # the file is root's, 0644, as in sysfs
    level, text = as_nobody(low_latency, path, sysfs)
    assert level == logging.WARNING
    assert "USB latency timer 16 ms" in text and "service install --udev" in text
    assert next(sysfs.rglob("latency_timer")).read_text().strip() == "16"


def test_a_device_without_a_latency_timer_is_left_alone(pty_pair, tmp_path):
    _, path = pty_pair
    assert low_latency(path, tmp_path) is None  # a CDC-ACM hub, a pty: nothing to set


def test_an_absent_device_is_waited_for_with_a_line_every_few_seconds(tmp_path, pty_pair, caplog):
    """A USB adapter that enumerates late: the daemon waits, saying so, and opens it."""
    _, pty_path = pty_pair
    late = tmp_path / "by-id" / "usb-FTDI_FT232R_USB_UART_A10K-if00-port0"
    statuses = StatusLog()
    logs = caplog.at_level(logging.WARNING, logger="firmware_host.transport")
    link = SerialTransport(str(late), on_status=statuses, backoff=FAST, wait_report_s=0.2)
    with logs, link:
        time.sleep(1.1)
        waiting = [m for m in caplog.messages if "waiting" in m]
        late.parent.mkdir()
        late.symlink_to(pty_path)  # udev made the link: the adapter is there
        statuses.wait_for(LinkState.OPEN, timeout_s=5.0)
        assert link.is_open
    assert "open failed (attempt 1)" in waiting[0] and waiting[0].endswith("waiting for it")
    reminders = [m for m in waiting if "still waiting for the port" in m]
    assert 3 <= len(reminders) <= 6, waiting  # one every 0.2 s of the 1.1 s


def test_a_device_the_user_may_not_open_names_its_group(pty_pair):
    _, path = pty_pair
    dialout = grp.getgrnam("dialout")
    os.chown(path, 0, dialout.gr_gid)
    os.chmod(path, 0o660)
    said = as_nobody(access_problem, path)
    assert said == (
        "permission denied: the device belongs to group dialout, and user nobody is not in it "
        "(sudo usermod -aG dialout nobody, then log in again)"
    )
    assert access_problem(path) is None  # root may
