"""Write a Wireshark dissector (Lua) for the table's frames, generated from the catalogue.

Load it with `tshark -X lua_script:firmware_host.lua -r out.pcapng`, or copy it
into Wireshark's personal Lua plugins folder (Help > About > Folders).  It
reads the packets `firmware-host pcap` writes (link type DLT_USER0, 147) and
shows every header and payload field by its ICD name (firmware_host.*), with
expert info on a bad CRC, a retransmission and any malformed frame.
"""

from __future__ import annotations

import argparse

from ..cli.args import UsageError

EXAMPLES = """\
  firmware-host dissector -o firmware_host.lua
  firmware-host dissector -o ~/.local/lib/wireshark/plugins/firmware_host.lua
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT.lua",
        default="-",
        help="where to write the Lua source (default -: stdout)",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from ..linktools.dissector import generate

    source = generate()
    if args.output == "-":
        sys.stdout.write(source)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(source)
    except OSError as exc:
        raise UsageError(f"--output {args.output}: {exc.strerror or exc}") from None
    return 0
