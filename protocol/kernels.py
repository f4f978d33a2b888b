"""numba kernels of the bulk decoder: find frames, un-stuff, check, account.

One pass over a uint8 array finds every 0x00-delimited frame, COBS-decodes
it into a compact body buffer, checks length, CRC-32 (slicing-by-8),
version and the payload-length rule of its msg_type (a table derived from
the construct catalogue, :func:`protocol.layout.rule_table`), and keeps the
per-node ``seq`` accounting.  All state lives in arrays the caller owns, so
the same kernel serves a whole capture and a live stream fed chunk by chunk.
"""

from __future__ import annotations

import numba
import numpy as np

from .catalogue import HEADER_SIZE, MAX_BODY, MIN_BODY, PROTOCOL_VERSION
from .layout import PREFIX_SIZE

# Bytes between two delimiters of the longest valid frame: a 254-byte body
# needs one COBS code byte.
MAX_ENCODED = MAX_BODY + 1

# Frame status codes in the frame table.
OK, UNKNOWN, DUPLICATE = 0, 1, 2
BAD_COBS, BAD_CRC, BAD_LENGTH, BAD_VERSION, BAD_PAYLOAD = 10, 11, 12, 13, 14
BAD_REASONS = ("cobs", "crc", "length", "version", "payload length")

# Rule table columns (protocol.layout.rule_table).
_KNOWN, _RULE, _BASE, _ITEM, _COUNT_AT, _MAX_ITEMS = range(6)
_COUNTED, _GREEDY = 1, 2

# seq_state columns per node
_HAS, _LAST, _WINDOW = 0, 1, 2
WINDOW_BITS = 64  # a retransmission up to 63 frames late is still recognised

# misc counters
M_FRAMES, M_UNKNOWN, M_DUPLICATES, M_BOOTS = range(4)

_HELLO = 0x01
_BOOT_ID_AT = HEADER_SIZE + 4  # HELLO.boot_id; checked against the catalogue in tests


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


@numba.njit(cache=True, nogil=True, boundscheck=False)
def crc32(buf: np.ndarray, start: int, n: int, t: np.ndarray) -> np.uint32:
    crc = np.uint32(0xFFFFFFFF)
    i = start
    end = start + n
    while end - i >= 8:
        one = crc ^ (
            np.uint32(buf[i])
            | (np.uint32(buf[i + 1]) << 8)
            | (np.uint32(buf[i + 2]) << 16)
            | (np.uint32(buf[i + 3]) << 24)
        )
        crc = (
            t[7, one & 0xFF]
            ^ t[6, (one >> 8) & 0xFF]
            ^ t[5, (one >> 16) & 0xFF]
            ^ t[4, one >> 24]
            ^ t[3, buf[i + 4]]
            ^ t[2, buf[i + 5]]
            ^ t[1, buf[i + 6]]
            ^ t[0, buf[i + 7]]
        )
        i += 8
    while i < end:
        crc = t[0, (crc ^ buf[i]) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def cobs_decode(buf: np.ndarray, start: int, end: int, out: np.ndarray, o: int) -> int:
    """Un-stuff buf[start:end] into out[o:]; the decoded length, or -1."""
    i = start
    n = 0
    while i < end:
        code = np.int64(buf[i])
        i += 1
        if i + code - 1 > end:
            return -1
        for k in range(code - 1):
            out[o + n] = buf[i + k]
            n += 1
        i += code - 1
        if code < 0xFF and i < end:
            out[o + n] = 0
            n += 1
    return n


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _u16(b: np.ndarray, i: int) -> int:
    return np.int64(b[i]) | (np.int64(b[i + 1]) << 8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _u32(b: np.ndarray, i: int) -> int:
    return _u16(b, i) | (_u16(b, i + 2) << 16)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _payload_status(b: np.ndarray, s: int, body_len: int, rules: np.ndarray) -> int:
    msg_type = b[s + 1]
    if rules[msg_type, _KNOWN] == 0:
        return UNKNOWN
    n = body_len - HEADER_SIZE
    base = rules[msg_type, _BASE]
    rule = rules[msg_type, _RULE]
    if rule == _COUNTED:
        if n < base:
            return BAD_PAYLOAD
        count = b[s + HEADER_SIZE + rules[msg_type, _COUNT_AT]]
        if count > rules[msg_type, _MAX_ITEMS] or n != base + count * rules[msg_type, _ITEM]:
            return BAD_PAYLOAD
    elif rule == _GREEDY:
        if n < base or n > base + rules[msg_type, _MAX_ITEMS] * rules[msg_type, _ITEM]:
            return BAD_PAYLOAD
    elif n != base:
        return BAD_PAYLOAD
    return OK


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _account(node: int, seq: int, retx: bool, seq_state: np.ndarray, lost: np.ndarray) -> bool:
    """Per-node seq bookkeeping; False for a retransmission already delivered."""
    if seq_state[node, _HAS] == 0:
        seq_state[node, _HAS] = 1
        seq_state[node, _LAST] = seq
        seq_state[node, _WINDOW] = 1
        return True
    last = seq_state[node, _LAST]
    window = np.uint64(seq_state[node, _WINDOW])
    d = (seq - last) & 0xFFFF
    if d == 0:
        return not retx
    if d < 0x8000:  # ahead: the frames in between were lost
        lost[node] += d - 1
        if d >= WINDOW_BITS:
            window = np.uint64(1)
        else:
            window = (window << np.uint64(d)) | np.uint64(1)
        seq_state[node, _LAST] = seq
        seq_state[node, _WINDOW] = np.int64(window)
        return True
    back = 0x10000 - d
    if retx and back < WINDOW_BITS:
        bit = np.uint64(1) << np.uint64(back)
        if window & bit:
            return False
        seq_state[node, _WINDOW] = np.int64(window | bit)
        lost[node] -= 1  # a frame counted lost has arrived after all
        return True
    # Far behind and not a retransmission: the node restarted its counter.
    seq_state[node, _LAST] = seq
    seq_state[node, _WINDOW] = 1
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def scan(
    buf: np.ndarray,
    base: int,
    overflow_start: int,
    rules: np.ndarray,
    tables: np.ndarray,
    seq_state: np.ndarray,
    boot: np.ndarray,
    lost: np.ndarray,
    bad: np.ndarray,
    misc: np.ndarray,
    f_offset: np.ndarray,
    f_status: np.ndarray,
    f_start: np.ndarray,
    f_len: np.ndarray,
    bodies: np.ndarray,
) -> tuple[int, int]:
    """Decode every complete frame of buf; returns (frames, bytes consumed).

    ``base`` is the stream offset of buf[0]; ``overflow_start`` >= 0 says the
    bytes before buf's first delimiter continue an over-long run that began
    at that offset (the caller dropped its start to bound memory).
    """
    n = 0
    o = 0
    run = 0
    consumed = 0
    for i in range(buf.size):
        if buf[i] != 0:
            continue
        end = i
        length = end - run
        frame_offset = base + run
        status = -1
        if overflow_start >= 0:
            status = BAD_LENGTH
            frame_offset = overflow_start
            length = base + end - overflow_start
            overflow_start = -1
        elif length == 0:
            run = i + 1
            consumed = run
            continue
        elif length > MAX_ENCODED:
            status = BAD_LENGTH
        body_len = 0
        if status < 0:
            body_len = cobs_decode(buf, run, end, bodies, o)
            if body_len < 0:
                status = BAD_COBS
            elif body_len < MIN_BODY or body_len > MAX_BODY:
                status = BAD_LENGTH
            else:
                data_len = body_len - 4
                want = _u32(bodies, o + data_len)
                if np.int64(crc32(bodies, o, data_len, tables)) != want:
                    status = BAD_CRC
                elif bodies[o] != PROTOCOL_VERSION:
                    status = BAD_VERSION
                else:
                    body_len = data_len
                    status = _payload_status(bodies, o, body_len, rules)
        f_offset[n] = frame_offset
        f_start[n] = o
        if status >= BAD_COBS:
            bad[status - BAD_COBS] += 1
            f_len[n] = length
        else:
            f_len[n] = body_len
            node = bodies[o + 2]
            if bodies[o + 1] == _HELLO and status == OK and node == 0:
                boot_id = _u32(bodies, o + _BOOT_ID_AT)
                if boot[0] == 0 or boot[1] != boot_id:
                    if boot[0] != 0:
                        misc[M_BOOTS] += 1
                        seq_state[:, :] = 0
                    boot[0] = 1
                    boot[1] = boot_id
            fresh = _account(node, _u16(bodies, o + 4), (bodies[o + 3] & 1) != 0, seq_state, lost)
            if not fresh:
                status = DUPLICATE
                misc[M_DUPLICATES] += 1
            elif status == UNKNOWN:
                misc[M_UNKNOWN] += 1
            else:
                misc[M_FRAMES] += 1
            o += body_len
        f_status[n] = status
        n += 1
        run = i + 1
        consumed = run
    return n, consumed


@numba.njit(cache=True, nogil=True, boundscheck=False)
def gather(
    bodies: np.ndarray,
    starts: np.ndarray,
    lens: np.ndarray,
    offsets: np.ndarray,
    out: np.ndarray,
) -> None:
    """Copy each checked body into its record: offset, payload length, body."""
    for r in range(starts.size):
        off = offsets[r]
        for k in range(PREFIX_SIZE - 1):
            out[r, k] = (off >> (8 * k)) & 0xFF
        out[r, PREFIX_SIZE - 1] = lens[r] - HEADER_SIZE
        s = starts[r]
        for k in range(lens[r]):
            out[r, PREFIX_SIZE + k] = bodies[s + k]
