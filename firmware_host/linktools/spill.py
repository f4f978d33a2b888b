"""Records a streamed ``stats`` learns per boot in one pass and needs in a later one, in order.

A boot's figures are known only at its end (how many hub frames it has, a node's
latency envelope over it), and a later pass needs them as its frames come again.  Kept
in a dict they grew with every boot: forged reboots by the hundred thousand (issue 29)
made them most of the peak.  Boots come in order, so the records are written in order
and read back in order: a :class:`Spill` holds a block of them in memory and the blocks
before it in a temporary file, and a :class:`Cursor` reads them a block at a time as far
as the boot its pass has come to.  A capture of a few boots never touches the disk.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

BLOCK = 1 << 14  # records in memory (under 1 MB of any record here)


class Spill:
    """Records of one dtype, appended in the order of its first field (a boot)."""

    def __init__(self, dtype: np.dtype, block: int | None = None) -> None:
        self.block = np.empty(block or BLOCK, dtype)
        self.n = 0  # records in the block
        self.file: BinaryIO | None = None
        self.flushed = 0  # records in the file

    def append(self, records: np.ndarray) -> None:
        while len(records):
            take = min(len(self.block) - self.n, len(records))
            self.block[self.n : self.n + take] = records[:take]
            self.n += take
            records = records[take:]
            if self.n == len(self.block):
                if self.file is None:
                    self.file = tempfile.TemporaryFile(prefix="stats-")  # noqa: SIM115 - close()
                self.file.write(self.block.tobytes())
                self.flushed += self.n
                self.n = 0

    def blocks(self) -> Iterator[np.ndarray]:
        """The records in order, a block at a time (any number of readers, one after another
        or side by side: each reads at its own place)."""
        if self.file is not None:
            self.file.flush()
            size = self.block.dtype.itemsize
            for at in range(0, self.flushed, len(self.block)):
                data = os.pread(self.file.fileno(), len(self.block) * size, at * size)
                yield np.frombuffer(data, self.block.dtype)
        yield self.block[: self.n].copy()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


class Cursor:
    """A spill read as far as a boot at a time: :meth:`upto` gives the records not given yet
    whose first field is at most it."""

    def __init__(self, spill: Spill) -> None:
        self.blocks = spill.blocks()
        self.field = spill.block.dtype.names[0]
        self.pending = spill.block[:0]
        self.done = False

    def upto(self, boot: float) -> np.ndarray:
        out = []
        while True:
            i = int(np.searchsorted(self.pending[self.field], boot, side="right"))
            out.append(self.pending[:i])
            self.pending = self.pending[i:]
            if len(self.pending) or self.done:
                return np.concatenate(out)
            more = next(self.blocks, None)
            self.done = more is None
            if more is not None:
                self.pending = more
