"""Where numba keeps its compiled kernels: decided once, before any kernel is imported.

The kernels (``protocol.kernels``, ``firmware_host.timing``, ``.fusion``,
``.virtual_table``) are ``@njit(cache=True)``.  numba caches next to the
source (``__pycache__``) or, failing that, in ``~/.cache/numba``; when
neither is writable (a read-only install run by a service user whose
``HOME`` is not writable) it refuses to import the kernel at all: "cannot
cache function ...: no locator available", a long traceback.  So, in order:

1. ``NUMBA_CACHE_DIR`` if the user set it and it is writable;
2. the package's own ``__pycache__`` directories (numba's default, nothing set);
3. ``$XDG_CACHE_HOME/firmware-host/numba`` (else ``~/.cache/firmware-host/numba``);
4. a fresh temporary directory, removed at exit: the kernels still run, but
   every process compiles them again (about a minute on a cold start) --
   uncached across runs, said once on stderr;
5. if not even that is writable, caching is switched off in numba itself.

A child process (``run`` starts ``simulate``) inherits ``NUMBA_CACHE_DIR``
and so shares the parent's choice without a second warning.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "NUMBA_CACHE_DIR"
PACKAGE_ROOTS = ("firmware_host", "protocol")  # the packages holding cached kernels

decision: str = ""  # what was chosen, for logs and tests


def writable(directory: Path) -> bool:
    """numba's own test: the directory can be created and a file made in it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError:
        return False
    return True


def _source_dirs() -> list[Path]:
    here = Path(__file__).resolve().parent
    dirs = []
    for name in PACKAGE_ROOTS:
        root = here.parent / name
        for path, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != "__pycache__"]
            if any(f.endswith(".py") for f in files):
                dirs.append(Path(path))
    return dirs


def _user_cache_dir() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        if not home or home == "~":
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "firmware-host" / "numba"


def _use(directory: Path | str) -> None:
    os.environ[ENV] = str(directory)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba read the environment already: tell it too
        config.CACHE_DIR = str(directory)  # type: ignore[attr-defined]


def ensure() -> str:
    """Make sure ``@njit(cache=True)`` can import; returns the decision (also in :data:`decision`)."""
    global decision
    if decision:
        return decision
    chosen = os.environ.get(ENV)
    if chosen and writable(Path(chosen)):
        decision = f"NUMBA_CACHE_DIR {chosen}"
        return decision
    if all(writable(d / "__pycache__") for d in _source_dirs()):
        if chosen:  # set but unusable: numba would try it first on every kernel
            _use("")
        decision = "in tree"
        return decision
    user = _user_cache_dir()
    if user is not None and writable(user):
        _use(user)
        decision = f"user cache {user}"
        return decision
    try:
        temporary = tempfile.mkdtemp(prefix="firmware-host-numba-")
    except OSError:
        _disable_caching()
        decision = "off"
        log.warning(
            "firmware-host: no writable numba cache (package, %s, temp dir): "
            "kernels compile in every process, uncached",
            user or "no HOME",
        )
        return decision
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)
    _use(temporary)
    decision = f"temporary {temporary}"
    log.warning(
        "firmware-host: no writable numba cache (the package's __pycache__, %s): "
        "compiling kernels into %s for this run only (slow start); set NUMBA_CACHE_DIR "
        "to a writable directory to keep them",
        user or "no HOME",
        temporary,
    )
    return decision


def _disable_caching() -> None:
    """Last resort: numba's ``cache=True`` becomes a no-op instead of an ImportError."""
    from numba.core.dispatcher import Dispatcher

    Dispatcher.enable_caching = lambda self: None  # type: ignore[method-assign]
