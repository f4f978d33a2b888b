"""Link health after the fact: what ``firmware-host stats`` finds in a capture.

Everything is computed on the decoder's columnar output (one kernel pass),
per node and message type, and named in words when it is a problem:

* frames, rates and the longest gap per node and type;
* frames lost (``seq`` gaps, with the offset of the frame after each gap)
  and retransmissions (flags bit 0) per node;
* bad frames by reason with their offsets, hub reboots (a HELLO with a new
  ``boot_id``) with theirs;
* each node's clock rate over time against ICD §7 (``MAX_PPM``), and with
  host receive times the arrival latency per node.

How drift is measured (docs/link-debugging.md): in windows of
``WINDOW_S`` of hub time, the line through each node's CLOCK_SYNC samples
is the *upper envelope* of hub-minus-node time (a beacon is always received
after it left, so the samples with the shortest delay touch the true line;
:func:`firmware_host.timing.clock_model.envelope_line`).  Its slope is the
node's rate against the hub.  The hub's own crystal is off by up to 50 ppm,
so with a ``.rxt`` the hub is measured the same way against the host's
clock (hub stamps against their arrival times, over each boot) and the two
add up to the node's rate against the host: that is the figure checked
against the datasheet.  Without host times the rate against the hub is
checked against the datasheet limits of both crystals together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocol.catalogue import BY_TYPE, FLAG_RETRANSMISSION, NODE_NAMES
from protocol.decoder import STATUS_NAMES, Decoded, decode_capture
from protocol.kernels import BAD_COBS, DUPLICATE, OK, UNKNOWN
from protocol.seqwindow import GAP, LATE, SEQ_MOD

from ..cliutil import plural
from ..timing.clock_model import MAX_PPM, envelope_line
from .recording import arrival_ns, boot_starts, hub_clock_at, unwrap_u32, wire_frames

WINDOW_S = 60.0  # drift windows, hub time
MIN_SYNCS = 8  # a window with fewer CLOCK_SYNC samples of a node gives no figure
PPM_MARGIN = 5.0  # measurement margin before a rate is called out of spec
HEARTBEAT_GAP_S = 2.5  # HEARTBEAT is 1 Hz: a longer silence is a stalled link
MAX_LISTED = 10  # offsets listed per finding (all are in --json)


@dataclass
class Found:
    """One problem: its words, and the offsets where it is."""

    what: str
    count: int
    offsets: list[int] = field(default_factory=list)

    def text(self) -> str:
        if not self.offsets:
            return self.what
        shown = ", ".join(str(o) for o in self.offsets[:MAX_LISTED])
        more = (
            f" and {len(self.offsets) - MAX_LISTED} more" if len(self.offsets) > MAX_LISTED else ""
        )
        return f"{self.what} (at offset{'s' if len(self.offsets) > 1 else ''} {shown}{more})"


def node_label(node: int) -> str:
    return f"node {node} ({NODE_NAMES.get(node, '?')})"


def _reboots(decoded: Decoded, starts: np.ndarray) -> list[dict[str, int]]:
    """Each boot after the first: where its HELLO is and its ``boot_id``."""
    hello = decoded.tables.get("HELLO")
    if hello is None or not len(starts):
        return []
    at = np.searchsorted(hello["offset"], starts)
    return [{"offset": int(o), "boot_id": int(i)} for o, i in zip(starts, hello["boot_id"][at])]


def _times_s(decoded: Decoded, capture: np.ndarray, rx: np.ndarray | None) -> np.ndarray:
    """Each frame's time in seconds since the first: its host receive time, else the hub
    clock (see :mod:`.recording`)."""
    frames = decoded.frames
    if rx is None or not len(rx):
        t = hub_clock_at(decoded, frames["offset"]) / 1e6
    else:
        starts, stops = wire_frames(capture)
        stop = stops[np.clip(np.searchsorted(starts, frames["offset"]), 0, len(stops) - 1)]
        t = arrival_ns(rx, stop - 1) / 1e9
    return t - t.min() if len(t) else t


def _envelope_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(value at x[0], slope) of the upper envelope of y over ascending x."""
    order = np.argsort(x, kind="stable")
    x0 = float(x[order[0]])
    a, b = envelope_line((x[order] - x0).astype(np.float64), y[order].astype(np.float64))
    return float(a), float(b)


def _lost(good: np.ndarray, t_s: np.ndarray) -> dict[int, dict[str, Any]]:
    """Per node: frames missing in ``seq``; per gap, the offset and time of the frame after it
    and how many are missing there.

    The decoder marked each frame (:mod:`protocol.seqwindow`): a GAP frame follows
    ``seq_gap`` missing ones; a LATE resend (ICD §3) fills one of the gap it falls in,
    the nearest before it that covers its ``seq``, as the decoder's count does.
    """
    out: dict[int, dict[str, Any]] = {}
    for node in np.unique(good["node"]).tolist():
        mine = np.flatnonzero(good["node"] == node)
        gaps = mine[good["seq_mark"][mine] == GAP]
        missing = good["seq_gap"][gaps].astype(int)
        for late in mine[good["seq_mark"][mine] == LATE].tolist():
            seq = int(good["seq"][late])
            before = np.flatnonzero(gaps < late)[::-1]
            first = good["seq"][gaps[before]].astype(int) - good["seq_gap"][gaps[before]]
            covers = before[(seq - first) % SEQ_MOD < good["seq_gap"][gaps[before]]]
            if len(covers) and missing[covers[0]]:
                missing[covers[0]] -= 1
        kept = missing > 0
        if kept.any():
            at = gaps[kept]
            out[node] = {
                "count": int(missing.sum()),
                "offsets": good["offset"][at].astype(int).tolist(),
                "times_s": t_s[at].tolist(),
                "missing": missing[kept].tolist(),
            }
    return out


def _clock_windows(
    decoded: Decoded, starts: np.ndarray, host_ppm: dict[int, float], t_s: np.ndarray
) -> dict[int, list[list[float]]]:
    """Per node: ``[t_s, offset_us, ppm]`` per window (the capture's time, the node's
    offset from the hub at it, its rate: against the host where known)."""
    sync = decoded.tables.get("CLOCK_SYNC")
    out: dict[int, list[list[float]]] = {}
    if sync is None or not len(sync):
        return out
    sync_t = t_s[np.searchsorted(decoded.frames["offset"], sync["offset"])]
    boot = np.searchsorted(starts, sync["offset"], side="right")
    for b in np.unique(boot).tolist():
        mine, mine_t = sync[boot == b], sync_t[boot == b]
        hub = unwrap_u32(mine["t_us"])
        for node in np.unique(mine["peer"]).tolist():
            sel = mine["peer"] == node
            h, n, when = hub[sel], unwrap_u32(mine["peer_t_us"][sel]), mine_t[sel]
            edges = np.arange(h[0], h[-1] + 1, WINDOW_S * 1e6)
            which = np.searchsorted(edges, h, side="right")
            for w in np.unique(which).tolist():
                in_w = which == w
                if in_w.sum() < MIN_SYNCS or np.ptp(h[in_w]) < WINDOW_S * 1e6 / 4:
                    continue
                a, slope = _envelope_slope(h[in_w], h[in_w] - n[in_w])
                ppm = -slope * 1e6 + host_ppm.get(b, 0.0)  # node vs hub, + hub vs host
                mid = float(np.mean(h[in_w]))
                offset = a + slope * (mid - h[in_w].min())
                out.setdefault(node, []).append([float(np.median(when[in_w])), float(offset), ppm])
    return out


def _hub_vs_host(decoded: Decoded, t_s: np.ndarray, boot: np.ndarray) -> dict[int, float]:
    """Per boot: the hub's rate against the host's clock (ppm), from its own frames."""
    frames = decoded.frames
    hub = (frames["status"] == OK) & (frames["node"] == 0)
    out = {}
    for b in np.unique(boot[hub]).tolist():
        sel = hub & (boot == b)
        if sel.sum() < MIN_SYNCS:
            continue
        host_us = t_s[sel] * 1e6
        _, slope = _envelope_slope(host_us, unwrap_u32(frames["t_us"][sel]) - host_us)
        out[b] = slope * 1e6
    return out


def _latency(frames: np.ndarray, t_s: np.ndarray, boot: np.ndarray) -> dict[int, dict[str, float]]:
    """Per node: arrival latency (ms) above its fastest frame: p50, p95, max."""
    out = {}
    good = frames["status"] == OK
    for node in np.unique(frames["node"][good]).tolist():
        parts = []
        for b in np.unique(boot[good & (frames["node"] == node)]).tolist():
            sel = good & (frames["node"] == node) & (boot == b)
            if sel.sum() < 2:
                continue
            stamp = unwrap_u32(frames["t_us"][sel]).astype(np.float64)
            host = t_s[sel] * 1e6
            a, slope = _envelope_slope(stamp, stamp - host)  # the fastest arrivals touch it
            parts.append((a + slope * (stamp - stamp.min())) - (stamp - host))
        if parts:
            lat = np.concatenate(parts) / 1e3
            p50, p95, top = np.percentile(lat, [50, 95, 100])
            out[node] = {"p50_ms": float(p50), "p95_ms": float(p95), "max_ms": float(top)}
    return out


def _per_type(
    frames: np.ndarray, t_s: np.ndarray, boot: np.ndarray, span_s: float
) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    good = np.isin(frames["status"], (OK, UNKNOWN))
    for node, msg_type in sorted(
        set(zip(frames["node"][good].tolist(), frames["msg_type"][good].tolist()))
    ):
        sel = good & (frames["node"] == node) & (frames["msg_type"] == msg_type)
        t, b = t_s[sel], boot[sel]
        gaps = np.diff(t)
        gaps[b[1:] != b[:-1]] = 0  # no gap across a reboot (the hub clock restarts)
        k = int(np.argmax(gaps)) if len(gaps) else -1
        spec = BY_TYPE.get(msg_type)
        out.setdefault(node, {})[spec.name if spec else f"0x{msg_type:02X}"] = {
            "frames": int(sel.sum()),
            "rate_hz": float(sel.sum() / span_s) if span_s > 0 else 0.0,
            "max_gap_s": float(gaps[k]) if k >= 0 else 0.0,
            "max_gap_at": int(frames["offset"][sel][k + 1]) if k >= 0 else None,
        }
    return out


def _hub_counts(decoded: Decoded, boot: np.ndarray) -> list[Found]:
    """What the hub counted itself (HEARTBEAT, saturating, per boot): bad frames it got
    from the host (the cable's other direction) and frames it dropped for lack of buffer."""
    beats = decoded.tables.get("HEARTBEAT")
    if beats is None or not len(beats):
        return []
    starts = np.searchsorted(decoded.frames["offset"], beats["offset"])
    their_boot = boot[starts]
    found = []
    for name, what in (
        ("rx_bad", "bad frames from the host (the host-to-hub direction)"),
        ("tx_dropped", "frames dropped for lack of buffer (a stalled link)"),
    ):
        total = sum(int(beats[name][their_boot == b].max()) for b in np.unique(their_boot))
        if total:
            first = int(beats["offset"][np.flatnonzero(beats[name])[0]])
            found.append(Found(f"the hub counted {total} {what}", total, [first]))
    return found


def link_stats(capture: np.ndarray, rx: np.ndarray | None = None) -> dict[str, Any]:
    """Everything ``stats`` reports, JSON-ready; ``problems`` names what is wrong in words."""
    decoded = decode_capture(capture)
    frames = decoded.frames
    starts = boot_starts(decoded)
    reboots = _reboots(decoded, starts)
    boot = np.searchsorted(starts, frames["offset"], side="right")
    t_s = _times_s(decoded, capture, rx)
    has_host = rx is not None and len(rx) > 0
    good = np.isin(frames["status"], (OK, DUPLICATE, UNKNOWN))
    span = float(np.ptp(t_s[good])) if good.any() else 0.0
    problems: list[Found] = []

    bad: dict[str, dict[str, Any]] = {}
    for status in np.unique(frames["status"][frames["status"] >= BAD_COBS]).tolist():
        mine = frames["status"] == status
        offsets = frames["offset"][mine].astype(int).tolist()
        reason = STATUS_NAMES[status]
        bad[reason] = {"count": len(offsets), "offsets": offsets, "times_s": t_s[mine].tolist()}
        problems.append(
            Found(f"{plural(len(offsets), 'bad frame')} ({reason})", len(offsets), offsets)
        )
    if reboots:
        problems.append(
            Found(f"hub rebooted {len(reboots)} time{'s' if len(reboots) > 1 else ''}",
                  len(reboots), [r["offset"] for r in reboots])
        )  # fmt: skip

    host_ppm = _hub_vs_host(decoded, t_s, boot) if has_host else {}
    clocks = _clock_windows(decoded, starts, host_ppm, t_s)
    lost = _lost(frames[good], t_s[good])
    retx = frames[good & ((frames["flags"] & FLAG_RETRANSMISSION) != 0)]
    per_type = _per_type(frames, t_s, boot, span)
    latency = _latency(frames, t_s, boot) if has_host else {}
    nodes: dict[str, Any] = {}
    for node in sorted(set(per_type) | set(clocks) | set(lost)):
        label = node_label(node)
        entry: dict[str, Any] = {"name": NODE_NAMES.get(node, "?"), "types": per_type.get(node, {})}
        entry["lost"] = lost.get(node, {"count": 0, "offsets": [], "times_s": [], "missing": []})
        n_lost = entry["lost"]["count"]
        if n_lost:
            what = f"{label}: {plural(n_lost, 'frame')} lost (seq gaps)"
            problems.append(Found(what, n_lost, entry["lost"]["offsets"]))
        mine = retx["offset"][retx["node"] == node].astype(int).tolist()
        entry["retransmissions"] = {"count": len(mine), "offsets": mine}
        if mine:
            problems.append(
                Found(f"{label}: {plural(len(mine), 'retransmission')}", len(mine), mine)
            )
        if node in clocks:
            series = np.array(clocks[node])
            worst = float(series[np.argmax(np.abs(series[:, 2])), 2])
            limit = float(MAX_PPM[node] if has_host else MAX_PPM[node] + MAX_PPM[0])
            entry["clock"] = {
                "reference": "host" if has_host else "hub",
                "ppm": float(np.median(series[:, 2])),
                "worst_ppm": worst,
                "limit_ppm": limit,
                "windows": clocks[node],  # [hub_s, offset_us, ppm]
            }
            if abs(worst) > limit + PPM_MARGIN:
                against = "" if has_host else " against the hub"
                why = "datasheet" if has_host else "datasheet, both crystals"
                problems.append(
                    Found(f"{label}: drift {worst:+.0f} ppm{against}, {why} ±{limit:.0f}", 1)
                )
        if node in latency:
            entry["latency"] = latency[node]
        nodes[str(node)] = entry
    problems += _hub_counts(decoded, boot)
    beats = per_type.get(0, {}).get("HEARTBEAT")
    if beats and beats["max_gap_s"] > HEARTBEAT_GAP_S:
        problems.append(
            Found(f"no HEARTBEAT for {beats['max_gap_s']:.1f} s: the link stalled", 1,
                  [beats["max_gap_at"]])
        )  # fmt: skip
    return {
        "clock": "host" if has_host else "hub",
        "span_s": span,
        "frames": int((frames["status"] == OK).sum()),
        "hub_vs_host_ppm": {str(b): v for b, v in host_ppm.items()},
        "bad": bad,
        "reboots": reboots,
        "nodes": nodes,
        "problems": [{"text": p.text(), "count": p.count, "offsets": p.offsets} for p in problems],
    }
