"""The virtual table as a real wire peer on a pseudo-terminal.

:class:`VirtualHub` plays a :class:`~.hub.Wire` in real time (or ``speed``
times faster) on the master side of a pty; anything that opens the slave
device (the daemon, pyserial, minicom) sees a table.  Every write is
scheduled from one start time -- chunk k leaves at ``start + (t_k - t_0) /
speed`` -- so delays never accumulate.  Host frames are answered with ACK
within a loop turn (well under the ICD's 20 ms); hub frames (node 0) are
encoded at send time so that ACKs take their place in the hub's ``seq``
count and HEARTBEAT shows the lamp the host set.

>>> with VirtualHub(wire) as hub:          # doctest: +SKIP
...     port = serial.Serial(hub.device)
"""

from __future__ import annotations

import errno
import os
import selectors
import threading
import time
import tty
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Self

import numpy as np

from protocol.catalogue import BY_NAME
from protocol.encode import encode_records
from protocol.framing import encode_frame, parse_frame

from .hub import HostCommands, Wire
from .sensors import FLOODED
from .signer import NodeSigning

HEARTBEAT = BY_NAME["HEARTBEAT"].msg_type
LINGER_S = 1.0  # after the match: still answering the host (and draining) this long
OUT_BUFFER = 64 * 1024  # bytes the hub holds when nobody reads the port; beyond, it drops
#: a flooding tracker (faults.py) fills its own queue, never the whole hub's: its frames are
#: dropped once half the buffer is taken, so the other nodes' frames still find room
FLOOD_SHARE = OUT_BUFFER // 2


class VirtualHub:
    """A table on a pty; ``rewire(n)`` gives the wire of the n-th loop (``loop=True``)."""

    def __init__(
        self,
        wire: Wire,
        speed: float = 1.0,
        rewire: Callable[[int], Wire] | None = None,
        wait_for_host: bool = False,
        on_played: Callable[[], object] | None = None,
        nvm: Path | None = None,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.wire = wire
        self.wait_for_host = wait_for_host  # boot only once a host has written to the port
        # called when the last wire's last chunk is sent, while the hub still answers the
        # host for LINGER_S: `simulate --pty` says "match over" then, so a host that stops
        # on it still has its lamp commands acknowledged
        self.on_played = on_played
        self.speed = speed
        self.rewire = rewire
        self.commands = self._commands()
        self.nvm = nvm  # the nodes' non-volatile memory: their sig_ctr survive a restart
        self.signing: NodeSigning | None = None  # after a SETUP_SIGNING (firmware 1.2)
        self.tx_dropped = 0
        self.acks_sent = 0
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.device = os.ttyname(self._slave)
        self._out = bytearray()
        self._rx = bytearray()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._extra_seq = 0  # frames the hub added in this boot: they shift its later seq values
        self._hub_seq = 0  # the next hub seq
        self._boot = 0

    # -- lifetime -------------------------------------------------------
    def start(self) -> Self:
        """Play in a background thread (for in-process tests)."""
        self._thread = threading.Thread(target=self.run, name="virtual-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        self.stop()
        for fd in (self._master, self._slave):
            with suppress(OSError):  # closed twice
                os.close(fd)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def finished(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    # -- the loop -------------------------------------------------------
    def run(self) -> None:
        """Play the wire (and its loops) until it ends or :meth:`stop` is called."""
        if self.wait_for_host:
            with selectors.DefaultSelector() as sel:
                sel.register(self._master, selectors.EVENT_READ)
                while not self._stop.is_set() and not sel.select(0.05):
                    pass
        loop = 0
        while not self._stop.is_set():
            rewire = self.rewire
            self._play(self.wire, linger_s=LINGER_S if rewire is None else 0.0)
            if rewire is None or self._stop.is_set():
                break
            loop += 1
            self.wire = rewire(loop)

    def _true_s(self, wire: Wire, started: float) -> float:
        return wire.start_s + (time.monotonic() - started) * self.speed

    def _play(self, wire: Wire, linger_s: float) -> None:
        """Send every chunk on time; then keep answering the host for ``linger_s``."""
        started = time.monotonic()
        self._extra_seq, self._hub_seq, self._boot = 0, 0, 0
        self.commands = self._commands()  # a (re)boot: the lamp starts off
        sel = selectors.DefaultSelector()
        sel.register(self._master, selectors.EVENT_READ)
        frame = np.maximum(wire.chunk_frame, 0)
        flood = ((wire.chunk_frame >= 0) & (wire.truth["note"][frame] == FLOODED)).tolist()
        try:
            k = 0
            while k < len(wire.chunks) and not self._stop.is_set():
                now_s = self._true_s(wire, started)
                while k < len(wire.chunks) and wire.chunk_s[k] <= now_s:
                    self._queue(self._chunk(wire, k, now_s), flush=False, flood=flood[k])
                    k += 1
                if self._out:  # everything due in one write, as a UART would have it buffered
                    self._flush()
                due = (wire.chunk_s[k] - now_s) / self.speed if k < len(wire.chunks) else 0.0
                self._turn(sel, wire, started, timeout=min(max(due, 0.0), 0.05))
            if linger_s and self.on_played is not None and not self._stop.is_set():
                self.on_played()
            end = time.monotonic() + linger_s
            while time.monotonic() < end and not self._stop.is_set():
                self._turn(sel, wire, started, timeout=0.02)
        finally:
            sel.close()

    def _turn(
        self, sel: selectors.BaseSelector, wire: Wire, started: float, timeout: float
    ) -> None:
        sel.modify(self._master, selectors.EVENT_READ | (selectors.EVENT_WRITE if self._out else 0))
        for _, mask in sel.select(timeout):
            if mask & selectors.EVENT_READ:
                self._read(wire, started)
            if mask & selectors.EVENT_WRITE:
                self._flush()

    # -- bytes out ------------------------------------------------------
    def _queue(self, data: bytes, flush: bool = True, flood: bool = False) -> None:
        if len(self._out) + len(data) > (FLOOD_SHARE if flood else OUT_BUFFER):
            self.tx_dropped += 1
            return
        self._out += data
        if flush:
            self._flush()

    def _flush(self) -> None:
        try:
            n = os.write(self._master, self._out)
        except BlockingIOError:
            return
        except OSError as exc:  # EIO: no slave side any more
            if exc.errno != errno.EIO:
                raise
            return
        del self._out[:n]

    def _commands(self) -> HostCommands:
        """The hub's command handling after a (re)boot; signing survives it (ICD §9)."""
        return HostCommands(signs=self.wire.config.firmware >= (1, 2, 0))

    def _chunk(self, wire: Wire, k: int, now_s: float) -> bytes:
        """Chunk k as it leaves now, signed once a host has set a key (a forger's, frame
        -1, never is)."""
        frame = int(wire.chunk_frame[k])
        chunk = self._hub_chunk(wire, k, now_s) if frame >= 0 else wire.chunks[k]
        key = self.commands.signing
        if key is not None and (self.signing is None or self.signing.key != key[0]):
            self.signing = NodeSigning(key[0], key[1], self.nvm)
        if self.signing is not None and frame >= 0:
            return self.signing.sign_chunk(chunk)
        return chunk

    def _hub_chunk(self, wire: Wire, k: int, now_s: float) -> bytes:
        """Chunk k as it leaves now: hub frames get the live seq and lamp state."""
        frame = int(wire.chunk_frame[k])
        if wire.hub_records[frame] is None:
            return wire.chunks[k]
        boot = int(wire.truth["boot"][frame])
        if boot != self._boot:  # a hub reboot: counters and the lamp start afresh
            self._boot, self._extra_seq, self.commands = boot, 0, self._commands()
        rec = np.array([wire.hub_records[frame]])
        rec["seq"] = (int(rec["seq"][0]) + self._extra_seq) & 0xFFFF
        self._hub_seq = (int(rec["seq"][0]) + 1) & 0xFFFF
        if int(wire.truth["msg_type"][frame]) == HEARTBEAT:
            rec["indicator"] = self.commands.lamp(now_s)
            rec["rx_bad"] = self.commands.rx_bad
            rec["tx_dropped"] = min(int(rec["tx_dropped"][0]) + self.tx_dropped, 0xFFFF)
        return encode_records(rec)[0]

    # -- bytes in -------------------------------------------------------
    def _read(self, wire: Wire, started: float) -> None:
        try:
            data = os.read(self._master, 4096)
        except (BlockingIOError, OSError):
            return
        self._rx += data
        while b"\x00" in self._rx:
            raw, _, rest = bytes(self._rx).partition(b"\x00")
            self._rx = bytearray(rest)
            if raw:
                self._answer(parse_frame(raw), wire, started)

    def _answer(self, frame: object, wire: Wire, started: float) -> None:
        now_s = self._true_s(wire, started)
        ack, hello = self.commands.receive(frame, now_s)  # type: ignore[arg-type]
        if ack is None or not wire.plan.acks_at(now_s) or wire.plan.stalled_at(now_s):
            return
        boot = wire.timeline.boots[self._boot]
        hub_us = int(boot.hub_us(now_s))
        seq = self._next_hub_seq()
        self._queue(encode_frame("ACK", seq=seq, t_us=hub_us, **ack))
        self.acks_sent += 1
        if hello:
            first = int(np.flatnonzero(wire.truth["msg_type"] == 0x01)[self._boot])
            rec = np.array([wire.hub_records[first]])
            rec["seq"], rec["t_us"] = self._next_hub_seq(), hub_us & 0xFFFFFFFF
            self._queue(encode_records(rec)[0])

    def _next_hub_seq(self) -> int:
        """A seq for a frame the hub adds (ACK, HELLO): pre-built hub frames after it move up."""
        seq = self._hub_seq
        self._hub_seq = (seq + 1) & 0xFFFF
        self._extra_seq += 1
        return seq
