"""Random valid traffic for every message type, for tests and benchmarks.

Field values come from the record dtypes (so every field the catalogue
defines gets exercised, at its full range); frames are encoded by the bulk
encoder.  This is wire-level noise with correct per-node ``seq`` counters and
clocks that run forward within every rate limit (:mod:`.ratelimit`: no frame
of it is a flood), not a table: the virtual table (``firmware_host.virtual_table``) makes
realistic matches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .catalogue import MESSAGES, NODE_IDS, NODE_NAMES
from .encode import encode_records
from .layout import COUNTED, GREEDY, layout

# µs of its node's clock between two frames of a node: the hub's 1 s (its HEARTBEAT's
# rate), the tracker's 5 ms (under its 240 frames/s), every other node's 2 ms
_HUB_STEP_US, _TRACKER_STEP_US, _STEP_US = 1_000_000, 5_000, 2_000
_TEXT = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz 0123456789.:-", np.uint8)


def random_records(msg_type: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n records of one type with every payload field drawn over its range."""
    lay = layout(msg_type)
    rec = np.zeros(n, lay.dtype)
    raw = rec.view(np.uint8).reshape(n, lay.dtype.itemsize)
    fields: Any = lay.dtype.fields or {}
    for name in lay.payload_names:
        start, size = fields[name][1], fields[name][0].itemsize
        raw[:, start : start + size] = rng.integers(0, 256, (n, size), dtype=np.uint8)
    if lay.rule == COUNTED:
        rec["count"] = rng.integers(0, lay.spec.max_items + 1, n)
        items = rec[lay.payload_names[-1]]
        for i, count in enumerate(rec["count"]):
            items[i, count:] = 0
    elif lay.rule == GREEDY:
        name = lay.payload_names[-1]
        lengths = rng.integers(0, lay.spec.max_items + 1, n)
        rec[name] = [_TEXT[rng.integers(0, len(_TEXT), k)].tobytes() for k in lengths]
    rec["node"] = lay.spec.node if lay.spec.node is not None else rng.choice(list(NODE_NAMES), n)
    rec["t_us"] = rng.integers(0, 2**32, n, dtype=np.uint64)
    return rec


def mixed_frames(n_frames: int, seed: int = 0) -> list[bytes]:
    """Frames of every type in random order, each node's seq counting up."""
    rng = np.random.default_rng(seed)
    types = np.array([spec.msg_type for spec in MESSAGES])
    # Mostly the high-rate sensor traffic, like a real table.
    weights = np.where((types >= 0x10) & (types < 0x80), 3.0, 1.0)
    choice = types[rng.choice(len(types), n_frames, p=weights / weights.sum())]
    records = {
        int(t): random_records(int(t), int(np.count_nonzero(choice == t)), rng)
        for t in np.unique(choice)
    }
    if 0x01 in records:
        records[0x01]["boot_id"] = rng.integers(0, 2**32)  # one hub boot
    # Each node's seq counts frames in stream order, wrapping at 2^16.
    nodes = np.empty(n_frames, np.int64)
    rows = np.empty(n_frames, np.int64)
    for t, rec in records.items():
        where = np.flatnonzero(choice == t)
        nodes[where] = rec["node"]
        rows[where] = np.arange(len(where))
    order = np.argsort(nodes, kind="stable")
    first = np.searchsorted(nodes[order], nodes[order])
    seq = np.empty(n_frames, np.int64)
    seq[order] = np.arange(n_frames) - first
    # ... and its clock runs forward from a random start, within its rate limit
    base = rng.integers(0, 2**32, 256)
    step = np.full(256, _STEP_US)
    step[0], step[NODE_IDS["tracker"]] = _HUB_STEP_US, _TRACKER_STEP_US
    for t, rec in records.items():
        where = np.flatnonzero(choice == t)
        rec["seq"][rows[where]] = seq[where] & 0xFFFF
        rec["t_us"][rows[where]] = (base[nodes[where]] + seq[where] * step[nodes[where]]) % 2**32
    encoded = {t: encode_records(rec) for t, rec in records.items()}
    return [encoded[int(t)][r] for t, r in zip(choice, rows)]


def mixed_capture(n_bytes: int, seed: int = 0) -> bytes:
    """About n_bytes of mixed valid traffic (about 29 bytes a frame)."""
    return b"".join(mixed_frames(n_bytes // 29 + 1, seed))
