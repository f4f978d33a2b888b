"""Write a recording as pcapng, one packet per frame, for Wireshark and tshark.

Each packet is one frame's wire bytes (COBS and its 0x00), link type
DLT_USER0 (147): `firmware-host dissector` writes the Lua dissector that
reads them.  A recording from `run --record` holds both directions (the
frames the host sent are outbound packets) and host receive times, which
become the timestamps; a plain capture is stamped with the hub's clock.
Each packet's comment gives the frame's byte offset in the capture, as
`decode` shows it.  Bad frames are packets too (the dissector marks them).
"""

from __future__ import annotations

import argparse

from ..cliutil import UsageError

EXAMPLES = """\
  firmware-host pcap capture-20261130-133500-0001.bin -o out.pcapng
  tshark -X lua_script:firmware_host.lua -r out.pcapng
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", metavar="CAPTURE", help="a recording part (.bin; its .rxt/.tx beside it)"
    )
    parser.add_argument(
        "-o", "--output", metavar="OUT.pcapng", required=True, help="the pcapng file to write"
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from ..cliutil import read_binary
    from ..linktools.pcap import write_pcapng
    from ..linktools.recording import load

    recording = load(args.capture, read_binary(args.capture))
    try:
        with open(args.output, "wb") as out:
            packets = write_pcapng(recording, out, args.capture)
    except OSError as exc:
        raise UsageError(f"--output {args.output}: {exc.strerror or exc}") from None
    sys.stderr.write(
        f"{packets} packets ({int(recording.host.sum())} sent by the host), "
        f"{recording.clock} times: {args.output}\n"
    )
    return 0
