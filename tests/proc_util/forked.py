"""``python -m firmware_host …`` started by fork from a test process that has imported it.

The suite's time on 2 cores is its CPU, and more than half of that CPU was the commands
the tests start: each one spends about a second importing numpy and numba and loading
its cached kernels before it reads a byte (a per-test profile: 560 of 860 s).  A command
forked from the test worker, which has done that once, starts in milliseconds, as
multiprocessing's fork start method and a zygote do.

It is still the command as a user runs it in every way the tests look at: its own process
(a pid to signal, an exit status, the worker's child), real pipes or files for its
stdin, stdout and stderr, its own working directory and environment, only its own file
descriptors, the signal dispositions and standard streams a fresh interpreter has, no
logging handler, warning filter or exit hook of pytest's, ``SystemExit`` and uncaught
exceptions ending it as the interpreter ends it (a traceback and status 1, 130 by
SIGINT), non-daemon threads joined, exit hooks run, and buffered output flushed (120 when
that fails).  Whatever depends on how the interpreter started runs the real way: an
environment that changes numba's, Python's or the cache's start-up (``NUMBA_*``,
``PYTHON*``, ``HOME``, ``XDG_CACHE_HOME``), a program other than this command, a change
of user or group.  The tests of the start itself (the cold start, the kernel cache, an
import interrupted by Ctrl-C) use :class:`subprocess.Popen` as before.
"""

from __future__ import annotations

import atexit
import faulthandler
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import types
import warnings
from pathlib import Path
from typing import Any

import firmware_host

PREFIX = [sys.executable, "-m", "firmware_host"]
START_UP_ENV = ("NUMBA_", "PYTHON", "HOME", "XDG_CACHE_HOME", "LC_", "LANG")
MAIN = str(Path(firmware_host.__file__).with_name("__main__.py"))


def _start_up(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(START_UP_ENV)}


def forkable(args: Any, executable: Any, shell: bool, env: Any, *ids: Any) -> bool:
    """Whether this start is the command under the interpreter's own start-up."""
    argv = list(args) if isinstance(args, (list, tuple)) else None
    return (
        argv is not None
        and argv[:3] == PREFIX
        and executable is None
        and not shell
        and all(i in (None, -1) for i in ids)
        and (env is None or _start_up(dict(env)) == _start_up(dict(os.environ)))
    )


class ForkedPopen(subprocess.Popen):
    """:class:`subprocess.Popen` whose child is forked, not executed, when it is this
    command (:func:`forkable`); everything after the start (pipes, ``communicate``,
    ``wait``, signals, timeouts) is Popen's own."""

    def _execute_child(  # type: ignore[override]
        self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
        startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
        errread, errwrite, restore_signals, gid, gids, uid, umask, start_new_session,
        process_group,
    ) -> None:  # fmt: skip
        if not forkable(args, executable, shell, env, gid, gids, uid):
            return super()._execute_child(
                args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
                startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
                errread, errwrite, restore_signals, gid, gids, uid, umask,
                start_new_session, process_group,
            )  # fmt: skip
        _warm()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing of the test's own output is written twice
        pid = os.fork()
        if pid == 0:
            _child(
                list(args)[3:], dict(os.environ if env is None else env), cwd,
                (p2cread, c2pwrite, errwrite), set(pass_fds), preexec_fn, umask,
                start_new_session, process_group,
            )  # fmt: skip
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
        return None


def run(
    argv: list[str],
    *,
    input: Any = None,
    timeout: float | None = None,
    capture_output: bool = False,
    check: bool = False,
    **kw: Any,
) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` through :class:`ForkedPopen`: the same arguments, the same result."""
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    if capture_output:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    with ForkedPopen(argv, **kw) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


_warmed = False


def _warm() -> None:
    """Load the decoder's, the timing core's and the fusion's kernels here once, so that
    no forked child loads them again (each start of a command did)."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import tempfile

    from simulated import simulated

    from firmware_host.pipeline import replay

    with tempfile.TemporaryDirectory() as scratch:
        replay(simulated(Path(scratch) / "warm.bin", "--scenario", "push").read_bytes())


def _child(argv, env, cwd, std, keep, preexec_fn, umask, new_session, group) -> None:
    """The forked side: become a fresh ``python -m firmware_host ARGV``; never returns."""
    status = 1
    try:
        gc.freeze()  # the test's objects are never collected here: their fds close below
        for fd, target in zip(std, (0, 1, 2)):
            if fd not in (-1, target):
                os.dup2(fd, target)
        if preexec_fn is not None:
            preexec_fn()
        _close_fds(keep | {0, 1, 2})
        if cwd is not None:
            os.chdir(cwd)
        if umask >= 0:
            os.umask(umask)
        if new_session:
            os.setsid()
        if group not in (None, -1):
            os.setpgid(0, group)
        os.environ.clear()
        os.environ.update(env)
        status = _main(argv)
    except BaseException:  # noqa: BLE001 - the child reports and ends, never returns to pytest
        traceback.print_exc()
    finally:
        os._exit(status)


def _close_fds(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, closed already


def _fresh_interpreter(argv: list[str]) -> None:
    """What ``python -m`` gives a program that the test worker changed."""
    for number in signal.valid_signals():
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    faulthandler.disable()
    atexit._clear()
    firmware_host._signalled.clear()  # the signals a fresh package has exited on: none
    warnings.resetwarnings()
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    root = logging.getLogger()
    for logger in [root, *logging.Logger.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            logger.handlers.clear()
            logger.setLevel(logging.NOTSET)
            logger.disabled = False
            logger.propagate = True
    root.setLevel(logging.WARNING)
    logging.disable(logging.NOTSET)
    encoding, errors = sys.__stdout__.encoding, sys.__stdout__.errors
    sys.stdin = sys.__stdin__ = _stream(0, "rb", encoding, errors)
    sys.stdout = sys.__stdout__ = _stream(1, "wb", encoding, errors, line_buffering=os.isatty(1))
    sys.stderr = sys.__stderr__ = _stream(
        2, "wb", encoding, "backslashreplace", line_buffering=True
    )
    sys.argv = [MAIN, *argv]


def _stream(fd: int, mode: str, encoding: str, errors: str, **kw: Any) -> io.TextIOWrapper | None:
    """A standard stream as the interpreter opens it: None when the descriptor is closed."""
    try:
        os.fstat(fd)
    except OSError:
        return None
    return io.TextIOWrapper(open(fd, mode, closefd=False), encoding, errors, **kw)


def _main(argv: list[str]) -> int:
    """Run the command and end as the interpreter ends: the exit status it would give."""
    _fresh_interpreter(argv)
    try:
        _run_main()
        status = 0
    except SystemExit as ending:
        status = _exit_status(ending.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 130
    except BaseException:  # noqa: BLE001 - as sys.excepthook prints it
        traceback.print_exc()
        status = 1
    return _finish() or status


def _run_main() -> None:
    """``python -m firmware_host``: its ``__main__.py`` run as the module ``__main__``
    (by hand: runpy asks the package's loader, which under pytest is its rewriting hook)."""
    module = types.ModuleType("__main__")
    module.__file__ = MAIN
    module.__package__ = "firmware_host"
    sys.modules["__main__"] = module
    exec(compile(Path(MAIN).read_bytes(), MAIN, "exec"), module.__dict__)  # noqa: S102 - our own file


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _finish() -> int:
    """Join the non-daemon threads, run the exit hooks, flush: 120 if a flush fails."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    status = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            status = 120
    return status
