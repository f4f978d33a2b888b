"""The README's test command sets up a fresh machine: the outside parts, asked for by name.

``tests/outside_parts.py --install`` runs here alone with stub ``apt-get``, ``sudo`` and
``dpkg-query`` on ``PATH`` that say every package is missing: what it asks to install,
through sudo when not root, and the one line it says when it cannot.  Then: every
outside program a test starts is in its table, and ``.ci/run`` calls exactly the
README's command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import outside_parts
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "outside_parts.py"
EVERY_PACKAGE = "chromium chromium-driver mosquitto openssl tshark tmux systemd udev"


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    """A PATH holding only the stubs: dpkg-query knows no package; apt-get and sudo log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    stub(bin_dir, "dpkg-query", 'echo "dpkg-query: no packages found matching $3" >&2; exit 1')
    stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}')
    stub(bin_dir, "sudo", f'echo "sudo" >> {log}; exec "$@"')
    return bin_dir


def set_up(bin_dir: Path, *, as_root: bool, args: tuple[str, ...] = ("--install",)):
    """The set-up step alone, as root or not (a user namespace shows root as nobody)."""
    if as_root and os.geteuid() != 0:
        pytest.fail("the root case needs the tests to run as root (CI does)")
    prefix: list[str] = []
    if not as_root and os.geteuid() == 0:
        unshare = shutil.which("unshare")
        assert unshare, "unshare (util-linux, in every Debian) runs the script as a non-root user"
        prefix = [unshare, "--user"]
    return subprocess.run(
        [*prefix, sys.executable, str(SCRIPT), *args],
        env={"PATH": str(bin_dir)},
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def logged(bin_dir: Path) -> list[str]:
    log = bin_dir.parent / "log"
    return log.read_text().splitlines() if log.exists() else []


def test_root_installs_every_missing_package_with_apt_get(machine: Path) -> None:
    done = set_up(machine, as_root=True)
    assert done.returncode == 0, done.stderr
    assert logged(machine) == ["apt-get update -qq", f"apt-get install -y -qq {EVERY_PACKAGE}"]
    assert done.stderr.splitlines() == [f"installing the tests' outside parts: {EVERY_PACKAGE}"]


def test_a_user_installs_them_through_sudo(machine: Path) -> None:
    done = set_up(machine, as_root=False)
    assert done.returncode == 0, done.stderr
    assert logged(machine) == [
        "sudo",
        "apt-get update -qq",
        "sudo",
        f"apt-get install -y -qq {EVERY_PACKAGE}",
    ]


def test_a_user_without_sudo_gets_one_line_naming_the_packages(machine: Path) -> None:
    (machine / "sudo").unlink()
    done = set_up(machine, as_root=False)
    assert done.returncode == 1
    assert logged(machine) == []
    assert done.stderr.splitlines() == [
        f"cannot install {EVERY_PACKAGE}: not root and no sudo; as root: apt-get install "
        + EVERY_PACKAGE
    ]


def test_a_failing_apt_get_is_one_line_after_the_progress_line(machine: Path) -> None:
    stub(machine, "apt-get", "exit 100")
    done = set_up(machine, as_root=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[1:] == [
        f"cannot install {EVERY_PACKAGE}: 'apt-get update' exited 100; install them yourself"
        + " and run the command again"
    ]


def test_no_apt_get_is_one_line(machine: Path) -> None:
    (machine / "apt-get").unlink()
    done = set_up(machine, as_root=True)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"cannot install {EVERY_PACKAGE}: no apt-get here; install them with your package manager"
    ]


def test_what_is_present_is_not_installed_again(machine: Path) -> None:
    for program in ("chromium", "chromedriver", "tshark"):
        stub(machine, program, "exit 0")  # on PATH: present, whatever dpkg says
    stub(
        machine,
        "dpkg-query",
        'case "$3" in mosquitto|openssl) printf installed;; *) exit 1;; esac',
    )
    done = set_up(machine, as_root=True)
    assert done.returncode == 0, done.stderr
    assert logged(machine)[-1] == "apt-get install -y -qq tmux systemd udev"


def test_a_machine_with_everything_installs_nothing(machine: Path) -> None:
    stub(machine, "dpkg-query", "printf installed")
    done = set_up(machine, as_root=True)
    assert (done.returncode, done.stderr, logged(machine)) == (0, "", [])


def test_without_install_it_only_lists_what_is_missing(machine: Path) -> None:
    done = set_up(machine, as_root=True, args=())
    assert done.returncode == 1
    assert done.stdout.startswith(f"missing: {EVERY_PACKAGE} (chromium: the live page")
    assert logged(machine) == []


def test_every_outside_program_a_test_starts_is_in_the_table() -> None:
    """A test starts an outside program through require(): the table must know each one."""
    required = set()
    for source in (ROOT / "tests").rglob("*.py"):
        required |= set(re.findall(r"require\(\"([\w.-]+)\"\)", source.read_text()))
    table = {part.program for part in outside_parts.PARTS}
    assert required <= table
    assert {"chromium", "chromedriver", "mosquitto", "tshark", "tmux", "systemd-analyze"} <= table


def readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("**Tests**") :]
    return re.search(r"```sh\n(.+?)\n```", section, re.DOTALL).group(1).strip()


def test_ci_calls_exactly_the_readme_test_command_and_it_sets_up_first() -> None:
    command = readme_test_command()
    assert command.startswith("python3.11 tests/outside_parts.py --install && ")
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    steps = [line for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert steps[-1] == command
    assert all(s.startswith(("set ", "cd ")) for s in steps[:-1]), steps
