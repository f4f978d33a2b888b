"""Link health after the fact: frames, rates, gaps, loss, bad frames, reboots and clocks.

Per node and message type: frames, rate and the longest gap; per node: frames
lost (seq gaps) and retransmissions with their offsets, its clock's rate over
time against the datasheet (ICD 7) and, when the recording has host receive
times (the .rxt beside it), the arrival latency (above the node's fastest
frame: p50, p95, max).  Bad frames by reason with their offsets, and hub
reboots; a frame cut at the capture's end.  Every problem found is named in
words at the end ("node 3 (cue): drift +140 ±0.3 ppm, datasheet ±100");
notes say what the figures assume: a virtual table played faster (its host
times scaled), a join (the backlog timed by the hub's clock), a frame the
host joined in the middle of.  Every drift has its uncertainty.  Exit
status 1 when a problem was found.  See docs/link-debugging.md for how
drift is measured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from ..cli.args import UsageError

EXAMPLES = """\
  firmware-host stats capture-20261130-133500-0001.bin
  firmware-host stats --json match.bin | jq .problems
  firmware-host stats --png link.png match.bin
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "capture",
        metavar="CAPTURE",
        help="raw capture (.bin; its .rxt beside it gives host times), or - for stdin",
    )
    parser.add_argument("--json", action="store_true", help="the whole report as one JSON object")
    parser.add_argument(
        "--png", metavar="OUT.png", help="also draw drift and loss over time (matplotlib)"
    )


def _text(report: dict[str, Any], out: TextIO) -> None:
    from ..linktools.linkstats import node_label

    clock = "host receive times" if report["clock"] == "host" else "the hub's clock"
    out.write(f"{report['frames']} frames over {report['span_s']:.1f} s ({clock})\n\n")
    out.write(f"{'node':<18} {'type':<14} {'frames':>8} {'per s':>8} {'longest gap':>12}\n")
    out.writelines(
        f"{node_label(int(node)):<18} {name:<14} {t['frames']:>8} "
        f"{t['rate_hz']:>8.2f} {t['max_gap_s']:>10.3f} s\n"
        for node, entry in report["nodes"].items()
        for name, t in entry["types"].items()
    )
    out.write(
        f"\n{'node':<18} {'lost':>6} {'retx':>6} {'clock ppm':>16} {'worst':>8} {'limit':>6}"
        "  latency p50/p95/max ms\n"
    )
    for node, entry in report["nodes"].items():
        c = entry.get("clock")
        ppm = (
            f"{_ppm(c['ppm'], c['uncertainty_ppm']):>16} {c['worst_ppm']:>+8.1f} "
            f"{c['limit_ppm']:>6.0f}"
            if c
            else " " * 32
        )
        lat = entry.get("latency")
        lat_text = f"{lat['p50_ms']:.1f}/{lat['p95_ms']:.1f}/{lat['max_ms']:.1f}" if lat else "-"
        out.write(
            f"{node_label(int(node)):<18} {entry['lost']['count']:>6} "
            f"{entry['retransmissions']['count']:>6} {ppm}  {lat_text}\n"
        )
    for b, ppm in report["hub_vs_host_ppm"].items():
        unc = report["hub_vs_host_uncertainty_ppm"][b]
        out.write(f"hub crystal against the host's clock, boot {int(b) + 1}: {_ppm(ppm, unc)}\n")
    if "hub_vs_host_count" in report:
        out.write(f"hub crystal against the host's clock: the first {report['hub_vs_host_listed']} "
                  f"of {report['hub_vs_host_count']} boots shown\n")  # fmt: skip
    if report["notes"]:
        out.write("\n")
        out.writelines(f"note: {note}\n" for note in report["notes"])
    problems = report["problems"]
    out.write(f"\n{len(problems) or 'no'} problem{'s' if len(problems) != 1 else ''} found\n")
    out.writelines(f"  {p['text']}\n" for p in problems)


def _ppm(ppm: float, unc: float) -> str:
    return f"{ppm:+.1f} ±{unc:.1f} ppm"


def next_part(capture: str) -> bool:
    """A recording part (``capture-…-0001.bin``) whose next part is beside it."""
    stem, _, number = Path(capture).stem.rpartition("-")
    if capture == "-" or not stem or not number.isdigit():
        return False
    following = f"{stem}-{int(number) + 1:0{len(number)}d}.bin"
    return Path(capture).with_name(following).exists()


# A .rxt that cannot stream (no recorder writes one: offsets that go back, stamps out of order)
# is read the whole-capture way, which holds the capture and its per-frame arrays (about 5 bytes
# a byte): up to this size that stays under 300 MB; beyond it the capture is reported without
# its host times, so a hostile .rxt beside a gigabyte costs no more than the plain stats.
WHOLE_WAY_MAX = 16 << 20


@contextmanager
def _rereadable(capture: str) -> Iterator[str]:
    """A capture file as it is; stdin copied to a temporary file a chunk at a time (``stats``
    reads its capture twice, and memory must not hold it)."""
    if capture != "-":
        yield capture
        return
    from ..cli.args import capture_chunks

    with tempfile.NamedTemporaryFile(prefix="stats-", suffix=".bin") as spool:
        for chunk in capture_chunks("-"):
            spool.write(chunk)
        spool.flush()
        yield spool.name


def as_it_was(path: str) -> Callable[[], Iterator[bytes]]:
    """A capture file's reads, every time only as far as it went when ``stats`` began: each of
    its passes must read the same bytes, and a daemon may be appending to its part."""
    from ..cli.args import capture_chunks

    try:
        size = Path(path).stat().st_size
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None

    def read() -> Iterator[bytes]:
        left = size
        for chunk in capture_chunks(path):
            if left <= 0:
                break
            yield chunk[:left]
            left -= len(chunk)

    return read


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..files import is_regular, kind_of
    from ..jsonout import dumps
    from ..link.recorder import RX_TIMES_DTYPE, read_rx_times
    from ..linktools.hoststream import NotStreamable, host_stats
    from ..linktools.linkstats import link_stats
    from ..linktools.statstream import stream_stats

    if args.png:  # before the work: a missing extra is a usage error, said at once
        try:
            from ..linktools.statsplot import draw
        except ModuleNotFoundError as exc:
            raise UsageError(f"--png needs {exc.name}: pip install -e '.[view]'") from None
    rxt = Path(args.capture).with_suffix(".rxt") if args.capture != "-" else None
    continues = next_part(args.capture)
    report = None
    if rxt is not None and rxt.exists() and not is_regular(rxt):  # a FIFO would hang the read
        sys.stderr.write(f"stats: {rxt.name}: {kind_of(rxt.stat().st_mode)}: host times not read\n")
        rxt = None
    if rxt is not None and rxt.exists() and rxt.stat().st_size >= RX_TIMES_DTYPE.itemsize:
        read = as_it_was(args.capture)
        try:  # host times, streamed (docs/memory.md)
            report = host_stats(read, rxt, continues=continues)
        except NotStreamable as exc:
            if Path(args.capture).stat().st_size > WHOLE_WAY_MAX:
                sys.stderr.write(f"stats: {rxt.name}: {exc}: host times not read (the whole-capture"
                                 f" way is for captures up to {WHOLE_WAY_MAX >> 20} MB)\n")  # fmt: skip
            else:
                sys.stderr.write(f"stats: {rxt.name}: {exc}: reading the whole capture\n")
                capture = np.frombuffer(b"".join(read()), np.uint8)
                report = link_stats(capture, read_rx_times(rxt), continues=continues)
    if report is None:
        with _rereadable(args.capture) as path:
            report = stream_stats(as_it_was(path), continues=continues)
    if report["frames"] == 0:
        raise UsageError(f"{args.capture}: no valid frame in it: not a capture")
    if args.json:
        sys.stdout.write(dumps(report) + "\n")
    else:
        _text(report, sys.stdout)
    if args.png:
        try:
            draw(report, args.png)
        except OSError as exc:
            raise UsageError(f"--png {args.png}: {exc.strerror or exc}") from None
    return 1 if report["problems"] else 0
