"""A live link into a tally: the transport reads, a feeder thread decodes.

The transport's reader thread only reads and queues (it never waits for
the decoder); the feeder takes everything queued at once, so when the
decoder falls behind the chunks grow instead of the queue.
"""

from __future__ import annotations

import queue
import threading

from ..link.transport import LinkStatus, SerialTransport
from .tally import LinkTally

_POLL_S = 0.1


class LinkFeeder:
    """Opens ``url`` through :class:`SerialTransport` and feeds every chunk to ``tally``."""

    def __init__(self, url: str, baud: int, tally: LinkTally) -> None:
        self.tally = tally
        self.transport = SerialTransport(url, baudrate=baud, on_status=self._status)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, name="link feeder", daemon=True)

    def start(self) -> LinkFeeder:
        self.tally.set_link("link connecting")
        self.transport.open()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.transport.close()

    def _status(self, status: LinkStatus) -> None:
        error = f": {status.error}" if status.error else ""
        self.tally.set_link(f"link {status.state.value}{error}")

    def _feed(self) -> None:
        chunks = self.transport.chunks
        while not self._stop.is_set():
            try:
                first = chunks.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            parts, rx_ns = [first.data], first.host_rx_ns
            while not chunks.empty():
                chunk = chunks.get()
                parts.append(chunk.data)
                rx_ns = chunk.host_rx_ns
            self.tally.feed(b"".join(parts), rx_ns)
