"""Issue 23, the Low items: files and logs a careless operator (or a hostile peer) can damage.

Every file the daemon and its commands read is checked for kind and size
before it is read; every file they write refuses to overwrite its own input
and never follows a symlink where it creates a file; a node's LOG text is
escaped.  Each case ends in one line and status 2, or is said and survived:
never a traceback, a hang or a machine out of memory.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from proc_util import ROOT, forked, run_cli

from firmware_host.cli.main import main
from protocol.framing import encode_frame

pytestmark = pytest.mark.wall_s(35)  # alone, on an idle core: run first (conftest.py)

MEMORY = 2 << 30  # a command reading /dev/zero to its end would pass this and be stopped


def limited_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``firmware-host ARGS`` with its address space capped: /dev/zero cannot take the
    machine, a FIFO cannot hang the test (the timeout)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    return forked.run(
        [sys.executable, "-m", "firmware_host", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout, check=False,
        preexec_fn=cap,
    )  # fmt: skip


def one_line_status_2(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    return done.stderr


def special_files(tmp_path: Path) -> dict[str, str]:
    """What a careless path may name instead of a file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    big = tmp_path / "big"
    with open(big, "wb") as out:
        out.truncate(50 << 20)  # sparse: 50 MB of zeros
    return {
        "a FIFO": str(fifo),
        "/dev/zero": "/dev/zero",
        "a directory": str(tmp_path / "dir"),
        "a symlink loop": str(loop),
        "50 MB": str(big),
    }


# -- status --------------------------------------------------------------------------------


def real_status() -> dict:
    """A status file as a running daemon with a recording and the club's broker writes it."""
    return {
        "written_unix": time.time(), "pid": 4242, "port": "/dev/ttyUSB0", "link": "up",
        "link_losses": 0, "hub_reboots": 0,
        "nodes": {"0": {"name": "hub", "present": True, "last_frame_age_s": 0.01},
                  "1": {"name": "rails", "present": True, "last_frame_age_s": None}},
        "frames": {"good": 100, "bad": 0, "lost": 0, "bad_per_min": 0.0, "lost_per_min": 0.0},
        "clock": {"refused_syncs": 0, "outliers": 0, "clock_steps": 0, "unsynced_dropped": 0,
                  "per_min": 0.0},
        "indicator": "ok", "indicator_failures": 0,
        "recording": {"dir": "/r", "free_bytes": 5 << 30, "total_bytes": 9 << 30},
        "verdicts": 3,
        "last_verdict": {"kind": "verdict", "shot": 3, "verdict": "foul", "rules": ["19.1"],
                         "satisfied": None, "reason": "x", "t_us": 5},
        "mqtt": {"broker": "mqtts://t1@hall:8883", "connected": True, "queued": 0, "sent": 9,
                 "refused": 0, "refused_why": None, "stalled_s": None, "running": True},
    }  # fmt: skip


def paths(value, at=()):
    """Every (path, value) inside a JSON value."""
    yield at, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*at, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from paths(item, (*at, n))


def replaced(document, at, new):
    if not at:
        return new
    copy = json.loads(json.dumps(document))
    holder = copy
    for key in at[:-1]:
        holder = holder[key]
    holder[at[-1]] = new
    return copy


HOSTILE_VALUES = [None, "x", -1, 1e308, 2**70, True, [], {}, [1, [2]], {"a": {"b": 1}}]


def test_status_reads_any_damaged_file_without_a_traceback(tmp_path, capsys):
    """status tracebacked on 7 kinds of damaged file.  Every value of a real status file
    replaced by every JSON type: status exits 0 or 1 reading it, or 2 in one line."""
    good = real_status()
    path = tmp_path / "status.json"
    cases = [replaced(good, at, new) for at, _ in paths(good) for new in HOSTILE_VALUES]
    cases += [[good], "status", 7, {"nodes": {"x": {}}}, {"nodes": {"1": None}},
              {"recording": {"dir": "/r"}}, {"frames": {"bad_per_min": "many"}}]  # fmt: skip
    for case in cases:
        path.write_text(json.dumps(case))
        status = main(["status", str(path)])
        out, err = capsys.readouterr()
        assert status in (0, 1, 2), case
        if status == 2:
            assert err.count("\n") == 1 and "not a status file" in err, (case, err)
        else:
            assert out.startswith(("healthy", "DEGRADED")), (case, out)
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["status", str(path)]) == 2
    path.write_bytes(b"\xff\xfe\x00")
    assert main(["status", str(path)]) == 2


def test_status_and_config_check_refuse_what_is_not_a_file(tmp_path):
    """A FIFO hung config check; /dev/zero ran status and config check out of memory."""
    for what, path in special_files(tmp_path).items():
        said = one_line_status_2(limited_cli("status", path))
        assert path in said, what
        said = one_line_status_2(limited_cli("config", "check", path))
        assert path in said, what


def test_config_check_on_deeply_nested_toml_is_one_line(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("[table]\nid = " + "[" * 5000 + "]" * 5000 + "\n")
    said = one_line_status_2(run_cli("config", "check", str(path)))
    assert "nested too deeply" in said


# -- the daemon's own files -----------------------------------------------------------------


def test_run_skips_a_directory_or_a_fifo_named_like_a_recording_part(tmp_path):
    """A directory named like today's part crashed run (under systemd, a restart loop); a
    FIFO one hung its start.  Both are said and skipped; the match is refereed."""
    record = tmp_path / "rec"
    record.mkdir()
    day = datetime.now(UTC).strftime("%Y%m%d")
    (record / f"capture-{day}-000000-0001.bin").mkdir()
    os.mkfifo(record / f"capture-{day}-000001-0001.bin")
    good = record / f"capture-{day}-000002-0001.bin"
    good.write_bytes(b"")
    os.mkfifo(good.with_suffix(".tx"))  # its side file a FIFO: read_sent would hang
    done = run_cli(
        "run", "--record", str(record), "--minutes", "0.2", "--speed", "5", "--json",
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("named like a recording part but not a file") == 2
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert any(json.loads(line).get("kind") == "verdict" for line in done.stdout.splitlines())


def test_an_unwritable_status_file_is_said(tmp_path):
    """An unwritable --status file was never reported: at the start it is one line and
    status 2; failing later it is logged and named in the health."""
    said = one_line_status_2(run_cli("run", "--status", str(tmp_path / "no" / "status.json")))
    assert "--status" in said and "no such directory" in said
    said = one_line_status_2(run_cli("run", "--status", str(tmp_path)))
    assert "is a directory" in said

    status = tmp_path / "status.json"
    proc = forked.ForkedPopen(
        [sys.executable, "-m", "firmware_host", "run", "--status", str(status),
         "--web", "127.0.0.1:0", "--minutes", "0.5", "--speed", "1", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    try:
        deadline = time.monotonic() + 120
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        url = next(line for line in err if "live page: " in line).split("live page: ")[1].split()[0]
        status.unlink()
        status.mkdir()  # the file cannot be written any more
        health = None
        for _ in range(50):
            time.sleep(0.2)
            try:
                with urllib_open(url + "healthz") as answer:
                    health = json.load(answer)
            except OSError:
                continue
            if any("status file" in p for p in health["problems"]):
                break
        assert health is not None and any(
            p.startswith(f"status file {status}:") for p in health["problems"]
        ), health
    finally:
        proc.terminate()
        proc.wait(30)
    assert sum("cannot write it" in line for line in err) == 1  # said once, not once a second


def urllib_open(url: str):
    import urllib.error
    import urllib.request

    try:
        return urllib.request.urlopen(url, timeout=5)
    except urllib.error.HTTPError as degraded:  # 503: the body is the health all the same
        return degraded


def test_the_status_file_is_never_written_through_a_planted_symlink(tmp_path):
    """The status file's temporary name was predictable (.status.json.PID.tmp): a symlink
    planted there clobbered the file it pointed at."""
    from firmware_host.service.health import write_status

    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = tmp_path / "status.json"
    for pid in (os.getpid(), os.getpid() + 1):
        (tmp_path / f".status.json.{pid}.tmp").symlink_to(victim)
    path.symlink_to(victim)  # and at the file itself: replaced, not followed
    write_status(path, {"written_unix": 1.0})
    assert victim.read_text() == "precious"
    assert not path.is_symlink() and json.loads(path.read_text()) == {"written_unix": 1.0}
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_pcap_and_report_never_overwrite_their_capture_nor_write_through_a_symlink(tmp_path):
    capture = tmp_path / "in.bin"
    capture.write_bytes(next(ROOT.glob("hil_tests/corpus/*.full.bin")).read_bytes())
    before = capture.read_bytes()
    for command in (["pcap", str(capture), "-o"], ["report", str(capture), "-o"]):
        said = one_line_status_2(run_cli(*command, str(capture)))
        assert "is the input" in said
        link = tmp_path / "in-link.bin"
        link.unlink(missing_ok=True)
        link.symlink_to(capture)  # the same file by another name
        one_line_status_2(run_cli(*command, str(link)))
        assert capture.read_bytes() == before
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "out.pcapng"
    out.symlink_to(victim)
    done = run_cli("pcap", str(capture), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious" and not out.is_symlink()
    assert out.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"  # a pcapng section header


def test_the_spool_is_a_regular_file_and_its_lock_never_follows_a_symlink(tmp_path):
    from firmware_host.mqtt.spool import Spool

    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        Spool(fifo)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "q.sqlite.lock").symlink_to(victim)
    with pytest.raises(OSError):
        Spool(tmp_path / "q.sqlite")
    assert victim.read_text() == "precious"  # was truncated by open("w")
    said = one_line_status_2(
        run_cli(
            "run",
            "--mqtt",
            "mqtt://127.0.0.1:1",
            "--table",
            "t1",
            "--mqtt-spool",
            str(fifo),
            "--referee-token",
            "a-referee-token-of-the-club",
        )
    )
    assert "--mqtt-spool" in said


# -- what a node says ----------------------------------------------------------------------


def test_a_nodes_log_text_cannot_forge_a_log_line_or_drive_the_terminal(tmp_path):
    """A node's LOG text went into the log as it was: a newline forged a line of the
    daemon's own, an escape sequence drove the operator's terminal."""
    forged = "ok\n2026-12-03 12:00:00,000 ERROR firmware_host.daemon: hub rebooted\x1b[2J"
    wire = encode_frame("LOG", node=1, seq=1, t_us=5, level=2, text=forged)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def table() -> None:
        conn, _ = server.accept()
        with conn:
            for _ in range(20):  # a LOG now and then, as a node would
                conn.sendall(wire)
                time.sleep(0.1)

    threading.Thread(target=table, daemon=True).start()
    done = run_cli("run", "--port", f"socket://127.0.0.1:{port}", "--duration", "3", timeout=120)
    server.close()
    logged = [line for line in done.stderr.splitlines() if "rails: ok" in line]
    assert logged, done.stderr
    assert "\x1b" not in done.stderr
    assert all(line.endswith("hub rebooted\\x1b[2J") and "ok\\n2026" in line for line in logged)
    assert not any(line.startswith("2026-12-03 12:00:00,000") for line in done.stderr.splitlines())


def test_hil_add_refuses_a_name_that_hides_or_breaks_lines(tmp_path):
    source = next(ROOT.glob("hil_tests/corpus/*.full.bin")).read_bytes()
    for name in (".hidden.full.bin", "two\nlines.full.bin", "-dash.full.bin"):
        capture = tmp_path / name
        capture.write_bytes(source)
        said = one_line_status_2(
            run_cli("hil", "add", str(capture), "--corpus", str(tmp_path / "corpus"))
        )
        assert "named with letters" in said
    assert not (tmp_path / "corpus").exists() or not list((tmp_path / "corpus").iterdir())


def test_a_spool_row_with_a_wildcard_topic_is_dropped_and_publishing_goes_on(tmp_path):
    """A spool row with ``#`` in its topic (a damaged or edited file) made paho raise on
    every try: it blocked publishing forever.  It is dropped, said and counted; the verdict
    queued after it reaches the broker."""
    from club_util import Subscriber, running_broker, verdict_line, wait_for

    from firmware_host.mqtt.publisher import TablePublisher
    from firmware_host.mqtt.spool import KEEP, Spool
    from firmware_host.mqtt.topics import broker_url

    path = tmp_path / "q.sqlite"
    damaged = Spool(path)
    damaged.put([("club/t1/#", '{"kind":"verdict"}', False, KEEP)])
    damaged.close()
    servers = running_broker(tmp_path)
    broker = next(servers)
    subscriber = Subscriber(broker.url)
    table = TablePublisher(broker_url(broker.url), "t1", Spool(path)).start()
    try:
        table.line(verdict_line(3), None, None)
        assert subscriber.wait_lines("t1", 1) == [verdict_line(3)]
        wait_for(lambda: table.spool.rows == 0, 30, "the spool emptied")
        assert table.unusable == 1
    finally:
        table.close(1.0)
        subscriber.close()
        next(servers, None)
