"""The HIL plugin itself, run inside pytester: what a CI log or a lab engineer gets to read.

The plugin comes in through its ``pytest11`` entry point (the package is
installed, README), as it does for a lab engineer.  The expectations here are taken from what the pipeline says today (and then
twisted), so these tests check the plugin, never the pipeline's verdicts.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_host.pipeline import replay
from hil_tests.make_corpus import dump
from hil_tests.plugin import DEFAULT_CORPUS
from hil_tests.verdicts import decided, final_verdicts

pytestmark = pytest.mark.wall_s(20)  # alone, on an idle core: run first (conftest.py)

CAPTURE = "double_hit.minimum"  # small (tens of kB), and a shot every sensor set decides
LAB = "lab_capture"  # its name in the pytester corpus
LIVE_TESTS = Path(__file__).with_name("test_live.py")
SIM_START_S = 60.0  # building the scenario and numba's cache, on a loaded 2-core machine


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # hypothesis' plugin costs ~2 s per in-process run and nothing here uses it
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def as_found() -> list[dict]:
    lines = replay((DEFAULT_CORPUS / f"{CAPTURE}.bin").read_bytes()).lines
    return [decided(line) for line in final_verdicts(lines)]


def twisted(verdicts: list[dict]) -> list[dict]:
    """The same shots, the first one's verdict changed: an expectation the replay cannot meet."""
    first = dict(verdicts[0], verdict="legal" if verdicts[0]["verdict"] != "legal" else "foul")
    return [first, *verdicts[1:]]


@pytest.fixture
def corpus(pytester: pytest.Pytester) -> Path:
    out = pytester.path / "lab"
    out.mkdir()
    shutil.copy(DEFAULT_CORPUS / f"{CAPTURE}.bin", out / f"{LAB}.bin")
    return out


def write_expectation(corpus: Path, verdicts: list[dict], xfail: str | None = None) -> Path:
    path = corpus / f"{LAB}.expect.json"
    expectation = {"capture": f"{LAB}.bin", "sensors": "minimum", "verdicts": verdicts}
    if xfail:
        expectation["xfail"] = xfail
    path.write_text(dump(expectation))
    return path


@pytest.mark.parametrize(
    ("twist", "xfail", "outcome"),
    [
        (False, None, {"passed": 1}),
        (True, None, {"failed": 1}),
        (True, "known: the pipeline disagrees", {"xfailed": 1}),
        (False, "known: the pipeline disagrees", {"failed": 1}),  # strict: XPASS fails
    ],
    ids=["matches", "differs", "differs-xfail", "matches-xfail-is-strict"],
)
def test_a_capture_is_one_test_judged_by_its_expectation(
    pytester: pytest.Pytester, corpus: Path, twist: bool, xfail: str | None, outcome: dict
) -> None:
    verdicts = as_found()
    write_expectation(corpus, twisted(verdicts) if twist else verdicts, xfail)
    result = run(pytester, "--hil-corpus", str(corpus))
    result.assert_outcomes(**outcome)


def test_a_failure_names_the_shot_and_prints_expected_beside_got(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    verdicts = as_found()
    wrong = twisted(verdicts)
    write_expectation(corpus, wrong)
    result = run(pytester, "--hil-corpus", str(corpus))
    result.assert_outcomes(failed=1)
    shot = verdicts[0]["shot"]
    result.stdout.fnmatch_lines(
        [
            (
                f"*{LAB}.bin (sensors minimum): 1 of {len(verdicts)} verdicts differ; "
                f"first: shot {shot}: expected {wrong[0]['verdict']}*, got {verdicts[0]['verdict']}*"
            ),
            "*shot*expected*got*reason given*",
            f"!! {shot} *{wrong[0]['verdict']}*{verdicts[0]['verdict']}*",
        ]
    )


def test_a_missing_expectation_is_an_error_naming_the_file(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    result = run(pytester, "--hil-corpus", str(corpus))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{corpus / LAB}.expect.json: expectation file missing*"])


def test_hil_corpus_replaces_the_default_corpus(pytester: pytest.Pytester, corpus: Path) -> None:
    write_expectation(corpus, as_found())
    # the default corpus is walked (given as a path) but not collected; the lab's is, unasked
    result = run(pytester, str(DEFAULT_CORPUS), "--hil-corpus", str(corpus), "--co", "-q")
    result.stdout.fnmatch_lines([f"*{LAB}.bin::{LAB}", "1 test collected*"])


def test_live_tests_skip_without_a_port(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_live=LIVE_TESTS.read_text())
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*needs a live table: --hil-port URL*"])


@contextlib.contextmanager
def virtual_table(*options: str) -> Iterator[str]:
    """``firmware-host simulate --pty`` in its own process; the device path is its first line."""
    sim = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "simulate", "--pty", "--scenario", "double_hit"]
        + list(options),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sim.stdout is not None
        device = sim.stdout.readline().strip()
        assert device.startswith("/dev/"), f"simulate --pty printed {device!r}"
        yield device
    finally:
        sim.terminate()
        sim.wait(SIM_START_S)


def live(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_live=LIVE_TESTS.read_text())
    return run(pytester, *args)


def test_live_tests_pass_on_a_looping_virtual_table_and_say_how_many_verdicts(
    pytester: pytest.Pytester,
) -> None:
    # double_hit lasts 10.4 s, so 1.04 s a loop at --speed 10: a 3 s window holds a shot
    with virtual_table("--speed", "10", "--loop") as port:
        result = live(pytester, f"--hil-port={port}", "--hil-seconds=3")
    result.assert_outcomes(passed=3)
    counts = re.findall(r"live equals replay: (\d+) verdicts compared in 3 s", result.stdout.str())
    assert counts and int(counts[0]) >= 1, result.stdout.str()


def truth_count(scenario: str = "double_hit") -> int:
    """How many verdicts the virtual table's match decides: its full-set truth (the corpus)."""
    expectation = json.loads((DEFAULT_CORPUS / f"{scenario}.full.expect.json").read_text())
    return len(expectation["verdicts"])


@pytest.mark.parametrize(
    ("speed", "seconds", "wanted", "outcome", "said"),
    [
        # the whole match once (booted by the daemon's first frame, 1.04 s): the truth's count
        ("10", "4", [f"--hil-verdicts={truth_count()}"], "passed",
         f"*live equals replay: {truth_count()} verdicts compared in 4 s*"),
        # the stroke is 3 s into the match, 60 s at this speed: frames, but no shot in 3 s
        ("0.05", "3", [], "failed", "*0 verdicts were compared in 3 s, at least 1 wanted*"),
    ],
    ids=["whole-match", "no-shot"],
)  # fmt: skip
def test_live_equals_replay_counts_the_verdicts_it_compared(
    pytester: pytest.Pytester, speed: str, seconds: str, wanted: list, outcome: str, said: str
) -> None:
    with virtual_table("--speed", speed, "--wait-host") as port:
        result = live(
            pytester,
            f"--hil-port={port}",
            f"--hil-seconds={seconds}",
            *wanted,
            "-k",
            "live_verdicts",
        )
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines([said])


def test_hil_port_takes_its_value_with_no_path_given(pytester: pytest.Pytester) -> None:
    # the entry point makes the option known before pytest reads the line: not a path to collect
    pytester.makepyfile(test_live=LIVE_TESTS.read_text())
    result = run(pytester, "--hil-port", "/dev/null", "--co", "-q")
    result.stdout.fnmatch_lines(["3 tests collected*"])
