"""`firmware-host plot`: a shot's picture, read back as people and tests can (issue 12.1)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from firmware_host.cli import main

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("captures")
    made = {}
    for scenario, sensors in (("push", "full"), ("double_hit", "full"), ("item20_2b", "full")):
        made[scenario] = d / f"{scenario}.bin"
        assert main(["simulate", "--scenario", scenario, "--sensors", sensors,
                     "--capture", str(made[scenario])]) == 0  # fmt: skip
    made["minimum"] = d / "minimum.bin"
    assert main(["simulate", "--scenario", "push", "--sensors", "minimum",
                 "--capture", str(made["minimum"])]) == 0  # fmt: skip
    return made


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def texts(svg: Path) -> list[str]:
    """Every text of the picture, as the SVG keeps it (svg.fonttype none: text stays text)."""
    return ["".join(t.itertext()) for t in ET.parse(svg).iter(f"{SVG}text")]


def final_verdict(capture: Path, shot: int, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["replay", str(capture)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    return [v for v in lines if v.get("shot") == shot and not v.get("early")][-1]


@pytest.mark.parametrize(
    ("scenario", "verdict", "rule"),
    [("push", "FOUL", "19.1"), ("double_hit", "FOUL", "18"), ("item20_2b", "LEGAL", "20(2)(b)")],
)
def test_a_shot_is_drawn_with_its_verdict_rule_and_reason(
    captures, tmp_path, capsys, scenario, verdict, rule
):
    png, svg = tmp_path / "shot.png", tmp_path / "shot.svg"
    assert main(["plot", str(captures[scenario]), "--shot", "1", "-o", str(png)]) == 0
    assert main(["plot", str(captures[scenario]), "--shot", "1", "-o", str(svg)]) == 0
    assert png_size(png) == (1200, 800)
    said = texts(svg)
    title = next(t for t in said if t.startswith("Shot 1"))
    line = final_verdict(captures[scenario], 1, capsys)
    assert f"{verdict} {rule}" in title
    assert " ".join(line["reason"].split()) in " ".join(title.split())
    # the events are listed beside the table and the stroke's tip is on the time strip
    assert any("tip on the cue ball" in t for t in said)
    assert any(t.startswith("tip ") and t.endswith(" ms") for t in said)


def test_a_double_hit_shows_both_tip_contacts_on_the_strip(captures, tmp_path):
    svg = tmp_path / "dh.svg"
    assert main(["plot", str(captures["double_hit"]), "--shot", "1", "-o", str(svg)]) == 0
    assert len([t for t in texts(svg) if t.startswith("tip ") and t.endswith(" ms")]) == 2


def test_without_a_tracker_the_picture_says_positions_are_unknown(captures, tmp_path):
    svg = tmp_path / "min.svg"
    assert main(["plot", str(captures["minimum"]), "--shot", "1", "-o", str(svg)]) == 0
    said = texts(svg)
    assert "ball positions unknown (no tracker)" in said
    assert any("tip on the cue ball" in t for t in said)


def test_all_draws_every_shot(captures, tmp_path):
    assert main(["plot", str(captures["item20_2b"]), "--all", str(tmp_path / "pics")]) == 0
    assert [p.name for p in sorted((tmp_path / "pics").iterdir())] == ["shot-001.png"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shot", "9", "-o", "x.png"], "--shot 9: "),
        (["--shot", "1", "-o", "x.jpg"], "must end in .png or .svg"),
        (["--shot", "1"], "--shot N needs -o FILE"),
        (["--shot", "1", "-o", "/proc/none/x.png"], "cannot write it"),
    ],
)
def test_a_bad_request_is_one_line_and_status_2(captures, args, says):
    done = subprocess.run(
        [sys.executable, "-m", "firmware_host", "plot", str(captures["push"]), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
