"""The virtual table's firmware 1.2 (ICD §9): its nodes sign once the host has set a key.

Like a real node, each keeps its ``sig_ctr`` in non-volatile memory so it
never goes back, not even after a reboot or a restart of the simulator; and
like real flash, that memory is written seldom: a block of
:data:`RESERVE` counters is reserved at a time (the stored value is the
first counter of the next block), so a restart skips at most one block and
never reuses a counter.

>>> signer = NodeSigning(bytes(32), require=1 << 3)
>>> from protocol.framing import encode_frame, parse_frame
>>> wire = signer.sign_chunk(encode_frame("CUE_CONTACT", seq=1, duration_us=5, peak_force_dn=6))
>>> parse_frame(wire[:-1]).signature.sig_ctr
1
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cobs import cobs

from protocol.framing import DELIMITER
from protocol.signing import require_bit, sign_body

RESERVE = 1000  # counters taken per write of the node's non-volatile memory


class NodeSigning:
    """Every node of one table under one key: ``sign_chunk`` signs a wire frame of a node in
    ``require`` and leaves the others as they are.  ``nvm``: the file standing for the
    nodes' non-volatile memory (none: the counters start at 1)."""

    def __init__(self, key: bytes, require: int, nvm: Path | None = None) -> None:
        self.key = key
        self.require = require
        self.nvm = nvm
        self._next: dict[int, int] = {}
        self._ceiling: dict[int, int] = {}
        if nvm is not None and nvm.exists():
            self._next = {int(n): int(c) for n, c in json.loads(nvm.read_text()).items()}

    def sign_chunk(self, chunk: bytes) -> bytes:
        """One encoded frame (COBS + delimiter), signed if its node must sign."""
        body = cobs.decode(chunk[: -len(DELIMITER)])
        if not self.require & require_bit(body[2]):
            return chunk
        return cobs.encode(sign_body(self.key, body[:-4], self._counter(body[2]))) + DELIMITER

    def _counter(self, node: int) -> int:
        ctr = self._next.get(node, 1)
        if ctr >= self._ceiling.get(node, 0):
            self._ceiling[node] = ctr + RESERVE
            self._save()
        self._next[node] = ctr + 1
        return ctr

    def _save(self) -> None:
        if self.nvm is None:
            return
        tmp = self.nvm.with_name(self.nvm.name + ".tmp")
        tmp.write_text(json.dumps({str(n): c for n, c in self._ceiling.items()}))
        os.replace(tmp, self.nvm)
