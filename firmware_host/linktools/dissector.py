"""A Wireshark dissector in Lua, generated from the construct catalogue.

Every field, name, size and length rule comes from :mod:`protocol.catalogue`
through :mod:`protocol.layout`, so the dissector cannot disagree with the
decoder; only the value names (which enum a field takes) are chosen here.
The packets are a frame's wire bytes (COBS and delimiter, as ``pcap``
writes them, DLT_USER0): the dissector undoes COBS, checks the CRC-32 (ICD
§2, computed in Lua), and names every header and payload field with the
ICD's names under ``firmware_host.*``:

    firmware_host.seq, firmware_host.cushion_hit.pos_mm,
    firmware_host.ball_track.balls.x, firmware_host.log.text, ...

Expert info marks a bad CRC, a retransmission (flags bit 0), a COBS error,
a bad length or version, a payload that does not fit its type and an
unknown type.  Wireshark 3.x/4.x (Lua 5.2, ``bit32``).
"""

from __future__ import annotations

from typing import Any

from protocol.catalogue import (
    ACK_STATUS,
    FLAG_RETRANSMISSION,
    HEADER_SIZE,
    INDICATOR_STATES,
    KEYPAD_KEYS,
    MAX_BODY,
    MESSAGES,
    MIN_BODY,
    NODE_NAMES,
    NODE_STATUS_CODES,
    PROTOCOL_VERSION,
    Header,
)
from protocol.layout import COUNTED, FIXED, GREEDY, layout

PROTO = "firmware_host"
MESSAGE_NAMES = {spec.msg_type: spec.name for spec in MESSAGES}
# Which fields read as names: (message or "*" for the header, field) -> value names.
VALUE_NAMES: dict[tuple[str, str], dict[int, str]] = {
    ("*", "node"): NODE_NAMES,
    ("*", "msg_type"): MESSAGE_NAMES,
    ("HEARTBEAT", "indicator"): {v: k for k, v in INDICATOR_STATES.items()},
    ("SET_INDICATOR", "state"): {v: k for k, v in INDICATOR_STATES.items()},
    ("CLOCK_SYNC", "peer"): NODE_NAMES,
    ("NODE_STATUS", "peer"): NODE_NAMES,
    ("NODE_STATUS", "code"): NODE_STATUS_CODES,
    ("ACK", "acked_type"): MESSAGE_NAMES,
    ("ACK", "status"): ACK_STATUS,
    ("KEYPAD", "key"): KEYPAD_KEYS,
}
HEX_FIELDS = {"msg_type", "flags", "acked_type", "boot_id", "hub_serial", "nodes_present"}
_LUA_INT = {1: "uint8", 2: "uint16", 4: "uint32"}
EXPERTS = (  # name, group, severity, text
    ("bad_crc", "CHECKSUM", "ERROR", "Bad CRC-32"),
    ("retransmission", "SEQUENCE", "NOTE", "Retransmission of an earlier frame (flags bit 0)"),
    ("cobs", "MALFORMED", "ERROR", "COBS error"),
    ("length", "MALFORMED", "ERROR", "Body length out of range"),
    ("version", "PROTOCOL", "WARN", "Unknown protocol version"),
    ("payload_length", "MALFORMED", "ERROR", "Payload length does not fit the message type"),
    ("unknown_type", "UNDECODED", "NOTE", "Unknown msg_type (forward compatibility)"),
)


def _lua_table(values: dict[int, str]) -> str:
    return "{" + ", ".join(f"[{k}] = {_lua_str(v)}" for k, v in sorted(values.items())) + "}"


def _lua_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
        "-- Packets are frames as on the wire (COBS + 0x00), link type DLT_USER0 (147),",
        "-- as `firmware-host pcap` writes them.",
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

function P.dissector(tvb, pinfo, tree)
  pinfo.cols.protocol = "TABLE"
  local n = tvb:len()
  local root = tree:add(P, tvb(), "Table sensor bus")
  root:add(F.wire_length, n)
  local enc_len = n
  if tvb(n - 1, 1):uint() == 0 then enc_len = n - 1 end
  local body = enc_len > 0 and cobs_decode(tvb:bytes(0, enc_len)) or nil
  if body == nil then
    root:add_proto_expert_info(E.cobs)
    pinfo.cols.info = "BAD cobs"
    return n
  end
  local len = body:len()
  if len < MIN_BODY or len > MAX_BODY then
    root:add_proto_expert_info(E.length, "Body length " .. len .. ", not " .. MIN_BODY .. "-" .. MAX_BODY)
    pinfo.cols.info = "BAD length"
    return n
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
    return n
  end
  if bit32.band(flags, RETRANSMISSION) ~= 0 then
    root:add_proto_expert_info(E.retransmission)
    info = info .. " (retx)"
  end
  pinfo.cols.info = info
  if b(0, 1):uint() ~= VERSION then
    root:add_proto_expert_info(E.version)
    return n
  end
  local plen = len - HEADER_SIZE - 4
  if m == nil then
    root:add_proto_expert_info(E.unknown_type)
    if plen > 0 then root:add(F.payload, b(HEADER_SIZE, plen)) end
    return n
  end
  root:set_text("Table sensor bus, " .. info)
  if not payload_fits(m, plen, b) then
    root:add_proto_expert_info(E.payload_length)
    return n
  end
  dissect_payload(m, b, root, plen)
  return n
end

DissectorTable.get("wtap_encap"):add(wtap_encaps and wtap_encaps.USER0 or wtap.USER0, P)
"""
