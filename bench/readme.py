"""Run the benches and rewrite the README's figure tables, so the figures cannot go stale.

Each table sits between two markers in README.md:

    <!-- bench/readme.py: decode -->
    | path | MB/s | frames/s |
    ...
    <!-- /bench/readme.py: decode -->

``python bench/readme.py`` measures (several minutes: a one-hour match is
simulated once and decoded, the numba kernels are compiled cold once) and
rewrites every table; the prose around them says what they mean and is
written by hand.  ``--check`` only checks that each table is there, in the
format this script writes (tests/test_readme_figures.py runs it): a table
edited by hand into another shape, or a figure moved out of its table,
fails.  The verdict-accuracy table (bench/verdicts.py, 20 matches of 10
minutes on three sensor sets, most of an hour) is not rewritten here.

    nice python bench/readme.py            # measure and rewrite README.md
    nice python bench/readme.py --only busy  # one bench's tables (the date stays)
    python bench/readme.py --check         # the format only, no measuring
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"
NUMBER = r"(?:[0-9][0-9,.]*|-)"  # "-": no value (a rate of nothing found)


@dataclass(frozen=True)
class Table:
    """One figure table: its header, the first cell of each row, and the other cells' shape."""

    name: str
    header: tuple[str, ...]
    rows: tuple[str, ...]  # first cells, in order
    cell: str = NUMBER  # every other cell

    def render(self, cells: list[list[str]]) -> str:
        lines = [self._line(self.header), self._line(("---",) * len(self.header))]
        lines += [self._line((first, *rest)) for first, rest in zip(self.rows, cells, strict=True)]
        return "\n".join(lines)

    @staticmethod
    def _line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cells) + " |"

    def problems(self, block: str) -> list[str]:
        """How ``block`` differs from what :meth:`render` writes (values aside)."""
        lines = block.strip("\n").splitlines()
        want = [self._line(self.header), self._line(("---",) * len(self.header))]
        if lines[:2] != want:
            return [f"{self.name}: header {lines[:2]} is not {want}"]
        out = []
        if len(lines) - 2 != len(self.rows):
            out.append(f"{self.name}: {len(lines) - 2} rows, the script writes {len(self.rows)}")
        for line, first in zip(lines[2:], self.rows, strict=False):
            pattern = re.escape(f"| {first} |") + (rf" {self.cell} \|") * (len(self.header) - 1)
            if not re.fullmatch(pattern, line):
                out.append(f"{self.name}: row {line!r} is not | {first} | {self.cell} ... |")
        return out


sys.path.insert(0, str(Path(__file__).parent))  # the benches beside this script
from busy import STAGES

KINDS = ("cushion", "pocket", "line_cross", "ball_contact", "cue_contact", "shot_start")
TABLES = {
    t.name: t
    for t in (
        Table(
            "decode",
            ("path", "MB/s", "M frames/s"),
            (
                "bulk decoder (numba, one pass)",
                "streaming decoder, 4 KiB chunks",
                "per-frame construct parse",
            ),
        ),
        Table(
            "decode-ratios",
            ("ratio", "measured", "target"),
            ("bulk / construct", "streaming / construct", "streaming / a 12 Mbaud link"),
            r"(?:[0-9][0-9,.]*×|≥ [0-9]+×|-)",
        ),
        Table(
            "simulate",
            ("10 simulated minutes, full sensors", "value"),
            (
                "frames",
                "capture (MB)",
                "physics (s)",
                "sensors, hub and files (s)",
                "total (s)",
                "× real time",
            ),
        ),
        Table(
            "fusion",
            ("one-hour full-sensor match", "value"),
            (
                "capture (MB)",
                "frames",
                "events",
                "cold numba compile (s)",
                "warm, capture → events (s)",
                "decode and rows (s)",
                "timeline (s)",
                "fusion (s)",
                "order right, events > 1 ms apart (%)",
            ),
        ),
        Table(
            "busy",
            ("busy hour, full sensors (bench/busy.py)", "value"),
            (
                "capture (MB)",
                "frames",
                "balls moving (mean over the hour)",
                "ball contacts per second",
                "cushion hits per second",
                "events",
            ),
        ),
        Table(
            "busy-stages",
            (
                "stage (CPU s, median of 5 alternating runs)",
                "2026-12-01 (d87fbe5)",
                "now",
                "now / then",
            ),
            ("whole process (`events`)", *STAGES),
            r"(?:[0-9][0-9,.]*×?|-)",
        ),
        Table(
            "attribution",
            (
                "kind",
                "true",
                "found",
                "recall (found / true, %)",
                "ball right",
                "precision (right / found, %)",
                "extra (match no true event)",
            ),
            KINDS,
        ),
    )
}


def _f(value: float, digits: int = 2) -> str:
    return f"{value:,.{digits}f}"


def _pct(num: int, den: int) -> str:
    return _f(100 * num / den) if den else "-"


def decode_cells(decode: dict[str, Any]) -> dict[str, Any]:
    """bench/decode.py's figures as table cells, one list per row."""
    return {
        "decode": [[_f(mbps, 1), _f(fps / 1e6, 3)] for _, mbps, fps in decode["rows"]],
        "decode-ratios": [
            [f"{_f(decode['bulk_x'], 0)}×", "≥ 100×"],
            [f"{_f(decode['stream_x'], 0)}×", "-"],
            [f"{_f(decode['link_x'], 0)}×", "≥ 15×"],
        ],
    }


def simulate_cells(sim: dict[str, Any]) -> dict[str, Any]:
    best = sim["best_s"]
    return {
        "simulate": [
            [f"{sim['frames']:,}"],
            [_f(sim["mb"], 1)],
            [_f(best["physics"])],
            [_f(best["sensors+hub+files"])],
            [_f(best["total"])],
            [_f(sim["realtime_x"], 0)],
        ]
    }


def fusion_cells(fusion: dict[str, Any]) -> dict[str, Any]:
    scores = {s.kind: s for s in fusion["scores"]}
    return {
        "fusion": [
            [_f(fusion["mb"], 1)],
            [f"{fusion['frames']:,}"],
            [f"{fusion['events']:,}"],
            [_f(fusion["cold_s"], 0)],
            [_f(fusion["warm_s"])],
            [_f(fusion["decode_s"])],
            [_f(fusion["timeline_s"])],
            [_f(fusion["fusion_s"])],
            [_f(100 * fusion["order_far"], 3)],
        ],
        "attribution": [
            [
                str(s.truth),
                str(s.found),
                _pct(s.found, s.truth),
                str(s.right),
                _pct(s.right, s.found),
                str(s.extra),
            ]
            for s in (scores[k] for k in KINDS)
        ],
    }


def busy_cells(busy: dict[str, Any]) -> dict[str, Any]:
    now, then = busy["versions"][0], busy["versions"][1]
    return {
        "busy": [
            [_f(busy["mb"], 1)],
            [f"{busy['frames']:,}"],
            [_f(busy["moving_mean"], 1)],
            [_f(busy["contacts_per_s"])],
            [_f(busy["cushions_per_s"])],
            [f"{now['events']:,}"],
        ],
        "busy-stages": [
            [_f(then["median"][s], 3), _f(now["median"][s], 3), f"{_f(1 / then['ratio'][s])}×"]
            for s in ("whole", *STAGES)
        ],
    }


#: Each bench and the tables its figures fill.
BENCHES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "decode": decode_cells,
    "simulate": simulate_cells,
    "fusion": fusion_cells,
    "busy": busy_cells,
}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- bench/readme.py: {re.escape(name)} -->\n)(.*?)(\n<!-- /bench/readme.py: "
        rf"{re.escape(name)} -->)",
        re.DOTALL,
    )


def check(text: str) -> list[str]:
    """Every table present, each in the format this script writes; [] when all is well."""
    out = []
    for name, table in TABLES.items():
        found = _block(name).search(text)
        if found is None:
            out.append(f"{name}: no <!-- bench/readme.py: {name} --> ... block")
        else:
            out += table.problems(found.group(2))
    return out


def rewrite(text: str, values: dict[str, Any], stamp: str | None) -> str:
    """The README with the tables in ``values`` rendered from them, and the date measured
    (``stamp``; None leaves it: only some benches ran)."""
    for name, table in TABLES.items():
        if name not in values:
            continue
        rendered = table.render(values[name])
        text, n = _block(name).subn(lambda m, r=rendered: m.group(1) + r + m.group(3), text)
        if n != 1:
            raise SystemExit(f"README.md: {n} blocks for {name}, want 1")
    if stamp is None:
        return text
    return re.sub(
        r"(<!-- bench/readme.py: measured -->)[^<]*(<!-- /bench/readme.py: measured -->)",
        rf"\g<1>{stamp}\g<2>",
        text,
    )


def _bench(name: str) -> Callable[..., dict[str, Any]]:
    return __import__(name).measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check the format only")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(BENCHES),
        help="run these benches and rewrite their tables",
    )
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    if args.check:
        problems = check(text)
        sys.stderr.writelines(f"{args.readme}: {p}\n" for p in problems)
        return 1 if problems else 0
    values: dict[str, Any] = {}
    for name in args.only or BENCHES:
        got = _bench(name)()
        values |= BENCHES[name](got)
        if name == "fusion":
            speeds = sorted(
                round(e.get("speed_mps", float("nan")), 3) for e in got["missed_cushions"]
            )
            print(f"cushion hits never found: {len(speeds)}; speeds (m/s): {speeds}")
    stamp = None if args.only else datetime.now(UTC).strftime("%Y-%m-%d")
    args.readme.write_text(rewrite(text, values, stamp), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
