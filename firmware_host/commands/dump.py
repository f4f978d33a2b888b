"""Print the message catalogue: types, fields, sizes and byte layout (ICD §3-§5)."""

from __future__ import annotations

import argparse

EXAMPLES = """\
  firmware-host dump
  firmware-host dump --json | jq '.messages[].name'
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable catalogue")


def run(args: argparse.Namespace) -> int:
    import json

    from protocol.catalogue import HEADER_SIZE, NODE_NAMES, Header
    from protocol.layout import COUNTED, GREEDY, Field, all_layouts

    header_fields = []
    offset = 0
    for sub in Header.subcons:
        size = sub.sizeof()
        header_fields.append(Field(sub.name, offset, size, f"u{size * 8}"))
        offset += size

    catalogue = []
    for lay in all_layouts():
        spec = lay.spec
        if lay.rule == COUNTED:
            size = f"{lay.base}+{lay.item_size}*count (count <= {spec.max_items})"
        elif lay.rule == GREEDY:
            size = f"{lay.base}..{lay.max_payload}"
        else:
            size = str(lay.base)
        catalogue.append(
            {
                "msg_type": spec.msg_type,
                "name": spec.name,
                "node": "any" if spec.node is None else NODE_NAMES[spec.node],
                "payload_size": size,
                "doc": spec.doc,
                "fields": [
                    {
                        "name": f.name,
                        "offset": HEADER_SIZE + f.offset,
                        "size": f.size,
                        "type": f.kind,
                    }
                    for f in lay.fields
                ],
            }
        )
    if args.json:
        print(
            json.dumps(
                {"header": [vars(f) for f in header_fields], "messages": catalogue}, indent=1
            )
        )
        return 0
    print("frame body: header (10 B) | payload | crc32 LE (4 B), COBS-framed, 0x00 delimited")
    print("header:  " + "  ".join(f"@{f.offset} {f.name}:{f.kind}" for f in header_fields))
    for msg in catalogue:
        print(
            f"\n0x{msg['msg_type']:02X} {msg['name']:<14} from {msg['node']:<8} payload {msg['payload_size']} B"
        )
        print(f"     {msg['doc']}")
        for f in msg["fields"]:
            print(f"     @{f['offset']:<3} {f['name']:<18} {f['type']}")
    return 0
