"""Issue 24, "ready for a real table": the service path, the serial port, what a referee sees.

Each test runs the command as a club or a firmware engineer would and checks
what they rely on: a service that never referees a virtual match, a unit
systemd accepts, a port that is waited for, held alone and named stably, a
press that is always logged, a match clock that does not jump.
"""

from __future__ import annotations

import grp
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from outside_parts import require
from proc_util import as_nobody, forked

from firmware_host.cli.args import UsageError, check_port
from firmware_host.cli.options import service_manager
from firmware_host.link.transport import by_id_names
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.peer import VirtualHub

pytestmark = pytest.mark.wall_s(20)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
FH = [sys.executable, "-m", "firmware_host"]
A_PORT = '[link]\nport = "/dev/ttyUSB0"\n'
NO_PORT = '[rules]\nnear_gap_mm = 7\n[service]\nstatus = "/tmp/status.json"\n'


def fh(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    """``firmware-host ARGS`` in its own process; ``env`` adds to the environment, and the
    service variables of the process running the tests are never passed on."""
    clean = {k: v for k, v in os.environ.items() if k not in ("INVOCATION_ID", "NOTIFY_SOCKET")}
    return forked.run(
        [*FH, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
        env={**clean, **(env or {})},
    )


def python_c(script: str, env: dict[str, str] | None = None):
    """``python -c SCRIPT`` from the checkout: a launcher a test needs around the CLI."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env=env,
    )


def one_line(done: subprocess.CompletedProcess[str], says: str) -> None:
    """Exit status 2 and one line on stderr that says this (EVENTS.md), no traceback."""
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says in done.stderr, done.stderr


# -- 1. a service never referees a virtual match ------------------------------------------


def test_run_under_a_config_without_a_port_refuses_in_one_line_naming_the_key(tmp_path):
    config = tmp_path / "table.toml"
    config.write_text(NO_PORT)
    done = fh("run", "--config", str(config))
    one_line(done, f"firmware-host run: {config}: [link] port is not set: ")
    assert "--virtual" in done.stderr and done.stdout == ""


@pytest.mark.parametrize(
    ("environ", "parent", "service"),
    [
        ({"INVOCATION_ID": "0123abcd"}, "systemd", "INVOCATION_ID"),
        ({"NOTIFY_SOCKET": "/run/systemd/notify"}, "systemd", "NOTIFY_SOCKET"),
        ({"INVOCATION_ID": "0123abcd"}, "bash", None),  # a shell in a tmux systemd started
        ({"INVOCATION_ID": "0123abcd"}, "Runner.Worker", None),  # a CI runner's tests
        ({}, "systemd", None),
    ],
)
def test_a_service_is_what_systemd_started_itself(environ, parent, service):
    assert service_manager(environ, parent) == service


def test_run_started_by_systemd_without_a_port_refuses_in_one_line(tmp_path):
    """The unit's ExecStart with a hand-written unit that has no --config: `run`'s parent is
    systemd.  Here a process named systemd (prctl) starts it, with systemd's variables."""
    launcher = (
        "import ctypes, os, sys\n"
        "ctypes.CDLL(None).prctl(15, b'systemd', 0, 0, 0)  # PR_SET_NAME: /proc/PID/comm\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.execv(sys.executable, [sys.executable, '-m', 'firmware_host', 'run'])\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )
    done = python_c(launcher, {**os.environ, "INVOCATION_ID": "0123abcd"})
    one_line(done, "firmware-host run: no --port under a service ($INVOCATION_ID is set)")


def test_config_check_fails_on_a_config_without_a_port_and_passes_with_one(tmp_path):
    config = tmp_path / "table.toml"
    config.write_text(NO_PORT)
    one_line(fh("config", "check", str(config)), f"{config}: [link] port is not set")
    config.write_text(A_PORT + NO_PORT)
    passed = fh("config", "check", str(config))
    assert passed.returncode == 0 and 'link.port = "/dev/ttyUSB0"' in passed.stdout
    one_line(fh("run", "--virtual", "--port", "/dev/ttyUSB0"), "one or the other")


def test_the_virtual_table_plays_under_a_config_only_when_asked(tmp_path):
    config = tmp_path / "table.toml"
    config.write_text(NO_PORT)
    done = fh("run", "--config", str(config), "--virtual", "--scenario", "double_hit")
    assert done.returncode == 0, done.stderr
    assert "end of match: 2 verdicts" in done.stderr.splitlines()[-1]


# -- 2. the page's extra, checked before anything is said ---------------------------------


def test_run_web_without_its_extra_says_so_before_any_token():
    """A club install without '[web]': one line naming the package, no token printed first."""
    without_aiohttp = (
        "import sys; sys.modules['aiohttp'] = None\n"  # an interpreter without the package
        "from firmware_host.cli.main import main\n"
        "raise SystemExit(main(['run', '--web', '0', '--scenario', 'double_hit']))\n"
    )
    done = python_c(without_aiohttp)
    one_line(done, "firmware-host run: --web needs aiohttp: pip install '.[web]'")
    assert "token" not in done.stderr


# -- 5. an absent device is waited for; a signal ends run with its summary ----------------


def test_a_device_that_appears_late_is_waited_for_refereed_and_a_signal_sums_up(tmp_path):
    wire = build_wire(scenarios.SCENARIOS["double_hit"](), HubConfig(seed=3))
    late = tmp_path / "by-id" / "usb-FTDI_FT232R_USB_UART_A10KXYZ-if00-port0"
    proc = forked.ForkedPopen(
        [*FH, "run", "--port", str(late), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    err: list[str] = []
    out: list[str] = []
    readers = [
        threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True),  # type: ignore[arg-type]
        threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True),  # type: ignore[arg-type]
    ]
    for reader in readers:
        reader.start()
    hub = VirtualHub(wire, speed=8, wait_for_host=True)
    try:
        deadline = time.monotonic() + 60
        while not any("waiting for it" in line for line in err):
            assert proc.poll() is None, "".join(err)  # waiting, not exited
            assert time.monotonic() < deadline, "".join(err)
            time.sleep(0.05)
        late.parent.mkdir()
        late.symlink_to(hub.device)  # udev made the link: the adapter enumerated
        hub.start()
        while not any('"verdict"' in line for line in out):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        proc.kill()
        hub.close()
    for reader in readers:
        reader.join(10)
    text = "".join(err)
    assert proc.returncode == 128 + signal.SIGINT, text
    assert "Traceback" not in text
    summary = err[-1]
    assert summary.startswith("firmware-host run: stopped by SIGINT: "), text
    assert re.search(r"\d+ verdicts?, \d+ events from [1-9]\d* bytes", summary), summary


# -- 10. the serial port as embedded engineers expect it ----------------------------------


def test_a_user_not_in_dialout_is_told_in_one_line(tmp_path):
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        os.chown(path, 0, grp.getgrnam("dialout").gr_gid)
        os.chmod(path, 0o660)
        with pytest.raises(UsageError) as refused:
            as_nobody(check_port, path, True)
    finally:
        os.close(master)
        os.close(slave)
    assert str(refused.value) == (
        f"--port {path}: permission denied: the device belongs to group dialout, and user "
        "nobody is not in it (sudo usermod -aG dialout nobody, then log in again)"
    )


def test_ports_names_each_device_by_its_stable_by_id_link(tmp_path):
    master, slave = os.openpty()
    try:
        device = os.ttyname(slave)
        link = tmp_path / "usb-FTDI_FT232R_USB_UART_A10KXYZ-if00-port0"
        link.symlink_to(device)
        assert by_id_names(tmp_path) == {device: str(link)}
    finally:
        os.close(master)
        os.close(slave)
    assert by_id_names(tmp_path / "none") == {}  # nothing plugged in: udev made no folder


def udevadm_test(rules: Path, device: str) -> str:
    """``udevadm test`` with only ``rules`` added, in a private mount namespace with its own
    /dev and /run: the machine's devices and udev database are never touched."""
    require("udevadm")
    script = (
        "mount -t tmpfs tmpfs /dev && mount -t tmpfs tmpfs /run && "
        f"mount --bind {shlex.quote(str(rules))} /etc/udev/rules.d && "
        f"udevadm test --action=change {shlex.quote(device)}"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=False
    )
    if "mount" in done.stderr and "permission denied" in done.stderr.lower():
        pytest.skip(f"cannot make a private mount namespace (needs root): {done.stderr.strip()}")
    return done.stdout + done.stderr


def test_service_install_udev_prints_a_rule_udev_reads_without_complaint(tmp_path):
    done = fh("service", "install", "--udev")
    assert done.returncode == 0, done.stderr
    rule = done.stdout
    assert 'ATTR{latency_timer}="1"' in rule and 'ENV{ID_MM_DEVICE_IGNORE}="1"' in rule
    assert 'GROUP="dialout"' in rule
    (tmp_path / "60-firmware-host.rules").write_text(rule)
    said = udevadm_test(tmp_path, "/sys/class/tty/tty1")
    ours = [line for line in said.splitlines() if "60-firmware-host.rules" in line]
    assert ours and ours[0].startswith("Reading rules file"), said
    assert len(ours) == 1, ours  # read, and no complaint about any of its lines
    # The same rule with its match widened to a tty this machine has: the group, the mode
    # and ModemManager's hands-off are applied.
    widened = rule.replace('KERNEL=="ttyUSB[0-9]*|', 'KERNEL=="tty1|ttyUSB[0-9]*|')
    (tmp_path / "60-firmware-host.rules").write_text(widened)
    said = udevadm_test(tmp_path, "/sys/class/tty/tty1")
    assert re.search(r"60-firmware-host.rules:\d+ GROUP 20\b", said), said
    assert re.search(r"60-firmware-host.rules:\d+ MODE 0660\b", said), said
    assert "ID_MM_DEVICE_IGNORE=1" in said


# -- 6, 7. a press in the first second: logged with who pressed it, the clock kept ---------


def test_new_frame_pressed_at_once_is_logged_and_keeps_the_match_clock():
    proc = forked.ForkedPopen(
        [*FH, "run", "--web", "0", "--referee-token", "table-1-secret", "--json"]
        + ["--scenario", "double_hit", "--speed", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not (page := re.search(r"live page: (http://\S+?)/ ", "".join(err))):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)
            time.sleep(0.01)
        press = urllib.request.Request(
            page[1] + "/control",
            data=json.dumps({"key": "new_frame"}).encode(),
            headers={"Authorization": "Bearer table-1-secret"},
        )
        assert urllib.request.urlopen(press, timeout=10).status == 202
        out = proc.stdout.read()  # type: ignore[union-attr]  # stderr is the reader's alone
        proc.wait(120)
    finally:
        proc.kill()
    reader.join(10)
    text = "".join(err)
    assert proc.returncode == 0, text
    assert "INFO firmware_host.presses: referee press from page 127.0.0.1: new_frame 0" in text
    lines = [json.loads(line) for line in out.splitlines()]
    # the notice comes when the press is taken: on a busy machine after the first shot's verdict
    assert sum(line["kind"] == "notice" and line["rules"] == ["13"] for line in lines) == 1, lines
    times = [line["t_us"] for line in lines]
    assert max(times) - min(times) < 60_000_000, times  # a two-shot match, not an hour


# -- the README's steps, in a scratch root -------------------------------------------------


def readme_service_steps() -> list[str]:
    """The shell lines of the README's "Running beside a table" block."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Running beside a table") :]
    block = section[section.index("```sh\n") + 6 : section.index("```\n", section.index("```sh"))]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_service_steps_run_in_a_scratch_root_to_a_unit_systemd_accepts(tmp_path):
    """Every line up to the udev rule, as written, with two changes: paths under / live in a
    scratch root (useradd --root), and no sudo (the tests run as root).  Not run: the
    package manager, and the install itself (40 s of CPU: its venv is the one running
    these tests, made by the same pip), which the scratch root's /opt/firmware-host
    stands for."""
    scratch = tmp_path / "root"
    (scratch / "etc").mkdir(parents=True)
    for name in ("passwd", "group", "shadow", "gshadow", "login.defs"):
        shutil.copy(f"/etc/{name}", scratch / "etc" / name)
    for folder in ("etc/systemd/system", "etc/udev/rules.d", "usr/sbin"):  # as Debian has them
        (scratch / folder).mkdir(parents=True)
    shutil.copy("/usr/sbin/nologin", scratch / "usr" / "sbin")
    (scratch / "opt").mkdir()
    (scratch / "opt" / "firmware-host").symlink_to(sys.prefix)
    steps = readme_service_steps()
    last = next(i for i, line in enumerate(steps) if "service install --udev" in line)
    script = ["set -e"]
    for line in steps[: last + 1]:
        if line.startswith("sudo apt-get") or "-m venv" in line:
            assert "pip install '.[web]'" in line or "apt-get" in line, line  # the page too
            continue
        line = line.replace("sudo ", "").replace("useradd ", f"useradd --root {scratch} ")
        line = re.sub(r"(?<![\w/.-])/(etc|opt)/", f"{scratch}/\\1/", line)
        script.append(line)
    done = subprocess.run(
        ["sh", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
        env={k: v for k, v in os.environ.items() if k not in ("INVOCATION_ID", "NOTIFY_SOCKET")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stderr, done.stderr
    assert re.search(
        r"^firmware-host:x:\d+:\d+::/var/lib/firmware-host:/usr/sbin/nologin$",
        (scratch / "etc" / "passwd").read_text(),
        re.MULTILINE,
    )
    assert re.search(
        r"^dialout:x:20:.*firmware-host", (scratch / "etc" / "group").read_text(), re.MULTILINE
    )
    config = scratch / "etc" / "firmware-host" / "table.toml"
    assert 'port = "/dev/serial/by-id/' in config.read_text()
    unit = scratch / "etc" / "systemd" / "system" / "firmware-host.service"
    for line in ("Restart=always", "RestartPreventExitStatus=2", "SuccessExitStatus=130 143"):
        assert line in unit.read_text().splitlines(), line
    assert (scratch / "etc" / "udev" / "rules.d" / "60-firmware-host.rules").exists()

    verified = subprocess.run(
        [require("systemd-analyze"), "verify", str(unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (verified.returncode, verified.stderr) == (0, ""), verified.stderr

    # The unit's own command line, under systemd's environment, with a config that names no
    # port (config example as the old README left it): one line, exit status 2, not retried.
    exec_start = next(
        line.removeprefix("ExecStart=")
        for line in unit.read_text().splitlines()
        if line.startswith("ExecStart=")
    )
    bare = tmp_path / "no-port.toml"
    bare.write_text(fh("config", "example").stdout)
    one_line(fh("config", "check", str(bare)), "[link] port is not set")
    argv = shlex.split(exec_start.replace("%S", str(tmp_path)))
    argv[argv.index("--config") + 1] = str(bare)
    refused = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
        env={**os.environ, "INVOCATION_ID": "0123456789abcdef"},
    )
    one_line(refused, f"firmware-host run: {bare}: [link] port is not set")


def test_the_one_shot_tools_still_call_a_missing_device_a_usage_error():
    """Only the daemon waits for an absent table; `send` would wait for nothing."""
    one_line(fh("send", "--port", "/dev/no-such-table", "PING", "token=1"), "no such device")
