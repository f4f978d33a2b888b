"""``firmware-host hil add``: a recording becomes a corpus case a person reviews, and can fail.

The whole path a QA engineer takes, through real processes: add a capture to
a scratch corpus, run the suite on it, edit the expectation, see the failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from firmware_host.virtual_table.mutate import split
from hil_tests.add import narrowed, sensor_set
from hil_tests.make_corpus import CORPUS, main

RECORDING = CORPUS / "double_hit.full.bin"  # small, and a foul (18) every sensor set decides


def firmware_host(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "firmware_host", *args], capture_output=True, text=True, check=False
    )


def suite(corpus: Path) -> subprocess.CompletedProcess[str]:
    """``pytest --hil-corpus DIR`` from a lab's own directory: the plugin as installed."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "hil_tests.plugin", "-p", "no:hypothesispytest"]
        + ["-p", "no:cacheprovider", "--hil-corpus", str(corpus), "-q"],
        capture_output=True,
        check=False,
        text=True,
        cwd=corpus,
    )


def test_an_added_capture_runs_in_the_suite_and_fails_once_its_expectation_is_edited(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    recording = tmp_path / "lab_break.bin"
    recording.write_bytes(RECORDING.read_bytes())
    added = firmware_host("hil", "add", str(recording), "--corpus", str(corpus), "--sensors",
                          "full,middle")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "Before committing, check every shot" in added.stderr
    assert sorted(p.name for p in corpus.iterdir()) == [
        "lab_break.full.bin",
        "lab_break.full.expect.json",
        "lab_break.middle.bin",
        "lab_break.middle.expect.json",
    ]
    passed = suite(corpus)
    assert "2 passed" in passed.stdout, passed.stdout + passed.stderr

    path = corpus / "lab_break.middle.expect.json"
    expectation = json.loads(path.read_text())
    assert expectation["verdicts"] == [
        {"shot": 1, "verdict": "foul", "rules": ["18"], "satisfied": None}
    ]
    expectation["verdicts"][0]["verdict"] = "legal"
    path.write_text(json.dumps(expectation))
    failed = suite(corpus)
    assert "1 failed, 1 passed" in failed.stdout, failed.stdout
    assert (
        "lab_break.middle.bin (sensors middle): 1 of 1 verdicts differ; first: shot 1: "
        "expected legal" in failed.stdout
    ), failed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sensors", "middle"], None),  # the first time: written
        (["--sensors", "middle"], "lab_break.middle.bin: exists (--force replaces it)"),
        (["--sensors", "middle", "--force"], None),
        (["--sensors", "large"], "'large': a comma list of full, middle, minimum"),
    ],
    ids=["new", "exists", "force", "bad-set"],
)
def test_add_refuses_what_it_cannot_do_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, args: list[str], message: str | None
) -> None:
    shared = tmp_path_factory.getbasetemp() / "add-refusals"  # the cases build on each other
    shared.mkdir(exist_ok=True)
    recording = shared / "lab_break.bin"
    recording.write_bytes(RECORDING.read_bytes())
    result = firmware_host("hil", "add", str(recording), "--corpus", str(shared / "c"), *args)
    if message is None:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode == 2
        assert message in result.stderr.splitlines()[0]


@pytest.mark.parametrize("sensors", ["full", "middle", "minimum"])
def test_a_full_capture_narrowed_announces_and_holds_only_its_set(sensors: str) -> None:
    bodies = split(RECORDING.read_bytes())
    assert sensor_set(split(narrowed(bodies, sensors))) == sensors


def test_make_corpus_will_not_overwrite_the_shipped_corpus_unless_told(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "--replace-shipped regenerates it" in capsys.readouterr().err
