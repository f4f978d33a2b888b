"""A live link into Wireshark's fifo: what ``firmware-host extcap --capture`` writes.

Wireshark (dumpcap) starts an extcap with ``--capture --fifo PATH`` and
reads pcapng from the fifo as it comes.  Each packet is what ``pcap``
writes for a recording (:mod:`.pcap`: the link header with the decoder's
sequence mark, then the frame's wire bytes), so the generated dissector
shows a live link exactly as it shows a recording, expert info included.
The stream decoder runs on the bytes as they are read: a frame is a
packet once its delimiter has come, stamped with the host's wall clock at
that read.
"""

from __future__ import annotations

import queue
import time
from typing import BinaryIO

from protocol.decoder import StreamDecoder

from ..link.transport import SerialTransport
from .listing import WireBytes
from .pcap import TO_HOST, link_header
from .pcapng import INBOUND, PcapngWriter
from .recording import JOINED, WHOLE, joined_bytes

POLL_S = 0.2


class LivePackets:
    """Chunks of a live stream in, pcapng packets out (one per frame, bad ones too)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.writer = PcapngWriter(out)
        self.decoder = StreamDecoder()
        self.wire = WireBytes()
        self.first_byte: int | None = None
        self.packets = 0
        # the host's wall clock against its monotonic one (reads are stamped monotonic)
        self._epoch_ns = time.time_ns() - time.monotonic_ns()

    def feed(self, data: bytes, host_rx_ns: int) -> None:
        if self.first_byte is None and data:
            self.first_byte = data[0]
        self.wire.feed(data)
        decoded = self.decoder.feed(data)
        frames = decoded.frames
        ends = self.wire.ends(frames["offset"])
        for row, end in zip(frames, ends.tolist(), strict=True):
            offset = int(row["offset"])
            joined = offset == 0 and joined_bytes(row, self.first_byte or 0) > 0
            head = link_header(TO_HOST, offset, int(row["seq_mark"]), int(row["seq_gap"]),
                               JOINED if joined else WHOLE)  # fmt: skip
            self.writer.packet(head + self.wire.frame(offset, end), self._epoch_ns + host_rx_ns,
                               direction=INBOUND)  # fmt: skip
            self.packets += 1


def capture(url: str, baud: int, fifo: str) -> None:
    """Read ``url`` into ``fifo`` until Wireshark stops (closes the fifo or ends us)."""
    transport = SerialTransport(url, baudrate=baud).open()
    try:
        with open(fifo, "wb", buffering=0) as out:  # unbuffered: each packet goes at once
            packets = LivePackets(out)
            while True:
                try:
                    chunk = transport.chunks.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                packets.feed(chunk.data, chunk.host_rx_ns)
    except BrokenPipeError:
        return  # Wireshark closed the fifo: the capture stopped
    except SystemExit:
        return  # Wireshark ended us (SIGTERM): the capture stopped, no error to show
    finally:
        transport.close()
