"""The monitor's reader: can the tally take a full-sensor table at 12 Mbaud?

Simulates a full-sensor match (every node, tracker at 240 Hz) with the
virtual table, then feeds its capture to a :class:`LinkTally` in 4 KiB
chunks (a serial read's size) as fast as it takes them, while a second
thread takes snapshots and renders the screen at the view's refresh rate,
as the live view does.  Prints the bytes per second the tally took and its
ratio to a 12 Mbaud link (1.2 MB/s, 8N1); above 1 the reader keeps up with
the link at its fullest, whatever the table sends.

    python bench/monitor.py [--minutes 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TextIO

from rich.console import Console

from firmware_host.linkwatch.monitor_app import REFRESH_HZ, ViewState, render
from firmware_host.linkwatch.tally import LinkTally

LINK_12MBAUD_BPS = 12e6 / 10  # 8N1: 10 bits a byte
CHUNK = 4096


def capture(minutes: float, out: Path) -> bytes:
    path = out / "full.bin"
    subprocess.run(
        [sys.executable, "-m", "firmware_host", "simulate", "--capture", str(path)]
        + ["--sensors", "full", "--tracker-hz", "240", "--minutes", str(minutes)],
        check=True,
    )
    return path.read_bytes()


def measure(data: bytes, screen: TextIO) -> dict[str, float]:
    LinkTally().feed(data[:10_000], 0)  # load the numba cache before the clock starts
    tally = LinkTally()
    done = threading.Event()
    console = Console(file=screen, width=200, height=50)
    draw_s: list[float] = []

    def draw() -> None:
        state = ViewState(source="bench")
        while not done.wait(1 / REFRESH_HZ):
            t = time.perf_counter()
            console.print(render(tally.snapshot(), state, 200))
            draw_s.append(time.perf_counter() - t)

    drawer = threading.Thread(target=draw)
    drawer.start()
    t0 = time.perf_counter()
    for i in range(0, len(data), CHUNK):
        tally.feed(data[i : i + CHUNK], time.monotonic_ns())
    elapsed = time.perf_counter() - t0
    done.set()
    drawer.join()
    rate = len(data) / elapsed
    return {
        "mb": len(data) / 1e6,
        "seconds": elapsed,
        "bytes_per_s": rate,
        "ratio_12mbaud": rate / LINK_12MBAUD_BPS,
        "draws": len(draw_s),
        "draw_ms": 1000 * sum(draw_s) / max(1, len(draw_s)),
    }


def through_a_pty(data: bytes, screen: TextIO) -> float:
    """The live path end to end: bytes written into a pty as fast as it takes them, read by the
    transport, fed by the feeder thread, while the screen is drawn; bytes per second."""
    import tty

    from firmware_host.linkwatch.link import LinkFeeder

    master, slave = os.openpty()
    tty.setraw(slave)
    tally = LinkTally()
    feeder = LinkFeeder(os.ttyname(slave), 921_600, tally).start()
    console = Console(file=screen, width=200, height=50)
    state = ViewState(source="bench")
    try:
        assert feeder.transport.wait_open(10)
        t0 = time.perf_counter()
        for i in range(0, len(data), 1 << 16):
            os.write(master, data[i : i + (1 << 16)])  # blocks while the pty is full
            if i % (1 << 20) == 0:  # a screen a megabyte: as often as the view at 4 Hz
                console.print(render(tally.snapshot(), state, 200))
        while tally.snapshot().bytes_total < len(data):
            time.sleep(0.01)
        return len(data) / (time.perf_counter() - t0)
    finally:
        feeder.stop()
        os.close(master)
        os.close(slave)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="match length to simulate")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"simulating a {args.minutes:g}-minute full-sensor match ...", flush=True)
        data = capture(args.minutes, Path(tmp))
    print(f"feeding {len(data) / 1e6:.1f} MB in {CHUNK} B chunks, drawing at {REFRESH_HZ} Hz ...")
    with open(os.devnull, "w") as screen:
        r = measure(data, screen)
    print(
        f"tally took {r['mb']:.1f} MB in {r['seconds']:.2f} s = {r['bytes_per_s'] / 1e6:.2f} MB/s "
        f"while drawing {r['draws']} screens ({r['draw_ms']:.0f} ms each); "
        f"{r['ratio_12mbaud']:.1f}x a 12 Mbaud link (1.2 MB/s)"
    )
    print("the live path: the same bytes through a pty, the transport and the feeder ...")
    with open(os.devnull, "w") as screen:
        live = through_a_pty(data, screen)
    print(f"live path took {live / 1e6:.2f} MB/s = {live / LINK_12MBAUD_BPS:.1f}x a 12 Mbaud link")


if __name__ == "__main__":
    main()
