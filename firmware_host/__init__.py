"""firmware-host: referee a sensor-equipped Russian billiards table over a serial link."""

import os as _os
import signal as _signal
import sys as _sys

from . import numba_cache as _numba_cache

__version__ = "0.1.0"

QUIET_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


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

# Before any module with a cached numba kernel is imported (they all import lazily).
_numba_cache.ensure()
