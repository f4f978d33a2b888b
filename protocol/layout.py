"""Byte layouts derived from the construct catalogue.

The bulk path never parses with construct; it copies each checked frame body
into a numpy record whose packed dtype *is* the wire layout.  This module
walks the construct tree once and derives, per message: the record dtype,
the payload-length rule the decoder enforces, and the field table ``dump``
prints.  Nothing here names an offset by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from construct import Bytes, Construct, FocusedSeq, FormatField, Renamed, StringEncoded, Struct

from .catalogue import BY_TYPE, HEADER_SIZE, MESSAGES, Header, MessageSpec

# Payload-length rules, as the decoder kernel checks them.
FIXED, COUNTED, GREEDY = 0, 1, 2

# Every record starts with where the frame was and how long its payload is;
# the frame body follows byte for byte.
RECORD_PREFIX = [("offset", "<i8"), ("payload_len", "u1")]
PREFIX_SIZE = 9

_NUMPY_OF_FORMAT = {"<B": "u1", "<H": "<u2", "<L": "<u4", "<b": "i1", "<h": "<i2", "<l": "<i4"}


@dataclass(frozen=True)
class Field:
    """One wire field as ``dump`` shows it: offset within the payload."""

    name: str
    offset: int
    size: int
    kind: str  # u8, u16, u32, or a description of a variable field


@dataclass(frozen=True)
class Layout:
    """What the bulk decoder and the printers need to know about a message."""

    spec: MessageSpec
    dtype: np.dtype  # packed: prefix, header, payload at its largest
    rule: int  # FIXED, COUNTED or GREEDY
    base: int  # fixed part of the payload, bytes
    item_size: int  # bytes per repeated item (COUNTED/GREEDY)
    count_offset: int  # payload offset of the count byte (COUNTED)
    fields: tuple[Field, ...]

    @property
    def payload_names(self) -> tuple[str, ...]:
        """Record fields that come from the payload (after prefix and header)."""
        return (self.dtype.names or ())[len(RECORD_PREFIX) + len(Header.subcons) :]

    @property
    def max_payload(self) -> int:
        return self.base + self.item_size * self.spec.max_items

    def payload_ok(self, payload: bytes) -> bool:
        """The ICD length rule for this message, on the construct path."""
        n = len(payload)
        if self.rule == FIXED:
            return n == self.base
        if self.rule == COUNTED:
            if n < self.base:
                return False
            count = payload[self.count_offset]
            return count <= self.spec.max_items and n == self.base + count * self.item_size
        return self.base <= n <= self.max_payload


def _fixed_fields(struct: Struct) -> list[tuple[str, str]]:
    out = []
    for sub in struct.subcons:
        if not (isinstance(sub, Renamed) and isinstance(sub.subcon, FormatField)):
            raise TypeError(f"{sub!r} is not a fixed-size field")
        out.append((sub.name, _NUMPY_OF_FORMAT[sub.subcon.fmtstr]))
    return out


def _walk(spec: MessageSpec) -> tuple[list, int, int, int, int, list[Field]]:
    numpy_fields: list = []
    fields: list[Field] = []
    rule, item_size, count_offset = FIXED, 0, 0
    offset = 0
    for sub in spec.payload.subcons:
        inner: Construct = sub.subcon
        if isinstance(inner, FormatField):
            np_type = _NUMPY_OF_FORMAT[inner.fmtstr]
            size = inner.sizeof()
            numpy_fields.append((sub.name, np_type))
            fields.append(Field(sub.name, offset, size, f"u{size * 8}"))
            offset += size
        elif isinstance(inner, Bytes):  # a fixed run of raw bytes (SETUP_SIGNING.key)
            size = inner.sizeof()
            numpy_fields.append((sub.name, "u1", (size,)))
            fields.append(Field(sub.name, offset, size, f"{size} bytes"))
            offset += size
        elif isinstance(inner, FocusedSeq):  # PrefixedArray(count, Struct)
            _count, items = inner.subcons
            item_struct = items.subcon.subcon
            item_fields = _fixed_fields(item_struct)
            rule, count_offset, item_size = COUNTED, offset, item_struct.sizeof()
            numpy_fields.append(("count", "u1"))
            numpy_fields.append((sub.name, item_fields, (spec.max_items,)))
            names = ", ".join(name for name, _ in item_fields)
            fields.append(Field("count", offset, 1, "u8"))
            fields.append(
                Field(sub.name, offset + 1, item_size, f"count x {{{names}}} ({item_size} B each)")
            )
            offset += 1
        elif isinstance(inner, StringEncoded):  # GreedyString: the rest of the payload
            rule, item_size = GREEDY, 1
            numpy_fields.append((sub.name, f"S{spec.max_items}"))
            fields.append(Field(sub.name, offset, 0, f"{inner.encoding}, up to {spec.max_items} B"))
        else:
            raise TypeError(f"{spec.name}.{sub.name}: no layout for {inner!r}")
    return numpy_fields, rule, offset, item_size, count_offset, fields


@cache
def layout(msg_type: int) -> Layout:
    """The derived layout of one message type."""
    spec = BY_TYPE[msg_type]
    numpy_fields, rule, base, item_size, count_offset, fields = _walk(spec)
    dtype = np.dtype(RECORD_PREFIX + _fixed_fields(Header) + numpy_fields)
    expected = PREFIX_SIZE + HEADER_SIZE + base + item_size * spec.max_items
    assert dtype.itemsize == expected, (spec.name, dtype.itemsize, expected)
    return Layout(spec, dtype, rule, base, item_size, count_offset, tuple(fields))


def layout_of(dtype: np.dtype) -> Layout:
    """The message whose record dtype this is (field names make each unique)."""
    for lay in all_layouts():
        if lay.dtype == dtype:
            return lay
    raise KeyError(f"no message has record dtype {dtype}")


def all_layouts() -> list[Layout]:
    return [layout(spec.msg_type) for spec in MESSAGES]


def rule_table() -> np.ndarray:
    """Per msg_type (0-255): known, rule, base, item size, count offset, max items.

    The numba kernel indexes this table instead of knowing any message.
    """
    table = np.zeros((256, 6), dtype=np.int32)
    for lay in all_layouts():
        t = lay.spec.msg_type
        table[t] = (1, lay.rule, lay.base, lay.item_size, lay.count_offset, lay.spec.max_items)
    return table
