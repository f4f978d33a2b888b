"""The programs outside Python that the tests start, and the Debian packages that hold them.

One table serves two uses, so they cannot drift apart:

* ``python3.11 tests/outside_parts.py --install`` (the first step of the README's test
  command, before any venv exists: standard library only) installs the packages whose
  programs are missing, with ``sudo`` when not root, or says in one line which
  packages to install and why it could not;
* a test that starts one of these programs calls :func:`require`, which gives its path
  or fails the test in one line naming the package (a missing part is never a silent
  skip: a green run means every test ran).

A part counts as present when its program is on ``PATH`` or ``dpkg-query`` says its
package is installed (Debian puts a daemon such as ``mosquitto`` in ``/usr/sbin``, off a
user's ``PATH``); a test looks in the ``sbin`` folders too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import NamedTuple


class Part(NamedTuple):
    program: str
    package: str
    why: str


PARTS = (
    Part("chromium", "chromium", "the live page, club page and report tests drive a real browser"),
    Part("chromedriver", "chromium-driver", "selenium drives that browser through it"),
    Part("mosquitto", "mosquitto", "the club tests publish through a real MQTT broker"),
    Part("openssl", "openssl", "the club's TLS test makes its own certificate authority"),
    Part("tshark", "tshark", "the Wireshark dissector, pcap and extcap tests read with it"),
    Part("tmux", "tmux", "the monitor's tests type into a real terminal"),
    Part("systemd-analyze", "systemd", "the service tests verify the systemd unit"),
    Part("udevadm", "udev", "the service tests read the serial port's udev rule with udev"),
)

SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def find(program: str) -> str | None:
    """The program's path on PATH, else in the sbin folders a user's PATH often lacks."""
    return shutil.which(program) or shutil.which(program, path=os.pathsep.join(SBIN))


def require(program: str) -> str:
    """The program's path for a test, or the test fails in one line naming its package."""
    found = find(program)
    if found is None:
        import pytest

        part = next(p for p in PARTS if p.program == program)
        pytest.fail(
            f"{program} is missing: apt-get install {part.package} "
            f"(python3.11 tests/outside_parts.py --install does; {part.why})"
        )
    return found


def _installed(package: str) -> bool:
    dpkg_query = shutil.which("dpkg-query")
    if dpkg_query is None:
        return False
    done = subprocess.run(
        [dpkg_query, "-W", "-f=${db:Status-Status}", package],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() == "installed"


def missing() -> list[str]:
    """The packages to install, once each, in the table's order."""
    wanted: list[str] = []
    for part in PARTS:
        present = shutil.which(part.program) is not None or _installed(part.package)
        if not present and part.package not in wanted:
            wanted.append(part.package)
    return wanted


def _apt_get(names: str) -> list[str] | str:
    """The command that installs packages here (sudo when not root), or the one line why not."""
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        return f"cannot install {names}: no apt-get here; install them with your package manager"
    if os.geteuid() == 0:
        return [apt_get]
    sudo = shutil.which("sudo")
    if sudo is None:
        return f"cannot install {names}: not root and no sudo; as root: apt-get install {names}"
    return [sudo, apt_get]


def install(packages: list[str]) -> str | None:
    """apt-get the packages; None, or the one line why it could not."""
    names = " ".join(packages)
    apt_get = _apt_get(names)
    if isinstance(apt_get, str):
        return apt_get
    print(f"installing the tests' outside parts: {names}", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["update", "-qq"], ["install", "-y", "-qq", *packages]):
        done = subprocess.run([*apt_get, *step], env=env, stdout=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            said = " ".join(["sudo"] * (len(apt_get) - 1) + ["apt-get", step[0]])
            return (
                f"cannot install {names}: '{said}' exited {done.returncode}; "
                "install them yourself and run the command again"
            )
    return None


def main(argv: list[str]) -> int:
    """``--install`` installs what is missing; with no option, only lists it (exit 1 if any)."""
    if argv not in ([], ["--install"]):
        print("usage: python3.11 tests/outside_parts.py [--install]", file=sys.stderr)
        return 2
    packages = missing()
    if not packages:
        return 0
    if not argv:
        whys = "; ".join(f"{p.package}: {p.why}" for p in PARTS if p.package in packages)
        print(f"missing: {' '.join(packages)} ({whys})")
        return 1
    failed = install(packages)
    if failed is not None:
        print(failed, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
