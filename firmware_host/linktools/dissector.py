"""A Wireshark dissector in Lua, generated from the construct catalogue.

Every field, name, size and length rule comes from :mod:`protocol.catalogue`
through :mod:`protocol.layout`, so the dissector cannot disagree with the
decoder; which named values a field takes is :mod:`.names`.
The packets are the link header of :mod:`.pcap` (direction, capture offset,
the decoder's sequence mark) and a frame's wire bytes (COBS and delimiter,
as ``pcap`` and ``extcap`` write them, DLT_USER0): the dissector undoes
COBS, checks the CRC-32 (ICD §2, computed in Lua), and names every header
and payload field with the ICD's names under ``firmware_host.*``:

    firmware_host.offset, firmware_host.seq, firmware_host.cushion_hit.pos_mm,
    firmware_host.ball_track.balls.x, firmware_host.log.text, ...

Numbers with names show them (node, type, lamp state, keypad key, LOG
level, cushion, pocket, colour, line ...; :mod:`.names`); bit masks are hex.
Expert info marks a bad CRC, a COBS error, a bad length or version, a
payload that does not fit its type, an unknown type, a frame the capture
cut or began inside, and what the decoder's sequence window said: frames
lost before this one, a late retransmission, a duplicate (told from the
first copy of a retransmission, which is delivered), a counter restart, a
hub reboot.  No packet carries a comment (Expert Info stays readable).
The sequence rule itself is never in Lua: the decoder's mark is in the
link header.  Wireshark 3.x/4.x (Lua 5.2, ``bit32``).
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.catalogue import (
    FLAG_RETRANSMISSION,
    HEADER_SIZE,
    MAX_BODY,
    MESSAGES,
    MIN_BODY,
    NODE_NAMES,
    PROTOCOL_VERSION,
    Header,
)
from protocol.layout import COUNTED, FIXED, GREEDY, layout
from protocol.seqwindow import DUPLICATE, GAP, LATE, MARK_NAMES, REBOOT, RESTART

from .names import VALUE_NAMES
from .pcap import DIRECTION_NAMES, LINK_FIELDS, LINK_HEADER, LINK_VERSION
from .recording import CUT, JOINED, KIND_NAMES

PROTO = "firmware_host"
HEX_FIELDS = {
    "msg_type",
    "flags",
    "acked_type",
    "boot_id",
    "hub_serial",
    "nodes_present",
    "nodes_ok",
}
_LUA_INT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "int64"}
EXPERTS = (  # name, group, severity, text
    ("bad_crc", "CHECKSUM", "ERROR", "Bad CRC-32"),
    (
        "retransmission",
        "SEQUENCE",
        "NOTE",
        "Retransmission (flags bit 0), the first copy to arrive: delivered",
    ),
    ("cobs", "MALFORMED", "ERROR", "COBS error"),
    ("length", "MALFORMED", "ERROR", "Body length out of range"),
    ("version", "PROTOCOL", "WARN", "Unknown protocol version"),
    ("payload_length", "MALFORMED", "ERROR", "Payload length does not fit the message type"),
    ("unknown_type", "UNDECODED", "NOTE", "Unknown msg_type (forward compatibility)"),
    ("gap", "SEQUENCE", "WARN", "Frames lost before this one (seq gap)"),
    ("late", "SEQUENCE", "NOTE", "Late retransmission: a frame counted lost has arrived"),
    ("duplicate", "SEQUENCE", "NOTE", "Duplicate: a retransmission already delivered"),
    ("restart", "SEQUENCE", "WARN", "The node restarted its seq counter"),
    (
        "reboot",
        "SEQUENCE",
        "WARN",
        "Hub rebooted (a new boot_id): every clock and counter restarts",
    ),
    ("cut", "MALFORMED", "WARN", "Frame cut: the capture ends before its delimiter"),
    ("joined", "SEQUENCE", "NOTE", "The capture began inside this frame (a join): not a bad frame"),
    ("link_version", "PROTOCOL", "ERROR", "Unknown link header version"),
)
#: seq mark -> (expert, Info column text)
SEQ_EXPERTS = {
    GAP: ("gap", "GAP"),
    LATE: ("late", "LATE"),
    DUPLICATE: ("duplicate", "DUPLICATE"),
    RESTART: ("restart", "COUNTER RESTART"),
    REBOOT: ("reboot", "REBOOT"),
}


def _lua_table(values: dict[int, str]) -> str:
    return "{" + ", ".join(f"[{k}] = {_lua_str(v)}" for k, v in sorted(values.items())) + "}"


def _lua_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _link_fields(lines: list[str]) -> list[str]:
    """The link header's fields (:data:`.pcap.LINK_FIELDS`); ``offset`` is
    ``firmware_host.offset``, the others ``firmware_host.link.*``."""
    names = {
        "direction": DIRECTION_NAMES,
        "seq_mark": dict(enumerate(MARK_NAMES)),
        "frame": KIND_NAMES,
    }
    fields, at = [], 0
    for name, code in LINK_FIELDS:
        size = struct.calcsize("<" + code)
        var = f"link.{name}"
        values = None
        if name in names:
            values = f"VS_LINK_{name}"
            lines.append(f"local {values} = {_lua_table(names[name])}")
        abbrev = f"{PROTO}.offset" if name == "offset" else f"{PROTO}.{var}"
        lines.append(_field(var, abbrev, name, size, values))
        fields.append(f"{{{_lua_str(var)}, {at}, {size}}}")
        at += size
    return fields


def _field(var: str, abbrev: str, name: str, size: int, values: str | None = None) -> str:
    base = "base.HEX" if name in HEX_FIELDS else "base.DEC"
    extra = f", {values}" if values else ""
    return (
        f"F[{_lua_str(var)}] = ProtoField.{_LUA_INT[size]}({_lua_str(abbrev)}, "
        f"{_lua_str(name)}, {base}{extra})"
    )


def _value_names(lines: list[str], message: str, name: str) -> str | None:
    values = VALUE_NAMES.get((message, name))
    if values is None:
        return None
    var = f"VS_{message.replace('*', 'HEADER')}_{name}"
    lines.append(f"local {var} = {_lua_table(values)}")
    return var


def _header(lines: list[str]) -> list[str]:
    fields = []
    for sub in Header.subcons:
        values = _value_names(lines, "*", sub.name)
        lines.append(_field(sub.name, f"{PROTO}.{sub.name}", sub.name, sub.sizeof(), values))
        fields.append(f"{{{_lua_str(sub.name)}, {sub.sizeof()}}}")
    return fields


def _message(lines: list[str], msg_type: int) -> str:
    """Declare one message's fields; return its entry in the MESSAGES table."""
    lay = layout(msg_type)
    name, low = lay.spec.name, lay.spec.name.lower()
    fixed, item, text = [], [], "nil"
    for f in lay.fields:
        var = f"{low}.{f.name}"
        if f.size and f.kind.startswith("u"):
            values = _value_names(lines, name, f.name)
            lines.append(_field(var, f"{PROTO}.{var}", f.name, f.size, values))
            fixed.append(f"{{{_lua_str(var)}, {f.offset}, {f.size}}}")
        elif lay.rule == COUNTED:
            lines.append(f'F["{var}"] = ProtoField.none("{PROTO}.{var}", "{f.name}")')
            item_dtype: Any = lay.dtype[f.name].base
            at = 0
            for item_name in item_dtype.names:
                size = item_dtype[item_name].itemsize
                ivar = f"{var}.{item_name}"
                lines.append(_field(ivar, f"{PROTO}.{ivar}", item_name, size))
                item.append(f"{{{_lua_str(ivar)}, {at}, {size}}}")
                at += size
            item.insert(0, _lua_str(var))
        else:
            lines.append(f'F["{var}"] = ProtoField.string("{PROTO}.{var}", "{f.name}")')
            text = _lua_str(var)
    rule = {FIXED: "fixed", COUNTED: "counted", GREEDY: "greedy"}[lay.rule]
    return (
        f"[{msg_type}] = {{name = {_lua_str(name)}, rule = {_lua_str(rule)}, base = {lay.base}, "
        f"item_size = {lay.item_size}, count_at = {lay.count_offset}, "
        f"max_items = {lay.spec.max_items}, fixed = {{{', '.join(fixed)}}}, "
        f"item = {{{', '.join(item)}}}, text = {text}}}"
    )


def generate() -> str:
    """The dissector's Lua source."""
    lines = [
        "-- firmware_host.lua: the table sensor bus (ICD v1), for Wireshark and tshark.",
        "-- Generated by `firmware-host dissector` from protocol/catalogue.py: do not edit.",
        "-- Packets are a 16-byte link header and a frame as on the wire (COBS + 0x00),",
        "-- link type DLT_USER0 (147), as `firmware-host pcap` and `extcap` write them.",
        f'local P = Proto("{PROTO}", "Table sensor bus (ICD v{PROTOCOL_VERSION})")',
        "local F = {}",
        f'F.wire_length = ProtoField.uint16("{PROTO}.wire_length", "wire bytes")',
        (
            f'F.retransmission = ProtoField.bool("{PROTO}.flags.retransmission", '
            f'"retransmission", 8, nil, {FLAG_RETRANSMISSION})'
        ),
        f'F.crc32 = ProtoField.uint32("{PROTO}.crc32", "crc32", base.HEX)',
        f'F.crc_good = ProtoField.bool("{PROTO}.crc32.good", "crc32 good")',
        f'F.payload = ProtoField.bytes("{PROTO}.payload", "payload")',
    ]
    link = _link_fields(lines)
    header = _header(lines)
    entries = [_message(lines, spec.msg_type) for spec in MESSAGES]
    experts = [
        f'E.{n} = ProtoExpert.new("{PROTO}.{n}", {_lua_str(text)}, expert.group.{g}, '
        f"expert.severity.{s})"
        for n, g, s, text in EXPERTS
    ]
    lines += [
        "local fields = {}",
        "for _, f in pairs(F) do fields[#fields + 1] = f end",
        "P.fields = fields",
        "local E = {}",
        *experts,
        "P.experts = {" + ", ".join(f"E.{n}" for n, *_ in EXPERTS) + "}",
        f"local LINK = {{{', '.join(link)}}}",
        f"local LINK_SIZE, LINK_VERSION = {LINK_HEADER.size}, {LINK_VERSION}",
        f"local CUT, JOINED = {CUT}, {JOINED}",
        "local SEQ_EXPERTS = {"
        + ", ".join(
            f"[{mark}] = {{E.{name}, {_lua_str(text)}}}"
            for mark, (name, text) in sorted(SEQ_EXPERTS.items())
        )
        + "}",
        f"local GAP, DUPLICATE = {GAP}, {DUPLICATE}",
        f"local HEADER = {{{', '.join(header)}}}",
        f"local HEADER_SIZE, MIN_BODY, MAX_BODY = {HEADER_SIZE}, {MIN_BODY}, {MAX_BODY}",
        f"local VERSION, RETRANSMISSION = {PROTOCOL_VERSION}, {FLAG_RETRANSMISSION}",
        "local NODES = " + _lua_table(NODE_NAMES),
        "local MESSAGES = {",
        *(f"  {entry}," for entry in entries),
        "}",
        _LUA_BODY,
    ]
    return "\n".join(lines) + "\n"


_LUA_BODY = r"""
-- CRC-32/ISO-HDLC (ICD 2), table driven
local CRC_TABLE = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) == 1 then c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1))
    else c = bit32.rshift(c, 1) end
  end
  CRC_TABLE[i] = c
end
local function crc32(bytes, n)
  local c = 0xFFFFFFFF
  for i = 0, n - 1 do
    c = bit32.bxor(CRC_TABLE[bit32.band(bit32.bxor(c, bytes:get_index(i)), 0xFF)], bit32.rshift(c, 8))
  end
  return bit32.bxor(c, 0xFFFFFFFF)
end

-- COBS (Cheshire & Baker), standard form; nil on a malformed encoding
local function cobs_decode(enc)
  local n = enc:len()
  local out = ByteArray.new()
  out:set_size(n)
  local i, o = 0, 0
  while i < n do
    local code = enc:get_index(i)
    if code == 0 or i + code > n then return nil end
    for j = i + 1, i + code - 1 do
      out:set_index(o, enc:get_index(j))
      o = o + 1
    end
    i = i + code
    if code < 0xFF and i < n then
      out:set_index(o, 0)
      o = o + 1
    end
  end
  out:set_size(o)
  return out
end

local function add_fields(tree, tvb, at, list)
  for _, f in ipairs(list) do tree:add_le(F[f[1]], tvb(at + f[2], f[3])) end
end

local function payload_fits(m, len, tvb)
  if m.rule == "fixed" then return len == m.base end
  if m.rule == "counted" then
    if len < m.base then return false end
    local count = tvb(HEADER_SIZE + m.count_at, 1):uint()
    return count <= m.max_items and len == m.base + count * m.item_size
  end
  return len >= m.base and len <= m.base + m.max_items
end

local function dissect_payload(m, tvb, tree, len)
  local at = HEADER_SIZE
  add_fields(tree, tvb, at, m.fixed)
  if m.rule == "counted" then
    local count = tvb(at + m.count_at, 1):uint()
    for k = 0, count - 1 do
      local off = at + m.base + k * m.item_size
      local sub = tree:add(F[m.item[1]], tvb(off, m.item_size))
      sub:set_text(m.item[1]:match("[^.]+$") .. " " .. k)
      for i = 2, #m.item do
        local f = m.item[i]
        sub:add_le(F[f[1]], tvb(off + f[2], f[3]))
      end
    end
  elseif m.rule == "greedy" and len > m.base then
    tree:add_packet_field(F[m.text], tvb(at + m.base, len - m.base), ENC_UTF_8)
  end
end

-- the link header (firmware_host/linktools/pcap.py): what the host knew of the frame
local function dissect_link(tvb, root)
  local sub = root:add(P, tvb(0, LINK_SIZE), "Link (firmware-host)")
  local v = {}
  for _, f in ipairs(LINK) do
    sub:add_le(F[f[1]], tvb(f[2], f[3]))
    v[f[1]] = f[3] == 8 and tvb(f[2], f[3]):le_int64() or tvb(f[2], f[3]):le_uint()
  end
  sub:set_text(string.format("Link: offset %s, %s", tostring(v["link.offset"]),
    v["link.direction"] == 0 and "table to host" or "host to table"))
  return v
end

-- the decoder's sequence mark as expert info and a word in the Info column
local function mark_seq(link, root, node, info, retx)
  local mark = link["link.seq_mark"]
  local e = SEQ_EXPERTS[mark]
  if e ~= nil then
    if mark == GAP then
      local n = link["link.seq_gap"]
      root:add_proto_expert_info(e[1], string.format("%d frame%s of node %s lost just before this one (seq gap)",
        n, n == 1 and "" or "s", NODES[node] or tostring(node)))
      return info .. "  " .. e[2] .. " " .. n
    end
    root:add_proto_expert_info(e[1])
    return info .. "  " .. e[2]
  end
  if retx then
    root:add_proto_expert_info(E.retransmission)
    return info .. " (retx)"
  end
  return info
end

function P.dissector(whole, pinfo, tree)
  pinfo.cols.protocol = "TABLE"
  local root = tree:add(P, whole(), "Table sensor bus")
  if whole:len() < LINK_SIZE + 1 or whole(0, 1):uint() ~= LINK_VERSION then
    root:add_proto_expert_info(E.link_version)
    return whole:len()
  end
  local link = dissect_link(whole, root)
  local tvb = whole(LINK_SIZE):tvb()
  local n = tvb:len()
  root:add(F.wire_length, n)
  if link["link.frame"] == CUT or link["link.frame"] == JOINED then
    -- a part of a frame: no check can pass, none is a fault of the frame
    local cut = link["link.frame"] == CUT
    root:add_proto_expert_info(cut and E.cut or E.joined)
    pinfo.cols.info = (cut and "CUT at the capture's end (" or "JOINED mid-frame (") .. n .. " bytes)"
    return whole:len()
  end
  local enc_len = n
  if tvb(n - 1, 1):uint() == 0 then enc_len = n - 1 end
  local body = enc_len > 0 and cobs_decode(tvb:bytes(0, enc_len)) or nil
  if body == nil then
    root:add_proto_expert_info(E.cobs)
    pinfo.cols.info = "BAD cobs"
    return whole:len()
  end
  local len = body:len()
  if len < MIN_BODY or len > MAX_BODY then
    root:add_proto_expert_info(E.length, "Body length " .. len .. ", not " .. MIN_BODY .. "-" .. MAX_BODY)
    pinfo.cols.info = "BAD length"
    return whole:len()
  end
  local b = body:tvb("Frame body")
  local at = 0
  for _, f in ipairs(HEADER) do
    root:add_le(F[f[1]], b(at, f[2]))
    at = at + f[2]
  end
  local msg_type, node, flags = b(1, 1):uint(), b(2, 1):uint(), b(3, 1):uint()
  local seq, t_us = b(4, 2):le_uint(), b(6, 4):le_uint()
  root:add(F.retransmission, b(3, 1))
  local crc_wire, crc_calc = b(len - 4, 4):le_uint(), crc32(body, len - 4)
  local crc_item = root:add_le(F.crc32, b(len - 4, 4))
  root:add(F.crc_good, crc_wire == crc_calc)
  local m = MESSAGES[msg_type]
  local name = m and m.name or string.format("UNKNOWN 0x%02X", msg_type)
  local info = string.format("%-13s %s seq=%d t_us=%d", name, NODES[node] or tostring(node), seq, t_us)
  if crc_wire ~= crc_calc then
    crc_item:add_proto_expert_info(E.bad_crc, string.format("Bad CRC-32: 0x%08x on the wire, 0x%08x computed", crc_wire, crc_calc))
    pinfo.cols.info = "BAD crc  " .. info
    return whole:len()
  end
  info = mark_seq(link, root, node, info, bit32.band(flags, RETRANSMISSION) ~= 0)
  pinfo.cols.info = info
  if b(0, 1):uint() ~= VERSION then
    root:add_proto_expert_info(E.version)
    return whole:len()
  end
  local plen = len - HEADER_SIZE - 4
  if m == nil then
    root:add_proto_expert_info(E.unknown_type)
    if plen > 0 then root:add(F.payload, b(HEADER_SIZE, plen)) end
    return whole:len()
  end
  root:set_text("Table sensor bus, " .. info)
  if not payload_fits(m, plen, b) then
    root:add_proto_expert_info(E.payload_length)
    return whole:len()
  end
  dissect_payload(m, b, root, plen)
  return whole:len()
end

DissectorTable.get("wtap_encap"):add(wtap_encaps and wtap_encaps.USER0 or wtap.USER0, P)
"""
