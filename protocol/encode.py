"""Bulk encoder: numpy records (the catalogue-derived dtypes) into wire frames.

The virtual table emits hundreds of thousands of frames; building each with
construct costs tens of microseconds.  A record of :func:`protocol.layout.layout`
dtype already holds the body byte for byte, so encoding is a slice, a CRC and
COBS stuffing per frame (both in C).  ``version`` and ``msg_type`` are set
here from the dtype; ``offset`` and ``payload_len`` are ignored (the length
comes from the ICD rule).

>>> import numpy as np
>>> from protocol.layout import layout
>>> rec = np.zeros(1, layout(0x82).dtype)
>>> rec["node"], rec["seq"], rec["t_us"], rec["token"] = 0x80, 9, 12500, 0xDEADBEEF
>>> encode_records(rec)[0].hex()
'04018280020903d4300109efbeadde702e7a0100'
"""

from __future__ import annotations

import zlib

import numpy as np
from cobs import cobs

from .catalogue import HEADER_SIZE, PROTOCOL_VERSION
from .framing import DELIMITER
from .layout import COUNTED, GREEDY, PREFIX_SIZE, Layout, layout_of


def payload_lengths(records: np.ndarray, lay: Layout) -> np.ndarray:
    """Each record's payload length by its message's ICD length rule."""
    if lay.rule == COUNTED:
        return lay.base + lay.item_size * records["count"].astype(np.int64)
    if lay.rule == GREEDY:
        text = records[lay.payload_names[-1]]
        return lay.base + np.char.str_len(text).astype(np.int64)
    return np.full(len(records), lay.base, np.int64)


def encode_records(records: np.ndarray) -> list[bytes]:
    """One wire frame (COBS body + 0x00) per record, in record order."""
    lay = layout_of(records.dtype)
    records = records.copy()
    records["version"] = PROTOCOL_VERSION
    records["msg_type"] = lay.spec.msg_type
    lengths = HEADER_SIZE + payload_lengths(records, lay)
    raw = records.view(np.uint8).reshape(len(records), records.dtype.itemsize)
    frames = []
    for row, n in zip(raw, lengths.tolist()):
        data = row[PREFIX_SIZE : PREFIX_SIZE + n].tobytes()
        frames.append(cobs.encode(data + zlib.crc32(data).to_bytes(4, "little")) + DELIMITER)
    return frames
