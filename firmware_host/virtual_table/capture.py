"""A simulated match written as fast as possible: capture, ground truth, frame truth.

Three files, each optional but the capture:

* the **capture** (ICD §8): the raw bytes the hub sent, in wire order;
* the **truth** (JSON Lines): EVENTS.md events with ``t_us`` = the true hub
  time (the hub clock's reading at the true instant, unwrapped, in the boot
  running then) and the true balls, ``boot`` and ``node_status`` events
  from the hub's life, and the intended verdict of every shot as
  ``{"kind": "verdict", ...}`` lines, all in true-time order;
* the **frame truth** (``.npz``): one :data:`~.hub.FRAME_TRUTH` row per
  frame in capture order (byte offset, node, seq, stamp, the exact hub time
  of the stamp and of the physical event), plus every clock's parameters,
  so the timing core can be checked frame by frame.

>>> from firmware_host.virtual_table.capture import load_frame_truth  # doctest: +SKIP
>>> frames, clocks = load_frame_truth("frames.npz")                  # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import numpy as np

from protocol.catalogue import NODE_NAMES

from .hub import BAUD_S_PER_BYTE, FRAME_TRUTH, OFFLINE_NOTICE_S, HubConfig, Wire, build_wire
from .signer import NodeSigning
from .truth import MatchTruth


def _hub_us(wire: Wire, t_s: float) -> int:
    boot = wire.timeline.boots[int(wire.timeline.boot_index(t_s)[()])]
    return int(np.rint(boot.hub_us(t_s)))


def _order(t_s: float, line: dict[str, Any]) -> tuple[float, int, int]:
    """At one instant: a shot's events, its end, its verdict, then the next shot's start."""
    shot = line.get("shot")
    rank = 2 if "kind" in line else int(line.get("type") == "shot_end")
    return (t_s, -1 if shot is None else shot, rank)


def truth_lines(match: MatchTruth, wire: Wire) -> list[dict[str, Any]]:
    """The ground truth as EVENTS.md lines (events and verdicts), in true-time order."""
    cfg = wire.config
    timed: list[tuple[float, dict[str, Any]]] = []
    table = {
        "length_mm": match.table.length_mm,
        "width_mm": match.table.width_mm,
        "ball_mm": match.table.ball_mm,
    }
    nodes = [NODE_NAMES[n] for n in cfg.nodes]
    for boot in wire.timeline.boots:
        t = boot.boot_s + 0.01  # the HELLO
        timed.append(
            (
                t,
                {
                    "type": "boot",
                    "shot": None,
                    "boot_id": boot.boot_id,
                    "table": table,
                    "nodes": nodes,
                },
            )
        )
    for node, off, on in wire.plan.offline:
        for t, status in ((off + OFFLINE_NOTICE_S, "offline"), (on, "online")):
            timed.append(
                (
                    t,
                    {
                        "type": "node_status",
                        "shot": None,
                        "node": NODE_NAMES[node],
                        "status": status,
                    },
                )
            )
    for event in match.events:
        # physics detail and the physics' own boot (the hub's, with its boot_id, replaces it)
        if not event["type"].startswith("_") and event["type"] != "boot":
            line = {k: v for k, v in event.items() if k != "t_s"}
            if "paths" in line:  # polylines of [t_s, x, y] -> [t_us, x, y]
                line["paths"] = {
                    ball: [[_hub_us(wire, t), x, y] for t, x, y in points]
                    for ball, points in line["paths"].items()
                }
            timed.append((event["t_s"], line))
    for verdict in match.verdicts:
        line = {k: v for k, v in verdict.items() if k not in ("t_s", "evidence_s")}
        line.setdefault("kind", "verdict")
        if "evidence_s" in verdict:
            line["evidence"] = [_hub_us(wire, t) for t in verdict["evidence_s"]]
        timed.append((verdict["t_s"], line))
    timed.sort(key=lambda item: _order(*item))
    return [{"t_us": _hub_us(wire, t), **line} for t, line in timed]


def write_truth(lines: list[dict[str, Any]], out: TextIO) -> None:
    out.writelines(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines)


def save_frame_truth(wire: Wire, path: str | Path) -> None:
    """The frame truth and the clock parameters, as a compressed ``.npz``."""
    boots = wire.timeline.boots
    np.savez_compressed(
        path,
        frames=wire.truth,
        boot_s=np.array([b.boot_s for b in boots]),
        boot_id=np.array([b.boot_id for b in boots], np.uint32),
        clock_offset_us=np.array([[c.offset_us for c in b.clocks] for b in boots]),
        clock_ppm=np.array([c.ppm for c in boots[0].clocks]),
        clock_drift_ppm_per_s=np.array([c.drift_ppm_per_s for c in boots[0].clocks]),
        config=np.array(json.dumps(asdict(wire.config))),
    )


def load_frame_truth(path: str | Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(frames, clocks)``: the FRAME_TRUTH rows and the other arrays by name."""
    with np.load(path) as data:
        rest = {name: data[name] for name in data.files if name != "frames"}
        return data["frames"].astype(FRAME_TRUTH), rest


def write_capture(wire: Wire, out: BinaryIO) -> int:
    """The wire bytes, in order; returns how many."""
    data = b"".join(wire.chunks)
    out.write(data)
    return len(data)


def rx_times(wire: Wire) -> np.ndarray:
    """A ``.rxt`` for the capture: each chunk read the instant its last byte arrived,
    by a host whose clock is true time (``host_rx_ns`` counts from the hub's boot)."""
    from ..link.recorder import RX_TIMES_DTYPE

    lengths = np.array([len(c) for c in wire.chunks], np.int64)
    out = np.zeros(len(lengths), RX_TIMES_DTYPE)
    out["offset"] = np.cumsum(lengths) - lengths
    arrived_s = wire.chunk_s + lengths * BAUD_S_PER_BYTE - wire.start_s
    out["host_rx_ns"] = np.rint(arrived_s * 1e9).astype(np.int64)
    return out


def simulate(
    match: MatchTruth,
    cfg: HubConfig,
    capture: str | Path,
    truth: str | Path | None = None,
    frame_truth: str | Path | None = None,
    rx_times_path: str | Path | None = None,
    signing: NodeSigning | None = None,
) -> Wire:
    """Play ``match`` on the virtual table into files; returns the wire for inspection."""
    wire = build_wire(match, cfg, signing)
    with open(capture, "wb") as out:
        write_capture(wire, out)
    if rx_times_path is not None:
        rx_times(wire).tofile(rx_times_path)
    if truth is not None:
        with open(truth, "w", encoding="utf-8") as out_text:
            write_truth(truth_lines(match, wire), out_text)
    if frame_truth is not None:
        save_frame_truth(wire, frame_truth)
    return wire
