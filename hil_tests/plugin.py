"""pytest plugin: the HIL corpus as test items, and the live rig behind ``--hil-port``.

Every ``*.bin`` under the corpus directory (``hil_tests/corpus`` or
``--hil-corpus DIR``) is one test: its bytes go through
:func:`firmware_host.pipeline.replay` (exactly what the daemon decides live)
and the final verdict of every shot must equal ``NAME.expect.json``.  A
failure prints a shot-by-shot table, expected beside got, with the reason the
pipeline gave.  An expectation with ``"xfail": "<why>"`` runs as
``xfail(strict=True)``: the day the pipeline gets it right, the strict XPASS
says the mark can go.

Live tests (``hil_tests/test_live.py``) take the ``hil_port`` fixture, which
skips them unless ``--hil-port URL`` names a table (a real one, or
``firmware-host simulate --pty``), as labgrid does: one suite, recordings in
CI, the rig when given a port.

Installed, it is a ``pytest11`` entry point, so its options are known
before pytest reads the command line (``pytest --hil-port URL`` with no
path works); ``hil_tests/conftest.py`` names it too, for a source tree run
without installing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .verdicts import Comparison, compare

DEFAULT_CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECT_SUFFIX = ".expect.json"
DEFAULT_SECONDS = 30.0  # several shots of a real match; 5 minutes of a `--speed 10` virtual one
WARM_UP_CAPTURE = DEFAULT_CORPUS / "double_hit.full.bin"  # small, and every message kind


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "hardware in the loop (hil_tests)")
    group.addoption(
        "--hil-port",
        metavar="URL",
        default=None,
        help="a live table (pyserial URL or device); without it the live tests skip",
    )
    group.addoption(
        "--hil-baud",
        type=int,
        default=None,
        help="baud rate of --hil-port (default: the ICD's 921600; ignored by USB CDC)",
    )
    group.addoption(
        "--hil-seconds",
        type=float,
        default=DEFAULT_SECONDS,
        help=f"how long each live test listens (default {DEFAULT_SECONDS:g})",
    )
    group.addoption(
        "--hil-verdicts",
        type=int,
        metavar="N",
        default=None,
        help="the live match decides exactly N verdicts in the window (a virtual table's truth "
        "says how many); default: at least 1",
    )
    group.addoption(
        "--hil-corpus",
        metavar="DIR",
        default=None,
        help="replay this directory's captures instead of hil_tests/corpus",
    )


def corpus_dir(config: pytest.Config) -> Path:
    given = config.getoption("--hil-corpus")
    return Path(given).resolve() if given else DEFAULT_CORPUS


def pytest_configure(config: pytest.Config) -> None:
    """A corpus outside the paths being collected is collected too (a lab's recordings)."""
    if config.getoption("--hil-corpus") is None:
        return
    corpus = corpus_dir(config)
    if not corpus.is_dir():
        raise pytest.UsageError(f"--hil-corpus {corpus}: not a directory")
    walked = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    if not any(corpus.is_relative_to(path) for path in walked):
        config.args.append(str(corpus))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".bin" and file_path.is_relative_to(corpus_dir(parent.config)):
        return CaptureFile.from_parent(parent, path=file_path)
    return None


def expectation_path(capture: Path) -> Path:
    return capture.with_name(capture.stem + EXPECT_SUFFIX)


class CaptureFile(pytest.File):
    """One capture; its expectation is read at collection, so a missing one is an error."""

    def collect(self) -> Iterator[pytest.Item]:
        path = expectation_path(self.path)
        try:
            expectation = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise self.CollectError(
                f"{path}: expectation file missing (`firmware-host hil add CAPTURE` writes a "
                "draft to review; docs/hil.md)"
            ) from None
        except json.JSONDecodeError as exc:
            raise self.CollectError(f"{path}: not JSON: {exc}") from None
        if not isinstance(expectation.get("verdicts"), list):
            raise self.CollectError(f'{path}: no "verdicts" list')
        item = CaptureItem.from_parent(self, name=self.path.stem, expectation=expectation)
        if expectation.get("xfail"):
            item.add_marker(pytest.mark.xfail(strict=True, reason=expectation["xfail"]))
        yield item


class VerdictMismatch(AssertionError):
    def __init__(self, comparison: Comparison) -> None:
        super().__init__(comparison.first_difference())
        self.comparison = comparison


class CaptureItem(pytest.Item):
    """Replay a capture through the live pipeline; every shot's verdict as expected."""

    def __init__(self, *, expectation: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.expectation = expectation
        self.user_properties.append(("sensors", expectation.get("sensors")))

    def runtest(self) -> None:
        from firmware_host.pipeline import replay

        comparison = compare(self.expectation["verdicts"], replay(self.path.read_bytes()).lines)
        if not comparison.ok:
            raise VerdictMismatch(comparison)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, VerdictMismatch):
            cmp = excinfo.value.comparison
            about = ", ".join(
                f"{key} {self.expectation[key]}"
                for key in ("sensors", "scenario", "seed", "minutes")
                if self.expectation.get(key) is not None
            )
            return (
                f"{self.path.name} ({about}): {len(cmp.failures)} of {len(cmp.rows)} "
                f"verdicts differ; first: {cmp.first_difference()}\n{cmp.table()}"
            )
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"capture {self.path.name} ({self.expectation.get('sensors')})"


# ---------------------------------------------------------------- live rig fixtures


def warm_up(capture: Path = WARM_UP_CAPTURE) -> None:
    """Run the live path's kernels once, here, in the calling thread.

    numba compiles on first use.  Left to the daemon, a cold cache (a fresh
    clone, a changed kernel) costs seconds of a timed live test, and the
    compile happens in a worker thread, which numba's type registry does not
    always survive.  The daemon's steps are feed, tick and flush, so warm all three.
    """
    import time

    from firmware_host.pipeline import Pipeline

    pipe = Pipeline()
    pipe.feed(capture.read_bytes(), time.monotonic_ns())
    pipe.tick(time.monotonic_ns())
    pipe.flush()


@pytest.fixture(scope="session")
def hil_port(pytestconfig: pytest.Config) -> str:
    """The live table's URL (skips the test when none was given), with the pipeline compiled."""
    url = pytestconfig.getoption("--hil-port")
    if not url:
        pytest.skip("needs a live table: --hil-port URL")
    warm_up()
    return str(url)


@pytest.fixture(scope="session")
def hil_baud(pytestconfig: pytest.Config) -> int:
    from firmware_host.link.transport import DEFAULT_BAUD

    return int(pytestconfig.getoption("--hil-baud") or DEFAULT_BAUD)


@pytest.fixture(scope="session")
def hil_verdicts(pytestconfig: pytest.Config) -> int | None:
    """How many verdicts the live match must decide (None: at least one)."""
    given = pytestconfig.getoption("--hil-verdicts")
    return None if given is None else int(given)


SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def hil_summary(pytestconfig: pytest.Config) -> list[str]:
    """Lines a live test wants in the run's summary (how many verdicts it compared).

    A passing test's own output is hidden, and "passed" alone does not say
    whether anything was compared; this says it under "hil" at the end.
    """
    return pytestconfig.stash.setdefault(SUMMARY, [])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("hil")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def hil_seconds(pytestconfig: pytest.Config) -> float:
    return float(pytestconfig.getoption("--hil-seconds"))
