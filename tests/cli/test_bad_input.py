"""Issue 14, "survive any stream": every command against bad input and a hostile environment.

Each case runs ``python -m firmware_host`` as a user would and checks the
EVENTS.md promise: the exit status, one line on stderr naming what is
wrong, and never a traceback.  Environments that need root (a tiny tmpfs
for a full disk, a read-only mount for an unwritable numba cache) are
skipped, with the reason, where they cannot be made.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from proc_util import children as child_pids
from proc_util import forked

pytestmark = pytest.mark.wall_s(95)  # alone, on an idle core: run first (conftest.py)

ROOT = Path(__file__).resolve().parents[2]
READERS = ("decode", "events", "replay", "judge")


def fh(
    *args: str,
    input: bytes | None = None,
    stdin: int | None = None,
    stdout: object = subprocess.PIPE,
    timeout: float = 120,
    close_fds_in_child: tuple[int, ...] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    def preexec() -> None:
        for fd in close_fds_in_child:
            os.close(fd)

    return forked.run(
        [*forked.PREFIX, *args],
        input=input,
        stdin=stdin if input is None else None,
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        timeout=timeout,
        preexec_fn=preexec if close_fds_in_child else None,
        env=env,
    )


def one_line(done: subprocess.CompletedProcess[bytes], status: int, says: str) -> None:
    """The EVENTS.md promise: this status, one line on stderr that says this, no traceback."""
    err = done.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    assert done.returncode == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert says in lines[0], err
    assert lines[0].startswith("firmware-host"), err


def quiet(done: subprocess.CompletedProcess[bytes], status: int = 0) -> None:
    err = done.stderr.decode(errors="replace")
    assert done.returncode == status and err == "", err


# -- inputs -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    capture = d / "capture.bin"
    done = fh("simulate", "--scenario", "double_hit", "--capture", str(capture))
    assert done.returncode == 0, done.stderr
    events = d / "events.jsonl"
    with events.open("wb") as out:
        assert fh("events", str(capture), stdout=out).returncode == 0
    (d / "empty").write_bytes(b"")
    (d / "random").write_bytes(random.Random(14).randbytes(10_000_000))  # the same bytes every run
    (d / "undelimited").write_bytes(b"\xff" * 10_000_000)
    (d / "latin1").write_bytes('{"t_us": 1, "type": "keypad", "key": "é"}\n'.encode("latin-1"))
    fifo = d / "fifo"
    os.mkfifo(fifo)
    (d / "dir").mkdir()
    return {p.name: p for p in d.iterdir()} | {"null": Path("/dev/null")}


# (command, input file) -> (status, what the one line says); None: quiet success
NOT_A_CAPTURE = (2, "not a capture")
INPUTS = {
    ("decode", "empty"): (0, None),
    ("decode", "null"): (0, None),
    ("decode", "random"): (1, None),  # bad frames: listed and counted on stdout
    ("decode", "undelimited"): (1, None),
    ("events", "empty"): NOT_A_CAPTURE,
    ("events", "null"): NOT_A_CAPTURE,
    ("events", "random"): NOT_A_CAPTURE,
    ("events", "undelimited"): NOT_A_CAPTURE,
    ("replay", "empty"): NOT_A_CAPTURE,
    ("replay", "null"): NOT_A_CAPTURE,
    ("replay", "random"): NOT_A_CAPTURE,
    ("replay", "undelimited"): NOT_A_CAPTURE,
    ("judge", "empty"): (0, None),
    ("judge", "null"): (0, None),
    ("judge", "random"): (2, "not UTF-8"),
    ("judge", "undelimited"): (2, "line 1: not UTF-8 (byte 0: 0xff)"),
    ("judge", "latin1"): (2, "line 1: not UTF-8 (byte 38: 0xe9)"),
    ("judge", "capture.bin"): (2, "line 1: "),
    **{(cmd, "missing"): (2, "No such file or directory") for cmd in READERS},
    **{(cmd, "dir"): (2, "Is a directory") for cmd in READERS},
}


@pytest.mark.parametrize(("command", "name"), sorted(INPUTS))
def test_every_reader_on_every_bad_input(files: dict[str, Path], command: str, name: str) -> None:
    status, says = INPUTS[command, name]
    path = files.get(name, files["empty"].parent / name)
    done = fh(command, str(path))
    if says is None:
        assert "Traceback" not in done.stderr.decode(errors="replace")
        assert done.returncode == status, done.stderr
    else:
        one_line(done, status, says)


def test_decode_reports_a_run_without_delimiter_and_its_length(files: dict[str, Path]) -> None:
    done = fh("decode", "--json", str(files["undelimited"]))
    assert done.returncode == 1
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    assert summary["dropped_bytes"] == 10_000_000
    text = fh("decode", str(files["undelimited"])).stdout.decode()
    assert "10000000 bytes without a frame delimiter" in text


@pytest.mark.parametrize("command", READERS)
def test_a_closed_stdin_is_no_input(command: str) -> None:
    one_line(fh(command, "-", close_fds_in_child=(0,)), 2, "-: no input (stdin is closed)")


def test_replay_says_what_events_says(files: dict[str, Path]) -> None:
    for name in ("empty",):
        a, b = (fh(cmd, str(files[name])) for cmd in ("events", "replay"))
        assert a.returncode == b.returncode == 2
        assert a.stderr.split(b":", 1)[1] == b.stderr.split(b":", 1)[1]


def damaged(capture: Path) -> Path:
    """The capture with one byte in its middle changed (never to or from a delimiter)."""
    data = bytearray(capture.read_bytes())
    i = len(data) // 2
    while data[i] in (0, 1):
        i += 1
    data[i] ^= 0x01
    out = capture.with_name("damaged.bin")
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("command", ["events", "replay"])
@pytest.mark.parametrize(("damage", "status"), [(False, 0), (True, 1)], ids=["clean", "damaged"])
def test_events_and_replay_exit_1_and_count_the_bad_frames_they_skipped(
    files: dict[str, Path], command: str, damage: bool, status: int
) -> None:
    capture = damaged(files["capture.bin"]) if damage else files["capture.bin"]
    done = fh(command, str(capture))
    if not damage:
        quiet(done)
        return
    one_line(done, status, "the input held errors, skipped: 1 bad frame {")
    assert done.stderr.decode().startswith(f"firmware-host {command}: ")


# -- judge: well-formed JSON of the wrong shape ----------------------------------------

BOOT = {"t_us": 1, "type": "boot", "nodes": ["hub", "rails", "pockets", "cue", "tracker"]}
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5000
WRONG_SHAPES = {
    "a list where a ball belongs": (
        '{"t_us": 5, "type": "cushion", "ball": [1], "cushion": 2}',
        "'ball' must be a ball 0 to 15",
    ),
    "a list where a number belongs": (
        '{"t_us": 5, "type": "cue_contact", "duration_us": [1500]}',
        "'duration_us' must be a number",
    ),
    "a table without width_mm": (
        '{"t_us": 5, "type": "boot", "table": {"length_mm": 3569, "ball_mm": 68}}',
        "'table' has no 'width_mm'",
    ),
    "a table too small for a rack": (
        '{"t_us": 5, "type": "boot", "table": {"length_mm": 10, "width_mm": 5, "ball_mm": 68}}',
        "does not fit",
    ),
    "a ball position of one number": (
        '{"t_us": 5, "type": "shot_start", "balls": {"0": [5]}}',
        "must be [x_mm, y_mm]",
    ),
    "a ball position of strings": (
        '{"t_us": 5, "type": "rest", "balls": {"0": ["a", "b"]}}',
        "must be a number",
    ),
    "a ball key that is no ball": (
        '{"t_us": 5, "type": "rest", "balls": {"x": [1, 2]}}',
        "key 'x' is not a ball number",
    ),
    "frozen cushions not a list": (
        '{"t_us": 5, "type": "rest", "frozen": {"3": 1}}',
        "list of cushions",
    ),
    "a path point of two numbers": (
        '{"t_us": 5, "type": "shot_end", "paths": {"0": [[1, 2]]}}',
        "[t_us, x_mm, y_mm]",
    ),
    "deep nesting": (DEEP, "nested too deeply"),
    "a 5000-digit integer": (f'{{"t_us": {HUGE}, "type": "boot"}}', "not usable JSON"),
    "NaN": ('{"t_us": 5, "type": "cue_contact", "force_n": NaN}', "NaN is not a number"),
    "Infinity": ('{"t_us": 5, "type": "cue_contact", "force_n": Infinity}', "Infinity"),
    "1e999": ('{"t_us": 5, "type": "cue_contact", "force_n": 1e999}', "too large"),
    "a type that is no string": ('{"t_us": 5, "type": 7}', "type must be a string"),
    "a negative t_us": ('{"t_us": -5, "type": "boot"}', "out of range"),
    "a float t_us": ('{"t_us": 5.5, "type": "boot"}', "not an integer"),
    "nodes not names": ('{"t_us": 5, "type": "boot", "nodes": [[1]]}', "'nodes' item"),
    "a contact of three balls": (
        '{"t_us": 5, "type": "ball_contact", "balls": [1, 2, 3]}',
        "two balls",
    ),
    "pocket 6": ('{"t_us": 5, "type": "pocket", "ball": 1, "pocket": 6}', "from 0 to 5"),
    "a line that is not one": (
        '{"t_us": 5, "type": "line_cross", "ball": 1, "line": "middle"}',
        '"centre" or "house"',
    ),
    "a keypad arg that is a list": (
        '{"t_us": 5, "type": "keypad", "key": "declare_frozen", "arg": [1]}',
        "'arg' must be",
    ),
    "certain not a flag": ('{"t_us": 5, "type": "shot_end", "certain": "yes"}', "true or false"),
    "a shot that is a string": ('{"t_us": 5, "type": "boot", "shot": "x"}', "shot must be"),
    "a number too large for a position": (
        '{"t_us": 5, "type": "shot_start", "balls": {"0": [1e300, 1]}}',
        "must be a number",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG_SHAPES))
def test_judge_names_the_line_of_a_wrong_shape(case: str) -> None:
    line, says = WRONG_SHAPES[case]
    done = fh("judge", "-", input=(json.dumps(BOOT) + "\n" + line + "\n").encode())
    one_line(done, 2, "- line 2: ")
    assert says in done.stderr.decode(), done.stderr


def test_judge_never_writes_nan_or_infinity(files: dict[str, Path]) -> None:
    done = fh("judge", str(files["events.jsonl"]))
    assert done.returncode == 0, done.stderr
    for line in done.stdout.decode().splitlines():
        assert "NaN" not in line and "Infinity" not in line, line
        json.loads(line)


# -- options ---------------------------------------------------------------------------

OPTIONS = [
    (("run", "--seed", "-1"), "argument --seed"),
    (("run", "--speed", "nan"), "argument --speed"),
    (("run", "--speed", "inf"), "argument --speed"),
    (("run", "--speed", "0"), "argument --speed"),
    (("run", "--duration", "inf"), "argument --duration"),
    (("run", "--duration", "0"), "argument --duration"),
    (("run", "--minutes", "inf", "--duration", "5"), "argument --minutes"),
    (("run", "--minutes", "nan"), "argument --minutes"),
    (("run", "--baud", "0"), "argument --baud"),
    (("run", "--baud", "x"), "argument --baud"),
    (("run", "--scenario", "no_such_thing"), "--scenario no_such_thing: unknown"),
    (("simulate", "--capture", "x.bin", "--seed", "-1"), "argument --seed"),
    (("simulate", "--capture", "x.bin", "--speed", "nan"), "argument --speed"),
    (("simulate", "--capture", "x.bin", "--minutes", "inf"), "argument --minutes"),
    (("simulate", "--capture", "x.bin", "--minutes", "nan"), "argument --minutes"),
    (
        ("simulate", "--capture", "x.bin", "--scenario", "double_hit", "--faults", "reboot@1e308"),
        "outside the match",
    ),
    (
        ("simulate", "--capture", "x.bin", "--scenario", "double_hit", "--faults", "drop@nan"),
        "outside the match",
    ),
    (("events", "--frozen-gap", "nan", "x.bin"), "argument --frozen-gap"),
    (("events", "--frozen-gap", "-1", "x.bin"), "argument --frozen-gap"),
    (("rack", "3", "--ball", "nan"), "argument --ball"),
    (("rack", "3", "--width", "inf"), "argument --width"),
    (("rack", "15", "--length", "10"), "--length/--width/--ball"),
    (("rack", "15", "--width", "300"), "does not fit"),
    (("rack", "nan"), "argument N"),
]


@pytest.mark.parametrize(("argv", "says"), OPTIONS, ids=[" ".join(a) for a, _ in OPTIONS])
def test_every_numeric_option_is_checked(argv: tuple[str, ...], says: str) -> None:
    one_line(fh(*argv, timeout=60), 2, says)


def test_run_scenario_list_lists_instead_of_opening_a_port() -> None:
    done = fh("run", "--scenario", "list", timeout=60)
    quiet(done)
    assert "ball_nudged_17" in done.stdout.decode().split()


# -- ports -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def not_ports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("ports")
    (d / "file").write_bytes(b"")
    os.mkfifo(d / "fifo")
    return {
        "a regular file": str(d / "file"),
        "/dev/null": "/dev/null",
        "a directory": str(d),
        "a FIFO": str(d / "fifo"),
        "/dev/zero": "/dev/zero",
        "socket://x": "socket://x",
        "socket://x:0": "socket://x:0",
        "socket://:80": "socket://:80",
        "rfc2217://x": "rfc2217://x",
        "bogus://x": "bogus://x",
    }


@pytest.mark.parametrize(
    "name",
    [
        "a regular file",
        "/dev/null",
        "a directory",
        "a FIFO",
        "/dev/zero",
        "socket://x",
        "socket://x:0",
        "socket://:80",
        "rfc2217://x",
        "bogus://x",
    ],
)
def test_run_on_what_is_no_serial_port_is_a_usage_error(
    not_ports: dict[str, str], name: str
) -> None:
    port = not_ports[name]
    one_line(fh("run", "--port", port, timeout=60), 2, f"--port {port}: ")


# -- output ------------------------------------------------------------------------------

WRITERS = [
    ("decode", "{random}"),
    ("decode", "--json", "{random}"),
    ("events", "{capture}"),
    ("replay", "{capture}"),
    ("judge", "{events}"),
    ("dump",),
    ("rack", "15"),
    ("simulate", "--scenario", "list"),
    ("run", "--scenario", "list"),
    ("--version",),
]


def _argv(template: tuple[str, ...], files: dict[str, Path]) -> list[str]:
    names = {
        "random": files["random"],
        "capture": files["capture.bin"],
        "events": files["events.jsonl"],
    }
    return [a.format(**names) for a in template]


@pytest.mark.parametrize("template", WRITERS, ids=[" ".join(w) for w in WRITERS])
def test_a_reader_that_went_away_is_quiet_and_status_0(
    files: dict[str, Path], template: tuple[str, ...]
) -> None:
    r, w = os.pipe()
    os.close(r)  # `| head -1` after head exited: every write is EPIPE
    try:
        done = fh(*_argv(template, files), stdout=w)
    finally:
        os.close(w)
    quiet(done)


@pytest.mark.parametrize("template", WRITERS, ids=[" ".join(w) for w in WRITERS])
def test_a_full_stdout_is_one_line_and_status_2(
    files: dict[str, Path], template: tuple[str, ...]
) -> None:
    with open("/dev/full", "wb") as full:
        done = fh(*_argv(template, files), stdout=full)
    one_line(done, 2, "stdout: No space left on device")


def test_a_closed_stdout_is_one_line_and_status_2() -> None:
    one_line(fh("dump", close_fds_in_child=(1,)), 2, "stdout is closed")


# -- environments that need root -------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that fills up."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` until about ``leave`` bytes are free."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    filler.write_bytes(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_while_recording_is_logged_once_and_the_match_still_refereed(
    tmpfs: Path,
) -> None:
    fill(tmpfs, 8192)
    record = tmpfs / "new" / "dir"  # missing: created
    done = fh("run", "--scenario", "double_hit", "--speed", "8", "--json", "--record", str(record))
    err = done.stderr.decode()
    assert "Traceback" not in err and done.returncode == 0, err
    assert err.count("failed (No space left on device)") == 1, err
    assert "bytes not recorded" in err.splitlines()[-1]
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["verdict"] for v in verdicts if v["kind"] == "verdict" and not v.get("early")]
    assert list(record.glob("capture-*.bin")), "nothing at all was recorded"


def test_the_recording_resumes_when_space_returns(tmpfs: Path) -> None:
    from firmware_host.link.recorder import CaptureRecorder

    now = [0.0]
    filler = fill(tmpfs, 16384)
    with CaptureRecorder(tmpfs, flush_bytes=1024, retry_s=1.0, clock=lambda: now[0]) as rec:
        chunk = bytes(range(256)) * 4
        for _ in range(40):  # 40 KiB into 16 KiB of space
            rec.write(chunk)
        assert rec.failures == 1 and rec.bytes_lost > 0
        on_disk = rec.bytes_written
        filler.unlink()  # space returns
        rec.write(chunk)  # before the retry time: still counted as lost
        now[0] = 2.0
        rec.write(chunk)
        assert not rec._failing
    sizes = [p.stat().st_size for p in rec.paths]
    assert sum(sizes) == rec.bytes_written == on_disk + len(chunk)
    assert sizes[-1] == len(chunk), "the resumed recording is a part of its own"
    assert rec.bytes_written + rec.bytes_lost == 42 * len(chunk)


def test_an_unusable_record_dir_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    one_line(fh("run", "--record", str(tmp_path / "file"), timeout=60), 2, "not a directory")
    readonly = tmp_path / "ro"
    readonly.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=16k", "tmpfs", str(readonly)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        one_line(fh("run", "--record", str(readonly), timeout=60), 2, "cannot write in it")
        one_line(fh("run", "--record", str(readonly / "sub"), timeout=60), 2, "cannot create")
    finally:
        subprocess.run(["umount", "-l", str(readonly)], check=False)


def test_an_unwritable_numba_cache_warns_once_and_runs_uncached(files: dict[str, Path]) -> None:
    """A read-only install (the checkout mounted read-only) run with an unwritable HOME."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a private read-only mount")
    script = (
        f'mount --bind "{ROOT}" "{ROOT}" && mount -o remount,bind,ro "{ROOT}" && '
        f'cd "{ROOT}" && exec "{sys.executable}" -m firmware_host decode "{files["capture.bin"]}"'
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env |= {"HOME": "/proc/no-home", "XDG_CACHE_HOME": "/proc/no-cache"}
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f'mount --bind "{ROOT}" "{ROOT}"'],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private read-only mount (needs root): {probe.stderr.strip()}")
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        timeout=300,
        check=False,
        env=env,
    )
    one_line(done, 0, "no writable numba cache")
    assert b"for this run only" in done.stderr
    assert b"frames decoded" in done.stdout


# -- signals -----------------------------------------------------------------------------


def _caught(pid: int, sig: int) -> bool:
    """The process has a handler for ``sig`` (``SigCgt`` in /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


@pytest.mark.parametrize(
    ("sig", "after_s"),
    [
        (signal.SIGTERM, 0.0),
        (signal.SIGINT, 1.0),
        (signal.SIGTERM, 1.0),
        (signal.SIGINT, 2.5),
        (signal.SIGTERM, 0.4),
    ],
)
def test_a_signal_at_any_moment_ends_run_and_its_virtual_table(
    sig: signal.Signals, after_s: float
) -> None:
    """``after_s`` counts from the package's first statements, which install the handlers:
    until the interpreter reaches them (site, .pth files: 0.3-0.8 s on a busy 2-core
    machine) no program can catch a signal, and the kernel's default ends it (-15)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "firmware_host", "run", "--scenario", "double_hit", "--speed", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    started = time.monotonic() + 30
    while not _caught(proc.pid, signal.SIGHUP):  # the last of the three installed
        assert proc.poll() is None and time.monotonic() < started, "run never started"
        time.sleep(0.002)
    children: set[int] = set()
    deadline = time.monotonic() + after_s
    while time.monotonic() < deadline:  # every child it had, up to the signal
        children |= child_pids(proc.pid)
        time.sleep(0.02)
    children |= child_pids(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err, err
    assert proc.returncode == 128 + sig, err
    time.sleep(0.1)
    survivors = [pid for pid in children if Path(f"/proc/{pid}").exists()]
    assert not survivors, f"children of run still alive: {survivors}"


def test_a_signal_inside_an_import_that_c_code_drives_exits_with_its_status(
    tmp_path: Path,
) -> None:
    """numpy's C start-up imports ``datetime`` (``PyCapsule_Import``); a signal then (the
    virtual table, terminated while it starts) came out as numpy's ImportError and a page
    of traceback.  ``sitecustomize`` sends SIGTERM at that import, every time."""
    (tmp_path / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "class SignalAtDatetime:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'datetime' and 'numpy' in sys.modules:\n"
        "            sys.meta_path.remove(self)\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "sys.meta_path.insert(0, SignalAtDatetime())\n"
    )
    capture = tmp_path / "one.bin"
    capture.write_bytes(b"")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "firmware_host", "simulate", "--capture", str(capture)],
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert b"Traceback" not in done.stderr, done.stderr
    assert done.returncode == 128 + signal.SIGTERM, done.stderr


def test_a_signal_inside_a_c_callback_exits_with_its_status_and_no_traceback() -> None:
    """numba's LLVM object cache calls back into Python through ctypes, where a handler's
    exception cannot propagate and would be printed as "Exception ignored"."""
    script = (
        "import ctypes, os, signal, sys, time\n"
        "import firmware_host as fh\n"
        "signal.signal(signal.SIGTERM, fh._exit_on_signal)\n"
        "sys.unraisablehook = fh._unraisable\n"
        "@ctypes.CFUNCTYPE(None)\n"
        "def callback():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.01)\n"
        "ctypes.CFUNCTYPE(None)(ctypes.cast(callback, ctypes.c_void_p).value)()\n"
        "time.sleep(5)\n"
        "print('survived')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert b"survived" not in done.stdout
    assert done.stderr == b"", done.stderr
