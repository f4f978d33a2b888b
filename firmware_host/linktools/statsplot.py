"""``stats --png``: each node's clock rate and the frames lost, over the capture's time.

matplotlib's object API on the Agg canvas (no pyplot, no display), as
:mod:`firmware_host.pictures.plot` draws.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure


def draw(report: dict[str, Any], path: str | Path) -> None:
    """Two panels sharing the time axis: drift (ppm with its uncertainty as error bars,
    dotted: datasheet limits), and frames lost so far per node with bad frames so far per
    reason."""
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    drift, loss = fig.subplots(2, 1, sharex=True)
    unit = "host receive time" if report["clock"] == "host" else "hub clock"
    for node, entry in report["nodes"].items():
        label, colour = f"{node} {entry['name']}", f"C{int(node)}"  # one colour per node
        clock = entry.get("clock")
        if clock:
            t, _, ppm, unc = zip(*clock["windows"], strict=True)
            drift.errorbar(t, ppm, yerr=unc, marker=".", capsize=2, label=label, color=colour)
            for sign in (1, -1):
                drift.axhline(sign * clock["limit_ppm"], color=colour, ls=":", lw=0.8)
        lost = entry["lost"]
        if lost["count"]:
            times = [0.0, *lost["times_s"], report["span_s"]]
            totals = [0, *(sum(lost["missing"][: k + 1]) for k in range(len(lost["missing"])))]
            loss.step(times, [*totals, totals[-1]], where="post", label=label, color=colour)
    dashes = ("--", ":", "-.", (0, (5, 1)), (0, (1, 3)))  # one per bad-frame reason, in black
    for (reason, entry), dash in zip(report["bad"].items(), dashes, strict=False):
        times = [0.0, *entry["times_s"], report["span_s"]]  # a count that keeps rising: the cable
        totals = list(range(len(entry["times_s"]) + 1))
        loss.step(times, [*totals, totals[-1]], where="post", color="k", ls=dash,
                  label=f"bad ({reason})")  # fmt: skip
    drift.set_ylabel(f"clock rate, ppm (vs {report['clock']})")
    drift.set_title("Clock rate per node, with its uncertainty (dotted: datasheet limits)")
    loss.set_ylabel("frames so far")
    loss.set_xlabel(f"s ({unit})")
    loss.set_title("Frames lost (seq gaps) and bad frames (black)")
    for ax in (drift, loss):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", ncols=4)
    fig.savefig(path, dpi=100)
