"""The virtual table's scenario library, judged from its ground truth, gives each intended verdict.

The truth is EVENTS.md events in true seconds (``t_s``); the referee sees them
as the fusion would emit them with perfect clocks: ``t_us`` on one timeline.
"""

from __future__ import annotations

from typing import Any

import pytest

from rules.referee import Referee

scenarios = pytest.importorskip("firmware_host.virtual_table.scenarios")

NAMES = sorted(name for name in scenarios.SCENARIOS if name != "random")


def _us(t_s: float) -> int:
    return round(t_s * 1e6)


def as_events(truth_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for ev in truth_events:
        if ev["type"].startswith("_"):  # physics detail, not an EVENTS.md event
            continue
        ev = {k: v for k, v in ev.items() if k != "t_s"} | {"t_us": _us(ev["t_s"])}
        if ev["type"] == "shot_end":
            ev["paths"] = {b: [[_us(t), x, y] for t, x, y in p] for b, p in ev["paths"].items()}
        out.append(ev)
    return sorted(out, key=lambda e: e["t_us"])


def summary(lines: list[dict[str, Any]]) -> list[tuple]:
    return [
        (v["shot"], v["verdict"], tuple(v["rules"]), v.get("satisfied"))
        for v in lines
        if v["kind"] == "verdict" and not v.get("early")
    ]


@pytest.mark.parametrize("name", NAMES)
def test_scenario_gets_its_intended_verdict(name: str) -> None:
    truth = scenarios.SCENARIOS[name]()
    referee = Referee(table=truth.table)
    lines = [line for ev in as_events(truth.events) for line in referee.feed(ev)] + referee.finish()
    assert summary(lines) == summary(truth.verdicts)
