"""Write a recording as pcapng, one packet per frame, for Wireshark and tshark.

Each packet is a 16-byte link header (direction, the frame's capture offset
as `decode` shows it, the decoder's sequence mark: gap, late, duplicate,
counter restart, reboot) and the frame's wire bytes (COBS and its 0x00),
link type DLT_USER0 (147): `firmware-host dissector` writes the Lua
dissector that reads them.  A recording from `run --record` holds both
directions (the frames the host sent are outbound packets) and host receive
times, which become the timestamps (scaled when the table was played
faster); a plain capture is stamped with the hub's clock.  Bad frames are
packets too, and so is a frame the capture cut at its end (the dissector
marks them).
"""

from __future__ import annotations

import argparse

from ..cli.args import UsageError

PROGRESS_S = 2.0

EXAMPLES = """\
  firmware-host pcap capture-20261130-133500-0001.bin -o out.pcapng
  tshark -X lua_script:firmware_host.lua -r out.pcapng
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture", metavar="CAPTURE", help="a recording part (.bin; its .rxt/.tx beside it)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT.pcapng",
        help="the pcapng file to write (default: CAPTURE with the suffix .pcapng)",
    )


def run(args: argparse.Namespace) -> int:
    import sys
    import time
    from pathlib import Path

    from ..cli.args import read_binary
    from ..files import not_an_input, replace_atomically
    from ..linktools.pcap import write_pcapng
    from ..linktools.recording import CUT, load

    if args.capture == "-":
        raise UsageError("CAPTURE: a file (its .rxt and .tx beside it are read too), not -")
    output = args.output or str(Path(args.capture).with_suffix(".pcapng"))
    base = Path(args.capture)
    inputs = [base, base.with_suffix(".rxt"), base.with_suffix(".tx")]
    try:
        not_an_input(output, inputs)
    except OSError as exc:
        raise UsageError(f"--output {output}: {exc}") from None
    recording = load(args.capture, read_binary(args.capture))
    said = [time.monotonic()]

    def progress(done: int, total: int) -> None:  # a big capture is never silent for long
        if time.monotonic() - said[0] >= PROGRESS_S:
            said[0] = time.monotonic()
            sys.stderr.write(f"firmware-host pcap: {done} of {total} packets\n")

    try:  # never over its own input, never through a symlink: a new file renamed into place
        with replace_atomically(output, inputs) as out:
            packets = write_pcapng(recording, out, args.capture, progress)
    except OSError as exc:
        raise UsageError(f"--output {output}: {exc.strerror or exc}") from None
    sys.stderr.write(
        f"{packets} packets ({int(recording.host.sum())} sent by the host), "
        f"{recording.clock} times: {output}\n"
    )
    if recording.speed != 1.0:
        sys.stderr.write(
            f"the hub's clock ran {recording.speed:g} times the host's (a table played at "
            f"{recording.speed:g}x): times scaled by {recording.speed:g}\n"
        )
    cut = recording.kind == CUT
    if cut.any():
        size = int((recording.stop - recording.start)[cut][0])
        sys.stderr.write(
            f"the capture ends inside a frame: its last {size} bytes are the last packet, "
            "marked cut\n"
        )
    return 0
