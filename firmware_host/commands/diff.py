"""Compare two captures: frames only in one, and the fields of a frame in both that differ.

A frame is matched by its sender, ``seq`` and stamp (a retransmission's
second copy with the other's second copy), so two recordings of one link
line up wherever each began; bad frames are counted per reason on each
side.  Exit status 0 when the captures hold the same frames, 1 when they
differ (as diff(1)), 2 when one cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXAMPLES = """\
  firmware-host diff splitter-a.bin splitter-b.bin
  firmware-host diff --json match.bin copy.bin | jq 'select(.differs)'
"""
SHOWN = 50  # text: lines of each kind before "and N more" (--json lists all)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="a raw capture (.bin)")
    parser.add_argument("b", metavar="B", help="another raw capture (.bin)")
    parser.add_argument("--json", action="store_true", help="JSON Lines: one per difference")


def _plain(value: Any) -> Any:
    return value.hex() if isinstance(value, bytes) else value


def _frame_text(item: Any) -> str:
    from protocol.catalogue import NODE_NAMES

    from ..cli.frame_text import field_text

    node = NODE_NAMES.get(item.node, str(item.node))
    name = getattr(item, "name", f"UNKNOWN 0x{item.msg_type:02X}")
    fields = " ".join(field_text(k, v) for k, v in getattr(item, "fields", {}).items())
    return f"{node} {name} seq={item.seq} t_us={item.t_us} {fields}".rstrip()


def _frame_json(item: Any) -> dict[str, Any]:
    out = {"offset": item.offset, "node": item.node, "seq": item.seq, "t_us": item.t_us}
    out |= {"flags": item.flags, "type": getattr(item, "name", "UNKNOWN")}
    return out | {"fields": getattr(item, "fields", {})}


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..cli.args import read_binary
    from ..jsonout import dumps
    from ..linktools.capdiff import diff

    data = [np.frombuffer(read_binary(path), np.uint8) for path in (args.a, args.b)]
    found = diff(*data)
    out = sys.stdout
    if args.json:
        for side, only, indices in (("A", found.a, found.only_a), ("B", found.b, found.only_b)):
            for i in indices:
                out.write(dumps({"only_in": side} | _frame_json(only.item(i))) + "\n")
        for i, j, fields in found.changed:
            a, b = found.a.item(i), found.b.item(j)
            changes = {k: [_plain(x), _plain(y)] for k, (x, y) in fields.items()}
            record = {"differs": _frame_json(a), "offset_b": b.offset, "fields": changes}
            out.write(dumps(record) + "\n")
    else:
        for side, only, indices in (("A", found.a, found.only_a), ("B", found.b, found.only_b)):
            for i in indices[:SHOWN]:
                item = only.item(i)
                out.write(f"only in {side}  offset {item.offset:>10}  {_frame_text(item)}\n")
            if len(indices) > SHOWN:
                out.write(f"only in {side}  and {len(indices) - SHOWN} more\n")
        for i, j, fields in found.changed[:SHOWN]:
            a, b = found.a.item(i), found.b.item(j)
            changes = ", ".join(f"{k} {_plain(x)} -> {_plain(y)}" for k, (x, y) in fields.items())
            out.write(f"differs    A {a.offset} / B {b.offset}  {_frame_text(a)}: {changes}\n")
        if len(found.changed) > SHOWN:
            out.write(f"differs    and {len(found.changed) - SHOWN} more\n")
    summary = {
        "same": found.same,
        "differ": len(found.changed),
        "only_in_a": len(found.only_a),
        "only_in_b": len(found.only_b),
        "bad_a": found.a.bad(),
        "bad_b": found.b.bad(),
    }
    if args.json:
        out.write(dumps({"summary": summary}) + "\n")
    else:
        verdict = "the same frames" if found.identical else "they differ"
        out.write(
            f"\n{summary['same'] + summary['differ']} frames in both ({summary['same']} equal, "
            f"{summary['differ']} differ), {summary['only_in_a']} only in A, "
            f"{summary['only_in_b']} only in B; bad frames A {sum(summary['bad_a'].values())}, "
            f"B {sum(summary['bad_b'].values())}: {verdict}\n"
        )
    return 0 if found.identical else 1
