"""numba kernels of the bulk decoder: find frames, un-stuff, check, account.

One pass over a uint8 array finds every 0x00-delimited frame, COBS-decodes
it into a compact body buffer, checks length, CRC-32 (slicing-by-8),
version and the payload-length rule of its msg_type (a table derived from
the construct catalogue, :func:`protocol.layout.rule_table`), and keeps the
per-node ``seq`` accounting.  All state lives in arrays the caller owns, so
the same kernel serves a whole capture and a live stream fed chunk by chunk.

The arrays come in three NamedTuples, one per concern: :class:`FrameChecks`
(what a frame is checked against), :class:`StreamAccounts` (the stream's
counters and seq windows, kept across chunks) and :class:`FrameTables` (the
output of one scan).  :func:`scan` is the driver; each step it calls takes
only the arrays it touches.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from .catalogue import FLAG_SIGNED, HEADER_SIZE, MAX_BODY, MIN_BODY, PROTOCOL_VERSION, SIG_TRAILER
from .layout import PREFIX_SIZE
from .ratelimit import CALM, FLOOD, TAKE, admit, flood_from, rate_class
from .seqwindow import CONFLICT, GAP, LATE, NONE, REBOOT, account, reuses_newest
from .seqwindow import DUPLICATE as SEQ_DUPLICATE
from .seqwindow import HAS as SEQ_HAS

# Bytes between two delimiters of the longest valid frame: a 254-byte body
# needs one COBS code byte.
MAX_ENCODED = MAX_BODY + 1

# Frame status codes in the frame table.  HELD: a frame the signature check must see
# before it counts (ICD §9, protocol.signing); it leaves the decoder as OK, DUPLICATE or
# one of the three refusals.
# OVER_RATE: a frame its node's rate limit dropped (protocol.ratelimit), never a record.
OK, UNKNOWN, DUPLICATE, HELD, UNSIGNED, BAD_TAG, REPLAYED, OVER_RATE = 0, 1, 2, 3, 4, 5, 6, 7
REFUSALS = ("unsigned", "bad_tag", "replayed")  # statuses UNSIGNED, BAD_TAG, REPLAYED
BAD_COBS, BAD_CRC, BAD_LENGTH, BAD_VERSION, BAD_PAYLOAD = 10, 11, 12, 13, 14
BAD_REASONS = ("cobs", "crc", "length", "version", "payload length")

# Rule table columns (protocol.layout.rule_table).
_KNOWN, _RULE, _BASE, _ITEM, _COUNT_AT, _MAX_ITEMS = range(6)
_COUNTED, _GREEDY = 1, 2

# misc counters
M_FRAMES, M_UNKNOWN, M_DUPLICATES, M_BOOTS, M_CONFLICTS = range(5)
MISC_COUNTERS = 5
# A record's flags bit the host sets (the wire's is always 0, ICD §3): its frame reused the
# seq of its node's newest frame with other content (seqwindow.CONFLICT).
RECORD_CONFLICT = 0x80

_HELLO = 0x01
_BOOT_ID_AT = HEADER_SIZE + 4  # HELLO.boot_id; checked against the catalogue in tests


class FrameChecks(NamedTuple):
    """What every frame is checked against; read only, the same for every stream.

    ``rules``: int64 (256, 6), per msg_type the payload-length rule
    (:func:`protocol.layout.rule_table`, columns ``_KNOWN`` … ``_MAX_ITEMS``).
    ``crc_tables``: uint32 (8, 256), the slicing-by-8 tables (``protocol.crc.CRC_TABLES``).
    ``rate_limits``: int64 (``ratelimit.CLASSES``, 3), each class's rate, burst and calm
    time (:data:`protocol.ratelimit.LIMITS`).
    """

    rules: np.ndarray
    crc_tables: np.ndarray
    rate_limits: np.ndarray


class StreamAccounts(NamedTuple):
    """A stream's running accounts, carried from chunk to chunk; all int64.

    ``hold`` (256,): per node, which frames wait for the signature check
    (:mod:`protocol.signing`) instead of being taken: 0 none (no key), 1 every
    frame (the node must sign), 2 its signed frames only.
    ``seq_state`` (256, ``seqwindow.STATE_COLUMNS``): per node its window of
    recent seqs (:mod:`protocol.seqwindow`, the one rule of gap, late,
    duplicate and restart).  ``boot`` (2,): [a hub HELLO seen, its
    boot_id].  ``lost`` (256,): frames lost per node.  ``bad``
    (len(BAD_REASONS),): bad frames per reason.  ``misc`` (MISC_COUNTERS,): the
    ``M_*`` counters (frames, unknown, duplicates, hub reboots, seq conflicts).
    ``last_crc`` (256,): per node the CRC of its newest frame, the content a
    frame reusing its seq is compared with; ``last_body`` uint8 (256,
    MAX_BODY) and ``last_len`` (256,): that frame's header and payload, for
    the report of a conflict, kept only for the nodes ``keep_prior`` (256,)
    names (the radio nodes: copying every tracker frame cost the decoder a
    fifth of its time).  ``conflicts`` (256,): seq conflicts per node.
    ``rate`` (``ratelimit.CLASSES``, ``ratelimit.STATE_COLUMNS``): each rate class's
    bucket (:mod:`protocol.ratelimit`); ``over_rate`` (256,): frames dropped per node.
    """

    seq_state: np.ndarray
    boot: np.ndarray
    lost: np.ndarray
    bad: np.ndarray
    misc: np.ndarray
    hold: np.ndarray
    last_crc: np.ndarray
    last_body: np.ndarray
    last_len: np.ndarray
    keep_prior: np.ndarray
    conflicts: np.ndarray
    rate: np.ndarray
    over_rate: np.ndarray


class FrameTables(NamedTuple):
    """Where one scan writes what it decodes; sized by the caller from :func:`prescan`.

    ``frames``: the frame table (``protocol.decoder.FRAME_DTYPE``), one row per
    delimiter.  ``records``: uint8, zeroed; type t's records start at
    ``region[t]`` and are ``rec_size[t]`` bytes each (int64 (256,) both);
    ``per_type`` (int64 (256,)) counts them.  ``raw``: uint8, as long as the
    buffer, the bodies of frames of unknown type, of retransmissions and of
    frames held for the signature check.
    """

    frames: np.ndarray
    per_type: np.ndarray
    region: np.ndarray
    rec_size: np.ndarray
    records: np.ndarray
    raw: np.ndarray


@numba.njit(cache=True, nogil=True, boundscheck=False)
def crc32(buf: np.ndarray, start: int, length: int, tables: np.ndarray) -> np.uint32:
    """CRC-32/ISO-HDLC (zlib's) of buf[start : start + length], with ``tables`` from ``protocol.crc``.

    The frame trailer is this CRC, so it decides whether a frame's bytes
    arrived as sent.  Slicing-by-8 folds eight bytes per step (one table
    look-up each instead of eight dependent shifts), the bulk decoder's
    hot loop; the tail goes a byte at a time.
    """
    crc = np.uint32(0xFFFFFFFF)
    i = start
    end = start + length
    while end - i >= 8:
        one = crc ^ (
            np.uint32(buf[i])
            | (np.uint32(buf[i + 1]) << 8)
            | (np.uint32(buf[i + 2]) << 16)
            | (np.uint32(buf[i + 3]) << 24)
        )
        crc = (
            tables[7, one & 0xFF]
            ^ tables[6, (one >> 8) & 0xFF]
            ^ tables[5, (one >> 16) & 0xFF]
            ^ tables[4, one >> 24]
            ^ tables[3, buf[i + 4]]
            ^ tables[2, buf[i + 5]]
            ^ tables[1, buf[i + 6]]
            ^ tables[0, buf[i + 7]]
        )
        i += 8
    while i < end:
        crc = tables[0, (crc ^ buf[i]) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _u16(data: np.ndarray, at: int) -> int:
    """The little-endian uint16 at data[at] (the wire's byte order, ICD §3)."""
    return int(data[at]) | (int(data[at + 1]) << 8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _u32(data: np.ndarray, at: int) -> int:
    """The little-endian uint32 at data[at] (the wire's byte order, ICD §3)."""
    return _u16(data, at) | (_u16(data, at + 2) << 16)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _u64(data: np.ndarray, at: int) -> np.uint64:
    """The 8 bytes at data[at] as a little-endian uint64 (a signed frame's tag, kept whole)."""
    return np.uint64(_u32(data, at)) | (np.uint64(_u32(data, at + 4)) << np.uint64(32))


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _payload_status(body: np.ndarray, start: int, body_len: int, rules: np.ndarray) -> int:
    """OK if the payload length fits its msg_type's rule, UNKNOWN for a type not in the catalogue.

    ``body_len`` is header + payload (no CRC) of the body at body[start].  The rule
    (from the construct catalogue) is fixed, counted (a count field times an
    item size, at most ``_MAX_ITEMS``) or greedy (a base and up to a maximum
    of trailing items); a length that breaks it is BAD_PAYLOAD, so the
    record dtype never reads beyond what was sent.
    """
    msg_type = body[start + 1]
    if rules[msg_type, _KNOWN] == 0:
        return UNKNOWN
    n = body_len - HEADER_SIZE
    base = rules[msg_type, _BASE]
    rule = rules[msg_type, _RULE]
    if rule == _COUNTED:
        if n < base:
            return BAD_PAYLOAD
        count = body[start + HEADER_SIZE + rules[msg_type, _COUNT_AT]]
        if count > rules[msg_type, _MAX_ITEMS] or n != base + count * rules[msg_type, _ITEM]:
            return BAD_PAYLOAD
    elif rule == _GREEDY:
        if n < base or n > base + rules[msg_type, _MAX_ITEMS] * rules[msg_type, _ITEM]:
            return BAD_PAYLOAD
    elif n != base:
        return BAD_PAYLOAD
    return OK


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _unstuff(buf: np.ndarray, start: int, out: np.ndarray) -> tuple[int, int, bool]:
    """COBS-decode from buf[start] up to the next 0x00, in one read of each byte.

    Returns (index of the delimiter or -1 if the buffer ends first, decoded
    length, False if a group ran into the delimiter: a COBS error).  ``out``
    must hold as many bytes as buf: decoding never grows the data.
    """
    size = buf.size
    j = start
    n = 0
    last_code = 0xFF  # the last group's code byte (the delimiter is not a group)
    while j < size:
        code = int(buf[j])
        if code == 0:
            break
        last_code = code
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
    if last_code < 0xFF and n:
        n -= 1  # the last short group's zero is the delimiter itself; a full block has none
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
    checks: FrameChecks,
    accounts: StreamAccounts,
    out: FrameTables,
) -> tuple[int, int]:
    """Decode every complete frame of buf; returns (frames, bytes consumed).

    Per frame: :func:`_unstuff`, :func:`_check_frame`, then :func:`_file_bad`,
    or :func:`_file_header`, its node's rate limit (:func:`_over_rate`: a frame beyond
    it is dropped, its body kept in ``out.raw`` for the printer), :func:`_note_boot`,
    :func:`seqwindow.account` and the body kept: a known type's as its next record (:func:`_write_record`), an unknown
    type's in ``out.raw`` (``row`` = start).  An unclosed frame waits for the
    next chunk.  The tuples are unpacked once, here: the per-frame steps take
    arrays and are inlined (tuples passed to them per frame measured ~20 % slower).

    ``base``: the stream offset of buf[0].  ``overflow_start`` >= 0: the bytes
    before buf's first delimiter continue an over-long run that began at that
    offset (the caller dropped its start to bound memory).
    """
    rules, crc_tables, rate_limits = checks
    frames, per_type, region, rec_size, records, raw = out
    bad, misc, hold = accounts.bad, accounts.misc, accounts.hold
    body = np.empty(buf.size + 1, np.uint8)  # the un-stuffed frame
    n = i = raw_used = 0  # frames filed, the next frame's start in buf, bytes of raw used
    while i < buf.size:
        end, body_len, cobs_ok = _unstuff(buf, i, body)
        if end < 0:
            break
        length = end - i
        frame_offset = base + i
        i = end + 1
        if overflow_start >= 0:
            status = BAD_LENGTH
            frame_offset = overflow_start
            length = base + end - overflow_start
            overflow_start = -1
        elif length == 0:
            continue  # two delimiters in a row: no frame
        else:
            status, body_len = _check_frame(body, body_len, length, cobs_ok, rules, crc_tables)
        f = frames[n]
        n += 1
        if status >= BAD_COBS:
            _file_bad(f, frame_offset, length, status, bad)
            continue
        _file_header(f, frame_offset, body, body_len)
        if _over_rate(f, body, accounts, rate_limits):  # before the signature check: its CPU
            raw_used = _keep_body(f, body, body_len, raw, raw_used)
            f["status"] = OVER_RATE
            continue
        if _held(hold, body):  # the signature check decides, then accounts it (in Python)
            raw_used = _keep_body(f, body, body_len, raw, raw_used)
            f["status"] = HELD
            continue
        rebooted = False
        if body[1] == _HELLO and status == OK and body[2] == 0:
            rebooted = _note_boot(_u32(body, _BOOT_ID_AT), accounts)
        mark, missing = _account_seq(body, body_len, accounts)
        f["seq_mark"] = REBOOT if rebooted else mark
        f["seq_gap"] = missing
        duplicate = mark == SEQ_DUPLICATE
        if duplicate or status == UNKNOWN:
            # kept as raw bytes for the printer (decode shows the wire as it is), never as a
            # record the pipeline would take twice; raw holds len(buf) >= every body's bytes
            misc[M_DUPLICATES if duplicate else M_UNKNOWN] += 1
            status = DUPLICATE if duplicate else UNKNOWN
            raw_used = _keep_body(f, body, body_len, raw, raw_used)
        else:
            misc[M_FRAMES] += 1
            if mark == CONFLICT:  # the earlier frame of that seq, for the report
                raw_used = _keep_prior(f, body[2], accounts, raw, raw_used)
                body[3] |= RECORD_CONFLICT  # the record says so (the frame table has the wire's)
            f["row"] = _write_record(
                body, body_len, frame_offset, per_type, region, rec_size, records
            )
        f["status"] = status
    return n, i


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _over_rate(
    frame: np.void, body: np.ndarray, accounts: StreamAccounts, limits: np.ndarray
) -> bool:
    """Whether its node's rate limit drops this frame (:func:`ratelimit.admit`), counted.

    The frame table's ``rate`` says what the limit did, and a flood's first frame and the
    frame that ends it carry ``mark_t``, the node's stamp the change is dated from (the
    timing core tells the fusion, which sets the node's data aside meanwhile).  A frame
    dropped never reaches the seq window, and the frame that ends a flood starts it
    afresh: what the limit dropped is counted as such, never as lost.
    """
    node = body[2]
    c = rate_class(node, body[1])
    if c < 0:
        return False
    state = accounts.rate[c]
    said = admit(state, limits[c], _u32(body, 6))
    frame["rate"] = said
    if said == TAKE:
        return False
    if said == CALM:
        frame["mark_t"] = (_u32(body, 6) - 1) & 0xFFFFFFFF
        accounts.seq_state[node, SEQ_HAS] = 0
        return False
    if said == FLOOD:
        frame["mark_t"] = flood_from(state)
    accounts.over_rate[node] += 1
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _held(hold: np.ndarray, body: np.ndarray) -> bool:
    """Whether the signature check must see this frame before it counts (ICD §9): every
    frame of a node that must sign (``hold`` 1), the signed ones of the others (2)."""
    held = hold[body[2]]
    return held == 1 or (held == 2 and body[3] & FLAG_SIGNED != 0)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _keep_body(frame: np.void, body: np.ndarray, body_len: int, raw: np.ndarray, used: int) -> int:
    """Keep a frame's header and payload in ``raw`` (its ``row`` = where); returns raw used.

    For the frames that are not records: an unknown type, a retransmission, a frame held
    for the signature check.  ``raw`` is as long as the buffer, so there is always room.
    """
    frame["row"] = used
    raw[used : used + body_len] = body[:body_len]
    return used + body_len


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _keep_prior(
    frame: np.void, node: int, accounts: StreamAccounts, raw: np.ndarray, used: int
) -> int:
    """A conflict's earlier frame (its node's newest) kept in ``raw`` at ``frame["prior"]``.

    ``raw`` is as long as the buffer; a long earlier frame after many short conflicts
    might not fit, so room is checked (``prior`` stays -1 then, as for a node whose
    frames are not kept).  Its bytes are header and payload as sent, no signed trailer.
    """
    n = accounts.last_len[node]
    if n == 0 or used + n > raw.size:  # conflicts of short frames after a long one: not all kept
        return used
    frame["prior"] = used
    frame["prior_len"] = n
    raw[used : used + n] = accounts.last_body[node, :n]
    return used + n


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _account_seq(body: np.ndarray, body_len: int, accounts: StreamAccounts) -> tuple[int, int]:
    """(seq mark, frames missing before it) of a checked frame, its node's accounts updated.

    A frame that reuses the seq of its node's newest frame with another CRC is a
    CONFLICT (two senders, one a forger): counted, and the window left as it was, so
    the genuine frames that follow still count as NEXT.  Otherwise the seq window's
    rule (:func:`seqwindow.account`), and the node's losses.
    """
    node = body[2]
    seq = _u16(body, 4)
    retx = (body[3] & 1) != 0
    crc = _u32(body, body_len + (SIG_TRAILER if body[3] & FLAG_SIGNED else 0))
    row = accounts.seq_state[node]
    if reuses_newest(row, seq, retx) and crc != accounts.last_crc[node]:
        accounts.conflicts[node] += 1
        accounts.misc[M_CONFLICTS] += 1
        return CONFLICT, 0
    mark, missing = account(row, seq, retx)
    if mark != SEQ_DUPLICATE and mark != LATE:
        accounts.last_crc[node] = crc
        if accounts.keep_prior[node]:
            accounts.last_body[node, :body_len] = body[:body_len]
            accounts.last_len[node] = body_len
    if mark == GAP:
        accounts.lost[node] += missing
    elif mark == LATE:
        accounts.lost[node] -= 1  # a frame counted lost has arrived after all
    return mark, missing


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _check_frame(
    body: np.ndarray,
    body_len: int,
    length: int,
    cobs_ok: bool,
    rules: np.ndarray,
    crc_tables: np.ndarray,
) -> tuple[int, int]:
    """A frame's status from its checks, in wire order; returns (status, header + payload bytes).

    The checks run cheapest and outermost first (length on the wire, COBS,
    body length, CRC, version, payload length), so a frame's reason is the
    first layer that fails, and the payload rule only ever sees bytes whose
    CRC matched.  The returned length drops the CRC of a good frame.
    """
    if length > MAX_ENCODED:
        return BAD_LENGTH, body_len
    if not cobs_ok:
        return BAD_COBS, body_len
    if body_len < MIN_BODY or body_len > MAX_BODY:
        return BAD_LENGTH, body_len
    data_len = body_len - 4
    if np.int64(crc32(body, 0, data_len, crc_tables)) != _u32(body, data_len):
        return BAD_CRC, body_len
    if body[0] != PROTOCOL_VERSION:
        return BAD_VERSION, body_len
    if body[3] & FLAG_SIGNED:  # ICD §9: sig_ctr and tag sit between payload and CRC
        data_len -= SIG_TRAILER
        if data_len < HEADER_SIZE:
            return BAD_PAYLOAD, body_len
    return _payload_status(body, 0, data_len, rules), data_len


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _file_bad(frame: np.void, frame_offset: int, length: int, status: int, bad: np.ndarray) -> None:
    """Frame-table row ``frame`` is a bad frame: where it began, its wire length, its reason.

    Bad frames are values, not exceptions: counted per reason in ``bad`` and
    listed in stream order with no header fields (none can be trusted).
    """
    bad[status - BAD_COBS] += 1
    frame["offset"] = frame_offset
    frame["row"] = -1
    frame["length"] = length
    frame["msg_type"] = 0
    frame["node"] = 0
    frame["flags"] = 0
    frame["seq"] = 0
    frame["t_us"] = 0
    frame["seq_mark"] = NONE
    frame["seq_gap"] = 0
    frame["sig_ctr"] = 0
    frame["tag"] = 0
    frame["prior"] = -1
    frame["prior_len"] = 0
    frame["rate"] = TAKE
    frame["mark_t"] = 0
    frame["status"] = status


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _file_header(frame: np.void, frame_offset: int, body: np.ndarray, body_len: int) -> None:
    """Frame-table row ``frame`` gets a checked frame's header; its row and status come later.

    Only a frame whose CRC matched gets here, so its header can be trusted;
    ``length`` is header + payload bytes.
    """
    frame["offset"] = frame_offset
    frame["row"] = -1
    frame["msg_type"] = body[1]
    frame["node"] = body[2]
    frame["flags"] = body[3]
    frame["seq"] = _u16(body, 4)
    frame["t_us"] = _u32(body, 6)
    frame["length"] = body_len
    frame["seq_mark"] = NONE
    frame["seq_gap"] = 0
    frame["prior"] = -1
    frame["prior_len"] = 0
    frame["rate"] = TAKE
    frame["mark_t"] = 0
    if body[3] & FLAG_SIGNED:  # the trailer after the payload (ICD §9)
        frame["sig_ctr"] = _u32(body, body_len)
        frame["tag"] = _u64(body, body_len + 4)
    else:
        frame["sig_ctr"] = 0
        frame["tag"] = 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _note_boot(boot_id: int, accounts: StreamAccounts) -> bool:
    """A hub HELLO: a boot_id other than the last one means the hub rebooted (True).

    Every node's seq counter restarts with the hub, so the seq windows are
    cleared (no false losses or duplicates across the reboot) and the reboot
    is counted.  The first HELLO of a stream only records its boot_id.
    """
    boot = accounts.boot
    rebooted = boot[0] != 0 and boot[1] != boot_id
    if rebooted:
        accounts.misc[M_BOOTS] += 1
        accounts.seq_state[:, :] = 0
        accounts.rate[:, :] = 0  # every clock restarts, and the fusion takes every node back
    boot[0] = 1
    boot[1] = boot_id
    return rebooted


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _write_record(
    body: np.ndarray,
    body_len: int,
    frame_offset: int,
    per_type: np.ndarray,
    region: np.ndarray,
    rec_size: np.ndarray,
    records: np.ndarray,
) -> int:
    """Append a good frame to its type's records; returns its row there.

    A record is the layout's prefix (the frame's stream offset, little
    endian, then the payload length) followed by the header and payload
    exactly as sent, so the catalogue-derived dtype reads it without a copy.
    The region was sized by :func:`prescan`, which bounds each type's count.
    """
    msg_type = body[1]
    row = per_type[msg_type]
    per_type[msg_type] += 1
    d = region[msg_type] + row * rec_size[msg_type]
    for k in range(PREFIX_SIZE - 1):
        records[d + k] = (frame_offset >> (8 * k)) & 0xFF
    records[d + PREFIX_SIZE - 1] = body_len - HEADER_SIZE
    d += PREFIX_SIZE
    for k in range(body_len):
        records[d + k] = body[k]
    return row
