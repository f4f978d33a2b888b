"""The CRC-32 of the frame trailer (ICD §3): the slicing-by-8 tables the decoder's kernel reads.

Made once at import from the polynomial, so no table of magic numbers is kept
by hand; ``protocol.kernels.crc32`` folds eight bytes a step with them.
"""

from __future__ import annotations

import numpy as np


def crc_tables() -> np.ndarray:
    """Slicing-by-8 tables for CRC-32/ISO-HDLC (reflected 0xEDB88320)."""
    t = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        t[0, i] = c
    for k in range(1, 8):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t


CRC_TABLES = crc_tables()
