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
def _u16(b: np.ndarray, i: int) -> int:
    return int(b[i]) | (int(b[i + 1]) << 8)


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
def _unstuff(buf: np.ndarray, i: int, out: np.ndarray) -> tuple[int, int, bool]:
    """COBS-decode from buf[i] up to the next 0x00, in one read of each byte.

    Returns (index of the delimiter or -1 if the buffer ends first, decoded
    length, False if a group ran into the delimiter: a COBS error).  ``out``
    must hold as many bytes as buf: decoding never grows the data.
    """
    size = buf.size
    j = i
    n = 0
    code = 0xFF
    while j < size:
        code = int(buf[j])
        if code == 0:
            break
        j += 1
        group_end = min(j + code - 1, size)
        while j < group_end:
            b = buf[j]
            if b == 0:
                return j, n, False
            out[n] = b
            n += 1
            j += 1
        if code < 0xFF:
            out[n] = 0  # the zero a short group stands for
            n += 1
    if j >= size:
        return -1, n, False
    if code < 0xFF and n:
        n -= 1  # the last group's zero is the delimiter itself
    return j, n, True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def prescan(buf: np.ndarray, bound: np.ndarray) -> int:
    """Count delimiters, and per msg_type the frames that may be of it.

    A good frame's msg_type is always its third byte on the wire (version and
    type are non-zero, so COBS leaves them in place), so ``bound`` is an upper
    bound of each type's good frames: enough to size every table before the
    scan writes records straight into them.
    """
    delimiters = 0
    start = 0
    words = buf.size // 8
    w64 = buf[: words * 8].view(np.uint64)
    ones = np.uint64(0x0101010101010101)
    highs = np.uint64(0x8080808080808080)
    w = 0
    while w * 8 < buf.size:
        if w < words and (w64[w] - ones) & ~w64[w] & highs == 0:
            w += 1
            continue  # no zero byte among these eight (SWAR test)
        for i in range(8 * w, min(8 * w + 8, buf.size)):
            if buf[i] == 0:
                delimiters += 1
                if i - start > 2:
                    bound[buf[start + 2]] += 1
                start = i + 1
        w += 1
    return delimiters


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
    frames: np.ndarray,
    per_type: np.ndarray,
    region: np.ndarray,
    rec_size: np.ndarray,
    records: np.ndarray,
    raw: np.ndarray,
) -> tuple[int, int]:
    """Decode every complete frame of buf; returns (frames, bytes consumed).

    Each good frame is written straight into its record: type t's records
    start at ``records[region[t]]``, ``rec_size[t]`` bytes each, in arrival
    order (the frame's ``row``; ``per_type`` counts them).  ``records`` must
    start zeroed (padding of variable-length payloads stays zero).  Unknown
    types keep their body in ``raw`` (``row`` = start).

    ``base`` is the stream offset of buf[0]; ``overflow_start`` >= 0 says the
    bytes before buf's first delimiter continue an over-long run that began
    at that offset (the caller dropped its start to bound memory).
    """
    scratch = np.empty(buf.size + 1, np.uint8)
    n = 0
    i = 0
    r = 0
    size = buf.size
    while i < size:
        end, body_len, cobs_ok = _unstuff(buf, i, scratch)
        if end < 0:
            break  # the frame goes on in the next chunk
        length = end - i
        frame_offset = base + i
        status = OK
        if overflow_start >= 0:
            status = BAD_LENGTH
            frame_offset = overflow_start
            length = base + end - overflow_start
            overflow_start = -1
        elif length == 0:
            i = end + 1
            continue
        elif length > MAX_ENCODED:
            status = BAD_LENGTH
        elif not cobs_ok:
            status = BAD_COBS
        elif body_len < MIN_BODY or body_len > MAX_BODY:
            status = BAD_LENGTH
        else:
            data_len = body_len - 4
            if np.int64(crc32(scratch, 0, data_len, tables)) != _u32(scratch, data_len):
                status = BAD_CRC
            elif scratch[0] != PROTOCOL_VERSION:
                status = BAD_VERSION
            else:
                body_len = data_len
                status = _payload_status(scratch, 0, body_len, rules)
        f = frames[n]
        f["offset"] = frame_offset
        f["row"] = -1
        if status >= BAD_COBS:
            bad[status - BAD_COBS] += 1
            f["length"] = length
            f["msg_type"] = 0
            f["node"] = 0
            f["flags"] = 0
            f["seq"] = 0
            f["t_us"] = 0
        else:
            msg_type = scratch[1]
            node = scratch[2]
            seq = _u16(scratch, 4)
            f["msg_type"] = msg_type
            f["node"] = node
            f["flags"] = scratch[3]
            f["seq"] = seq
            f["t_us"] = _u32(scratch, 6)
            f["length"] = body_len
            if msg_type == _HELLO and status == OK and node == 0:
                boot_id = _u32(scratch, _BOOT_ID_AT)
                if boot[0] == 0 or boot[1] != boot_id:
                    if boot[0] != 0:
                        misc[M_BOOTS] += 1
                        seq_state[:, :] = 0
                    boot[0] = 1
                    boot[1] = boot_id
            if not _account(node, seq, (scratch[3] & 1) != 0, seq_state, lost):
                status = DUPLICATE
                misc[M_DUPLICATES] += 1
            elif status == UNKNOWN:
                misc[M_UNKNOWN] += 1
                f["row"] = r
                raw[r : r + body_len] = scratch[:body_len]
                r += body_len
            else:
                row = per_type[msg_type]
                f["row"] = row
                per_type[msg_type] += 1
                misc[M_FRAMES] += 1
                d = region[msg_type] + row * rec_size[msg_type]
                for k in range(PREFIX_SIZE - 1):
                    records[d + k] = (frame_offset >> (8 * k)) & 0xFF
                records[d + PREFIX_SIZE - 1] = body_len - HEADER_SIZE
                d += PREFIX_SIZE
                for k in range(body_len):
                    records[d + k] = scratch[k]
        f["status"] = status
        n += 1
        i = end + 1
    return n, i
