"""firmware-host: referee a sensor-equipped Russian billiards table over a serial link."""

# The first statements: a signal during start-up ends the CLI with 128 + signal.  Until
# this module runs, the interpreter's default kills the process outright (a parent sees
# -15, not 143), so nothing may be imported before the handlers but what they need.
import os as _os
import signal as _signal
import sys as _sys

QUIET_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


class SignalUnwind(BaseException):
    """Raised by a signal handler that has already recorded the signal, to unwind a read."""


class _SignalExit(SystemExit):
    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


_signalled: list[int] = []  # the signals the quiet handler turned into an exit


def _exit_on_signal(signum: int, frame: object) -> None:
    _signalled.append(signum)
    raise _SignalExit(signum)


def signal_exit_status() -> int | None:
    """128 + the first signal the quiet handler exited on, if one came.  Raised inside an
    import that C code drives (numpy's ``PyCapsule_Import("datetime")``), the exit comes
    out as that import's own error (an ImportError): the signal, not the error, decides."""
    return 128 + _signalled[0] if _signalled else None


def _launched_as_cli() -> bool:
    """``python -m firmware_host`` or the ``firmware-host`` script: this process is the CLI."""
    argv = getattr(_sys, "orig_argv", _sys.argv)
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1] == "firmware_host"
    return len(argv) > 1 and _os.path.basename(argv[1]) == "firmware-host"


if _launched_as_cli():
    # A signal while the CLI is still starting: exit 128 + signal, no traceback (the CLI's
    # main() and `run` take over with handlers of their own).
    for _sig in QUIET_SIGNALS:
        _signal.signal(_sig, _exit_on_signal)

import threading as _threading  # after the handlers, on purpose

from .live import numba_cache as _numba_cache

__version__ = "0.1.0"
RESIGNAL_S = 0.05


def _unraisable(hook: object) -> None:
    """A signal's exception raised inside a C callback (numba's LLVM object cache, while a
    kernel loads or compiles) cannot propagate and would be printed as a traceback.  The
    exit is sent again a moment later, when Python code outside the callback runs; a
    handler that recorded its signal (``SignalUnwind``) needs nothing more."""
    exc = getattr(hook, "exc_value", None)
    if isinstance(exc, _SignalExit):
        again = _threading.Timer(RESIGNAL_S, _os.kill, (_os.getpid(), exc.signum))
        again.daemon = True
        again.start()
    elif not isinstance(exc, SignalUnwind):
        _sys.__unraisablehook__(hook)  # type: ignore[arg-type]


if _launched_as_cli():
    _sys.unraisablehook = _unraisable

# Before any module with a cached numba kernel is imported (they all import lazily).
_numba_cache.ensure()
