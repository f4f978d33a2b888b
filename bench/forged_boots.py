"""Captures of many short forged hub boots, with their host receive times: what ``stats`` keeps
per boot.

A HELLO with a new ``boot_id`` is a hub reboot: the hub's clock, every seq counter and every
fit start afresh (docs/link-debugging.md).  A hostile file, or a hub in a reboot loop, is
then boots by the hundred thousand, and whatever ``stats`` keeps per boot grows with it
(issue 29: 6 MB of them with a ``.rxt`` beside it peaked at 409 MB).  This writes ``boots``
boots of ``frames`` hub frames each: a HELLO, a HEARTBEAT counting a bad frame, then
CLOCK_SYNCs of the cue, 5 s of hub time apart (so nine frames give a boot a hub-against-host
fit of its own, ten a drift window too), encoded by the bulk encoder from the catalogue's
records (:func:`protocol.encode.encode_records`); and the ``.rxt`` a perfect host records:
a read a frame, at its arrival (0.1-0.9 ms after its stamp).

    python bench/forged_boots.py OUT.bin --boots 70000 [--frames 3]
    python bench/forged_boots.py OUT.bin --mb 12 --stats   # and the peak RSS of stats --json

``--stats`` runs ``stats --json`` on it as its own process (bench/memory.py's ``run``: the
process's own ``ru_maxrss``, wall and CPU time), after the kernels are compiled.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from firmware_host.link.recorder import RX_TIMES_DTYPE
from protocol.catalogue import BY_NAME
from protocol.encode import encode_records
from protocol.layout import layout

STEP_US = 5_000_000  # hub time between a boot's frames
BOOT_GAP_NS = 1_000_000_000  # host time between a boot's last frame and the next HELLO
CUE = 3
KINDS = ("HELLO", "HEARTBEAT", "CLOCK_SYNC")  # a boot's frames: these, the last repeated


def _records(name: str, n: int) -> np.ndarray:
    records = np.zeros(n, layout(BY_NAME[name].msg_type).dtype)
    records["node"] = 0
    return records


def forged_boots(boots: int, frames: int = 3, seed: int = 0) -> tuple[bytes, np.ndarray]:
    """The capture of ``boots`` forged boots of ``frames`` hub frames each, and its ``.rxt``
    records (``RX_TIMES_DTYPE``).  Each boot's hub clock starts at a random stamp (some wrap
    within their boot), its frames ``STEP_US`` apart, each arriving 0.1-0.9 ms after its stamp
    on a host clock that runs on across boots."""
    rng = np.random.default_rng(seed)
    kind = np.minimum(np.arange(frames), len(KINDS) - 1)  # per frame of a boot
    base = rng.integers(0, 1 << 32, boots)  # each boot's first stamp
    step = np.arange(frames) * STEP_US
    t_us = (base[:, None] + step) % (1 << 32)  # (boots, frames)
    boot_ns = np.arange(boots) * (frames * STEP_US * 1000 + BOOT_GAP_NS)
    arrive_ns = boot_ns[:, None] + step * 1000 + rng.integers(100_000, 900_000, (boots, frames))
    encoded = []
    for k, name in enumerate(KINDS):
        at = np.flatnonzero(kind == k)  # this kind's frames of a boot
        rec = _records(name, boots * len(at))
        rec["seq"] = np.tile(at, boots)
        rec["t_us"] = t_us[:, at].ravel()
        if name == "HELLO":
            rec["boot_id"] = np.arange(1, boots + 1)
            rec["proto"], rec["nodes_present"] = 1, 0xFF
        elif name == "HEARTBEAT":
            rec["nodes_ok"], rec["rx_bad"] = 0xFF, 1
        else:  # the cue's clock, 2 s behind the hub's and 20 ppm slow
            rec["peer"] = CUE
            cue = (rec["t_us"].astype(np.int64) - 2_000_000) * (1 - 20e-6)
            rec["peer_t_us"] = cue.astype(np.int64) % (1 << 32)
        encoded.append(encode_records(rec))
    count = np.bincount(kind, minlength=len(KINDS))  # of each kind a boot
    occurrence = np.array([np.count_nonzero(kind[:j] == k) for j, k in enumerate(kind)])
    first = np.concatenate(([0], np.cumsum(count * boots)[:-1]))  # each kind's in ``every``
    at = first[kind] + np.arange(boots)[:, None] * count[kind] + occurrence  # (boots, frames)
    every = [frame for frames_of in encoded for frame in frames_of]
    wire = [every[i] for i in at.ravel().tolist()]
    return b"".join(wire), _rx_times(np.array([len(f) for f in wire]), arrive_ns.ravel())


def _rx_times(lengths: np.ndarray, arrive_ns: np.ndarray) -> np.ndarray:
    """A read a frame, at its arrival: the frames are seconds apart, and a host reads what has
    come (a busy table's reads take about 90 bytes each)."""
    rx = np.zeros(len(lengths), RX_TIMES_DTYPE)
    rx["offset"] = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    rx["host_rx_ns"] = arrive_ns
    return rx


def write(path: Path, boots: int, frames: int = 3, seed: int = 0) -> Path:
    """The capture at ``path`` and its ``.rxt`` beside it."""
    data, rx = forged_boots(boots, frames, seed)
    path.write_bytes(data)
    rx.tofile(path.with_suffix(".rxt"))
    return path


def boots_for(mb: float, frames: int) -> int:
    """How many boots of ``frames`` frames make about ``mb`` MB."""
    data, _ = forged_boots(100, frames)
    return max(1, round(mb * 1e6 / len(data) * 100))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the capture to write (its .rxt beside it)")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--boots", type=int, help="how many boots")
    size.add_argument("--mb", type=float, help="about how many MB of capture")
    parser.add_argument("--frames", type=int, default=3, help="hub frames a boot (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stats", action="store_true", help="then time stats --json on it")
    args = parser.parse_args()
    boots = args.boots if args.boots is not None else boots_for(args.mb, args.frames)
    path = write(args.out, boots, args.frames, args.seed)
    print(f"{path}: {boots} boots of {args.frames} frames, {path.stat().st_size / 1e6:.1f} MB")
    if args.stats:
        sys.path.insert(0, str(ROOT / "bench"))
        from memory import CACHE, run  # the process's own peak, wall and CPU

        CACHE.mkdir(exist_ok=True)

        run([sys.executable, "-m", "firmware_host.live.warmup"], "compiling the kernels", None)
        ran = run([sys.executable, "-m", "firmware_host", "stats", "--json", str(path)], "stats",
                  None)  # fmt: skip
        print(f"stats --json: peak RSS {ran.rss_mb:.0f} MB, {ran.wall_s:.1f} s, "
              f"{ran.cpu_s:.1f} s CPU")  # fmt: skip


if __name__ == "__main__":
    main()
