"""Referee a live table: read the hub, judge every shot, drive the foul lamp.

With no --port (and no --config, outside a service), or with --virtual,
the built-in virtual table is started on a pseudo-terminal (a separate
process speaking the real wire protocol) and the daemon referees its
match, then stops when the match is over.  Under --config FILE or a
service manager (systemd) a port is required: without one, run refuses in
one line (exit status 2) instead of refereeing a virtual match.  Verdicts
go to stdout (a readable view, or --json lines of EVENTS.md), logs to stderr.

--port must name a serial device (a character device that is a tty, which
this user may open: else the line names the group, e.g. dialout) or a
pyserial URL (socket:// and rfc2217:// with HOST:PORT); anything else is a
usage error at once, while a table that is only absent is waited for, with
a log line every 12 s: a device path that does not exist yet (a USB
adapter that enumerates late), a server not up yet, a cable pulled later.
--record DIR is created if missing; a full disk later is logged and the
refereeing goes on.  SIGINT, SIGTERM or SIGHUP at any moment: the virtual
table (and any helper process) is terminated, the recording closed, the
closing summary printed, exit status 128 + the signal (130, 143, 129).

The first start with a cold numba cache does not wait for the kernels to
compile: a background process compiles them (progress on stderr, once per
install) while the same pipeline referees in pure Python in a worker
process; the compiled pipeline takes over when they are ready.  If the
match ends first, run waits for the compile to finish (a signal skips it)
so that the next start is warm.  See docs/startup.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .. import SignalUnwind
from ..cli.args import (
    UsageError,
    check_port,
    record_dir,
    rules_config,
    signing_check,
)
from ..cli.options import (
    UNCHOSEN_SPEED,
    Unchosen,
    add_settings,
    broker_settings,
    check_link,
)

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0  # after a signal, an orderly stop gets this long, then the process ends anyway
TABLE_EXIT_S = 5.0  # the virtual table's time to close its pty after SIGTERM


EXAMPLES = """\
  firmware-host run                                  # referee the built-in virtual table's match
  firmware-host run --port /dev/ttyUSB0 --record recordings/
  firmware-host run --port socket://rig:7000 --json | jq .verdict
  firmware-host run --config /etc/firmware-host.toml --near-gap 12
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="read the settings below from this TOML file (docs/config.md; "
        "firmware-host config example writes one); an option given here overrides it",
    )
    add_settings(parser)


COLD_SPEED = 1.0  # the virtual table's pace while the pipeline runs in pure Python


class _Interrupted(SignalUnwind):
    """A signal while starting up (a blocking read, an import): unwind to the cleanup."""


class _Signals:
    """SIGINT/SIGTERM/SIGHUP for the whole run, remembered so none can be lost.

    The handler records the signal and sets ``stop``; the daemon loop sees
    that within a tick.  Only while starting up (``raising``) does it also
    raise, to break a blocking read.  An exception raised from a signal
    handler can be swallowed (it may land in a callback whose errors are
    only printed, e.g. numba's), so the exit status comes from the record,
    never from the exception.  If the orderly stop takes longer than
    ``GRACE_S`` (a kernel compiling), or a second signal comes, the
    virtual table is killed and the process ends at once.
    """

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.signum: int | None = None
        self.raising = True
        self.children: list[subprocess.Popen[Any]] = []  # the virtual table and helpers
        self.warmup: Any = None  # the background compile's reporter (warmup.Background)
        self.abandon = threading.Event()  # set with the signal: the daemon waits for nothing
        self._watchdog: threading.Timer | None = None
        main = threading.current_thread() is threading.main_thread()  # else Python refuses
        self._previous = {sig: signal.signal(sig, self._handle) for sig in SIGNALS} if main else {}

    @property
    def status(self) -> int | None:
        return None if self.signum is None else 128 + self.signum

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            self._hard_exit()
        self.signum = signum
        self.abandon.set()
        self.stop.set()
        self._watchdog = threading.Timer(GRACE_S, self._hard_exit)
        self._watchdog.daemon = True
        self._watchdog.start()
        if self.raising:
            raise _Interrupted

    def _hard_exit(self) -> None:
        for child in self.children:
            _kill(child)
        os._exit(self.status or 1)

    def restore(self) -> None:
        """The previous handlers back; the stop is done, so no watchdog either."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _kill(child: subprocess.Popen[Any]) -> None:
    try:
        child.kill()
    except OSError:  # already gone
        pass


def _end(child: subprocess.Popen[Any]) -> None:
    """Terminate a child (the virtual table, a helper) and reap it; kill it if it does not go."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(TABLE_EXIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _child_setup(parent: int) -> Any:
    """Runs in the forked child before exec: no signal blocked, dies with its parent."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return setup


def _spawn(
    cmd: list[str], signals: _Signals, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.Popen[Any]:
    """A child that a signal to us, or our death, always ends."""
    setup = _child_setup(os.getpid()) if sys.platform.startswith("linux") else None
    # No signal between the fork and knowing the child's pid: it could not be terminated.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        child = subprocess.Popen(
            cmd,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches us; we end the child
            preexec_fn=setup,  # noqa: PLW1509 - no other thread runs yet
            **kwargs,
        )
        signals.children.append(child)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return child


def _virtual_table(
    args: argparse.Namespace, signals: _Signals, interpreted: bool
) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "firmware_host",
        "simulate",
        "--pty",
        "--wait-host",
        "--speed",
        str(args.speed),
        "--sensors",
        args.sensors,
        "--seed",
        str(args.seed),
        "--minutes",
        str(args.minutes),
    ]
    if args.scenario:
        cmd += ["--scenario", args.scenario]
    if args.faults:
        cmd += ["--faults", args.faults]
    # With the kernels not compiled yet, the table's physics runs as plain Python: a
    # two-minute match takes under a second to build that way, and nothing to compile.
    env = _interpreted_env() if interpreted else None
    return _spawn(cmd, signals, env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def _signing(args: argparse.Namespace) -> Any:
    """The table key's check (``--key-file``/``[signing] key_file``): its counters in the
    state directory, so a frame recorded before a restart is refused after it."""
    if getattr(args, "key_file", None) is None:
        return None
    from protocol.signing import STORE_NAME, CounterStore

    from ..keys import state_dir

    check = signing_check(args, CounterStore(state_dir() / STORE_NAME))
    _say(f"table key {check.fingerprint}: SETUP_SIGNING at connect, require 0x{check.require:04x}")
    return check


def _interpreted_env() -> dict[str, str]:
    return {**os.environ, "NUMBA_DISABLE_JIT": "1"}


def _cold_start(signals: _Signals, rules: Any, say: Callable[[str], None]) -> tuple[Any, Any]:
    """The kernels are not compiled: a warm-up in the background, a worker meanwhile.

    The warm-up first, and the engine (which imports the pipeline, numpy and numba) after
    it: its first line is on stderr before this process spends seconds importing."""
    from ..live.warmup import Background, marker_path

    warmup = None
    if marker_path() is not None:  # else numba caches nothing: compiling would not last
        proc = _spawn(
            [sys.executable, "-m", "firmware_host.live.warmup", "--machine", "--nice", "10"],
            signals,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        warmup = signals.warmup = Background(proc, say)
    else:
        say("numba can cache nothing here: the table is refereed in pure Python throughout")
    from ..live.engine import ColdStart

    worker = _spawn(
        [sys.executable, "-m", "firmware_host.live.interpreted"],
        signals,
        _interpreted_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    return ColdStart(worker, warmup, rules), warmup


#: set by systemd for every service it starts; the second also for Type=notify
def _say(text: str) -> None:
    sys.stderr.write(f"firmware-host run: {text}\n")
    sys.stderr.flush()


def _check_scenario(name: str) -> bool:
    """True if ``--scenario list`` was asked (the names are printed)."""
    from ..virtual_table import scenarios

    if name == "list":
        sys.stdout.write("".join(f"{n}\n" for n in sorted(scenarios.SCENARIOS)))
        return True
    if name not in scenarios.SCENARIOS:
        names = ", ".join(sorted(scenarios.SCENARIOS))
        raise UsageError(f"--scenario {name}: unknown (one of: {names})")
    return False


def _check_faults(spec: str) -> None:
    """``--faults`` checked here, in one line, before the virtual table is started."""
    from ..virtual_table.faults import FaultPlan

    try:
        FaultPlan.parse(spec)
    except ValueError as exc:
        raise UsageError(f"--faults: {exc}") from None


def run(args: argparse.Namespace) -> int:
    # The referee's presses are an audit record: logged without -v too (docs/web.md).
    presses = logging.getLogger("firmware_host.presses")
    presses.setLevel(min(logging.INFO, logging.getLogger().getEffectiveLevel()))
    out = sys.stdout

    def show(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    stop = threading.Event()
    match_ended = threading.Event()  # the virtual table said "match over": its end, not a fault
    signals = _Signals(stop)
    table = None
    engine = warmup = None
    server: Any = None
    publisher: Any = None
    stats = None
    try:
        try:
            if args.port is None and args.scenario is not None and _check_scenario(args.scenario):
                return 0
            _check_faults(args.faults)
            check_link(args)
            if args.port is not None:
                check_port(args.port, absent_ok=True)
            if args.web is not None:  # the page's process loads while the daemon starts
                server = _web_modules()(*args.web).launch()  # (a missing extra: said first)
            if args.mqtt is not None:
                _check_club(args)
            record = record_dir(args.record) if args.record else None

            from ..live.warmup import is_warm

            rules = rules_config(args)
            signing = _signing(args)
            cold = not is_warm()
            # Every child first, so they start while this process imports.
            if cold and signing is None:
                engine, warmup = _cold_start(signals, rules, _say)
            elif cold:
                _say(
                    "a table key is set: the referee waits for its compiled kernels (the "
                    "interpreted stand-in does not check signed frames)"
                )
            if args.port is None:
                if cold and isinstance(args.speed, Unchosen):
                    args.speed = COLD_SPEED
                    _say(
                        f"the virtual table plays its match at {COLD_SPEED:g}x, a real table's "
                        f"pace, while the kernels compile (later starts: {UNCHOSEN_SPEED:g}x): "
                        "the pure-Python referee judges every shot as it ends at that pace, "
                        "not at 10x (--speed chooses)"
                    )
                table = _virtual_table(args, signals, interpreted=cold)

            from ..cli.liveview import LiveView
            from ..jsonout import dumps
            from ..live.daemon import Daemon
            from ..service.resume import todays_parts

            view = LiveView()
            on_line = (
                (lambda line: show(dumps(line)))
                if args.json
                else (lambda line: show(view.line(line)))
            )
            on_event = None
            if args.events:
                on_event = (
                    (lambda e: show(dumps(e))) if args.json else (lambda e: show(view.event(e)))
                )
            url = args.port
            if table is not None:
                assert table.stdout is not None
                url = table.stdout.readline().strip()
                if not url:
                    raise UsageError("the virtual table did not start (see the message above)")

                def match_over(lines: Any) -> None:
                    # the table says "match over" before it closes its pty (or just exits)
                    for line in lines:
                        if line.strip() == "match over":
                            match_ended.set()
                            break
                    stop.set()

                threading.Thread(target=match_over, args=(table.stdout,), daemon=True).start()
            earlier = todays_parts(record) if record is not None else []
            try:
                daemon = Daemon(
                    url,
                    baud=args.baud,
                    rules=rules,
                    record_dir=record,
                    record_part_bytes=(
                        round(args.record_part_mb * 1e6) if args.record_part_mb else None
                    ),
                    on_event=on_event,
                    on_line=on_line,
                    engine=engine,
                    signing=signing,
                )
            except OSError as exc:
                raise UsageError(f"--record {args.record}: {exc.strerror or exc}") from None
            feed = None
            edges = args.web is not None or args.mqtt is not None
            token = _token(args.referee_token) if edges else None  # the controls' token
            if args.web is not None:
                feed = _web(server, daemon, token)
            if args.mqtt is not None:
                publisher = _mqtt(args, daemon, server, token)
            daemon.listen(_health(daemon, args.status, record, publisher))
            if earlier:
                _resume(daemon, earlier)
                if feed is not None:  # the page had the new match's state: now the resumed one
                    feed.state(daemon.referee_state)
            if record is not None and (args.record_keep_days or args.record_keep_gb):
                _retention(daemon, record, args, stop)
        finally:
            signals.raising = False
        if signals.signum is None:
            if args.duration is not None:
                timer = threading.Timer(args.duration, stop.set)
                timer.daemon = True
                timer.start()
            stats = daemon.run(stop, abandon=signals.abandon, hang_up=table is not None)
    except _Interrupted:
        pass
    except Exception:
        if signals.status is not None:  # whatever broke after the signal, the signal decides
            return signals.status
        raise
    finally:
        signals.raising = False
        stop.set()
        if server is not None and (signals.status is not None or stats is None):
            server.stop()  # else it shows the match's end while the compile finishes, below
            server = None
        if publisher is not None:
            publisher.close()
        if table is not None:
            _end(table)
        if engine is not None:
            engine.close()
        if signals.status is not None or stats is None:
            _end_all(signals)
    try:
        if signals.status is None and _compile_worth_waiting_for(warmup):
            # The refereeing ended before the kernels compiled: finish them, or the next start
            # is cold again.  Its progress goes on; a signal ends it (and run: 128 + signal).
            _say(
                "refereeing done; finishing the numba compile so that later starts take "
                f"seconds (once per install; Ctrl-C skips it): {warmup.state}"
            )
            while signals.signum is None and warmup.wait(0.2) is None:
                pass
    finally:
        if server is not None:
            server.stop()
        _end_all(signals)
    if stats is None:  # a signal before the refereeing began: nothing to sum up
        assert signals.status is not None
        return signals.status
    lost = f", {stats.record_lost} bytes not recorded" if stats.record_lost else ""
    if stats.decoder.get("over_rate"):
        lost += f", beyond a node's rate limit (dropped) {stats.decoder['over_rate']}"
    if stats.losses:
        lost += f", timing and fusion dropped {stats.losses}"
    if stats.sink_failures:  # calls that raised, by sink (logged as they came)
        lost += f", sinks failed {stats.sink_failures}"
    from ..cli.liveview import summary_text

    ended = "end of match: " if match_ended.is_set() else ""
    if signals.signum is not None:
        ended = f"stopped by {signal.Signals(signals.signum).name}: "
    sys.stderr.write(
        f"firmware-host run: {ended}{summary_text(stats.verdicts, stats.events, stats.bytes)}; "
        f"bad frames {stats.decoder.get('bad', {})}, lost {stats.decoder.get('lost', {})}, "
        f"link losses {stats.link_losses}, hub reboots {stats.reboots}{lost}; "
        f"{_lag_text(stats, table is not None and args.speed != 1)}\n"
    )
    return signals.status or 0


def _lag_text(stats: Any, played_fast: bool) -> str:
    """The live bound, as this run kept it; a virtual table played faster than real time
    runs its hub clock faster than the host's, so only 1x is timed."""
    return "release lag timed at --speed 1 only" if played_fast else stats.release_lag.text()


def _retention(daemon: Any, record: Any, args: argparse.Namespace, stop: Any) -> None:
    from ..service.retention import keep_pruning

    keep_bytes = round(args.record_keep_gb * 1e9) if args.record_keep_gb else None
    recorder = daemon.recorder
    keep_pruning(record, args.record_keep_days, keep_bytes, lambda: recorder.paths[-1:], stop)


def _resume(daemon: Any, parts: list[Any]) -> None:
    """Today's recording through the fresh pipeline: the match state as it was (a restart)."""
    from ..checkpoint import checkpoint_path
    from ..service.resume import resume

    if daemon.pipeline is None:
        _say(
            f"{len(parts)} recording parts from today in {parts[0].parent}: not replayed, the "
            "kernels are still compiling (a first start); the match state starts afresh"
        )
        return
    done = resume(daemon.pipeline, parts, checkpoint_path(parts[0].parent))
    daemon.booted = True  # the recording had the table's boot: the next boot event is a reboot
    since = f"since the checkpoint at {done.checkpoint}: " if done.checkpoint else ""
    _say(
        f"resumed the match from today's recording ({since}{done.parts} parts, {done.bytes} bytes, "
        f"{done.verdicts} verdicts, last shot {done.shot}): frame {done.frame}, "
        f"player {done.to_play} to play"
    )


def _health(daemon: Any, status: str | None, record: Any, publisher: Any) -> Any:
    """The status file (``--status``), systemd's READY and watchdog (``$NOTIFY_SOCKET``),
    and the health the daemon tells its sinks (the page, the broker) once a second."""
    from ..service.health import HealthMonitor, check_status_path
    from ..service.notify import Notifier

    if status is not None:
        try:
            check_status_path(status)
        except ValueError as exc:
            raise UsageError(f"--status {exc}") from None
    facts = [publisher.facts] if publisher is not None else []  # the broker's, for status
    return HealthMonitor(daemon, status, Notifier(), record, facts)


def _check_club(args: argparse.Namespace) -> None:
    """--mqtt's companions, before anything starts: a table id usable in a topic, the files."""
    from ..mqtt.topics import check_table

    if args.table_id is None:
        raise UsageError("--mqtt needs --table ID (or [table] id in the config file)")
    try:
        check_table(args.table_id)
    except ValueError as exc:
        raise UsageError(f"--table {exc}") from None
    broker_settings(args)


def _mqtt(args: argparse.Namespace, daemon: Any, server: Any, token: Any) -> Any:
    """The table on the club's broker: a publisher thread, its spool, the daemon's sinks."""
    try:
        from ..mqtt.publisher import TablePublisher, default_spool
        from ..mqtt.spool import Spool
    except ModuleNotFoundError as exc:
        raise UsageError(f"--mqtt needs {exc.name}: pip install -e '.[mqtt]'") from None
    import sqlite3

    table = args.table_id
    url, password, tls = broker_settings(args)
    spool_path = args.mqtt_spool or default_spool(table)
    try:
        spool = Spool(spool_path, args.mqtt_spool_max)
    except (OSError, sqlite3.Error) as exc:  # not a spool, a locked file
        raise UsageError(f"--mqtt-spool {spool_path}: {exc}") from None
    web = None
    if server is not None:
        host = server.host if server.host not in ("0.0.0.0", "::", "") else _hostname()
        web = f"http://{host}:{server.port}/"
    publisher = TablePublisher(
        url,
        table,
        spool,
        password=password,
        tls=tls,
        web=web,
        press=daemon.press,
        token=token,
    ).start()
    publisher.attach(daemon)
    held = f", {spool.rows} messages queued from before" if spool.rows else ""
    _say(f"club broker: {url} as table {table}, queue {spool_path}{held}")
    return publisher


def _hostname() -> str:
    import socket

    return socket.getfqdn()


def _token(given: str | None) -> Any:
    """The table's referee token: the one given, or a new one said once (docs/web.md)."""
    from ..live.referee_token import RefereeToken

    token = RefereeToken(given)
    if token.generated:
        _say(f"referee token (for the page's controls; --referee-token sets one): {token.value}")
    return token


def _web_modules() -> Any:
    """The live page's process; a missing extra (aiohttp) is a usage error naming it."""
    try:
        import aiohttp  # noqa: F401  (the page process's server: said here, at once)

        from ..web.process import PageProcess
    except ModuleNotFoundError as exc:
        raise UsageError(f"--web needs {exc.name}: pip install '.[web]'") from None
    return PageProcess


def _web(page: Any, daemon: Any, token: Any) -> Any:
    """The live page listening (its process: web/process.py, the server and the feed in
    one), the daemon's lines, events and balls fed to it."""
    page.state(daemon.referee_state)  # a page opened the moment the address is out sees it
    try:
        port = page.start(token, daemon.press)
    except OSError as exc:
        raise UsageError(
            f"--web {page.host}:{page.port}: cannot listen: {exc.strerror or exc}"
        ) from None
    daemon.listen(page)
    _say(f"live page: http://{page.host}:{port}/ (health: /healthz)")
    return page


def _compile_worth_waiting_for(warmup: Any) -> bool:
    """Still compiling, into a cache that outlives this run (not a temporary one)."""
    from ..live import numba_cache

    running = warmup is not None and warmup.returncode is None
    return running and not numba_cache.decision.startswith("temporary")


def _end_all(signals: _Signals) -> None:
    if signals.warmup is not None:
        signals.warmup.quiet()  # ended by us: no "failed" line
    for child in signals.children:
        _end(child)
    signals.restore()
