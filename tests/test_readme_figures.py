"""The README's figures come from bench/readme.py: every table there, in the format it writes.

No bench is run here (they take minutes): this checks the format, so a
figure typed in by hand, a table reshaped or a marker lost fails, and
``nice python bench/readme.py`` is the one way to change the figures.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_readme", ROOT / "bench" / "readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


readme = _load()
TEXT = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_tables_are_in_the_format_the_script_writes() -> None:
    assert readme.check(TEXT) == []


def test_the_readme_holds_measured_figures_with_their_date() -> None:
    block = readme._block("attribution").search(TEXT).group(2)
    assert "| cushion | - |" not in block, "bench/readme.py has not been run"
    assert "<!-- bench/readme.py: measured -->20" in TEXT


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda t: t.replace("| precision (right / found, %) |", "| precision |"), "attribution: header"),
        (lambda t: t.replace("| pocket |", "| pockets |"), "attribution: row '| pockets |"),
        (lambda t: t.replace("<!-- /bench/readme.py: fusion -->", ""), "fusion: no <!-- bench"),
        (lambda t: t.replace("| frames | ", "| frames | about ", 1), "simulate: row '| frames | about"),
        (lambda t: t.replace("| shot_start |", "| cue ball |"), "attribution: row '| cue ball |"),
    ],
    ids=["header-renamed", "row-renamed", "marker-lost", "figure-in-words", "row-replaced"],
)  # fmt: skip
def test_a_table_edited_by_hand_fails_the_check(edit, says: str) -> None:
    edited = edit(TEXT)
    assert edited != TEXT
    problems = readme.check(edited)
    assert any(p.startswith(says) for p in problems), problems


def test_a_rewrite_gives_tables_the_check_accepts() -> None:
    values = {
        name: [[str(k + 1)] * (len(table.header) - 1) for k in range(len(table.rows))]
        for name, table in readme.TABLES.items()
    }
    values["decode-ratios"] = [["447×", "≥ 100×"], ["9×", "-"], ["57×", "≥ 15×"]]
    text = readme.rewrite(TEXT, values, "2026-12-31")
    assert readme.check(text) == []
    assert "| streaming / a 12 Mbaud link | 57× | ≥ 15× |" in text
    assert "<!-- bench/readme.py: measured -->2026-12-31" in text
