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

**What a cached kernel is keyed on.**  numba checks a cached kernel against
its own source file only, yet a kernel compiles its callees and the
constants it imports into itself: a cached ``fuse`` would go on running
yesterday's ring-down after ``fusion/cushions.py`` changed.  So the stamp
numba keeps beside each cached kernel (``get_source_stamp``) is, here, a
hash of the kernel's file and of every file of this project it imports,
transitively (:func:`sources_stamp`); the locators that give it are
numba's own with that one method changed, named in
``NUMBA_CACHE_LOCATOR_CLASSES`` (numba imports them when it caches the
first kernel; this module itself never imports numba).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger("firmware_host.numba_cache")  # the name logs have always shown

ENV = "NUMBA_CACHE_DIR"
LOCATORS_ENV = "NUMBA_CACHE_LOCATOR_CLASSES"
#: numba's locators, in numba's order, each with :func:`sources_stamp` (see :func:`__getattr__`)
LOCATORS = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
PACKAGE_ROOTS = ("firmware_host", "protocol")  # the packages holding cached kernels
OWN_PACKAGES = (*PACKAGE_ROOTS, "rules")  # what a kernel's stamp follows the imports into

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
    here = Path(__file__).resolve().parent.parent
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
    _stamp_sources()
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


# -- the stamp of a cached kernel ------------------------------------------------------------


def _stamp_sources() -> None:
    """numba's locators with :func:`sources_stamp`, for every kernel cached from now on."""
    names = ",".join(f"{__name__}.Sources{name}" for name in LOCATORS)
    os.environ[LOCATORS_ENV] = names
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba read the environment already: tell it too
        config.CACHE_LOCATOR_CLASSES = names  # type: ignore[attr-defined]


def _project_root(path: Path) -> Path:
    """The directory holding the outermost package ``path`` belongs to."""
    root = path.parent
    while (root / "__init__.py").exists():
        root = root.parent
    return root


def _module_file(root: Path, module: str) -> Path | None:
    """The file of ``module`` under ``root`` (a module or a package), or None (not ours)."""
    if module.split(".")[0] not in OWN_PACKAGES:
        return None
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# an import statement at the start of a line: ``from .x import (a, b)``, ``import x.y as z``
_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))",
    re.MULTILINE,
)


@functools.cache
def _imports(path: Path) -> tuple[Path, ...]:
    """The files of this project that ``path`` imports (absolute and relative imports,
    and ``from package import submodule``).  Read as text, not parsed: a start-up pays
    for it; a line of a docstring that looks like an import only adds a file."""
    root = _project_root(path)
    package = path.parent.relative_to(root).parts
    found = []
    for dots, module, names, plain in _IMPORT.findall(path.read_bytes()):
        if plain:
            wanted = [n.split()[0] for n in plain.decode().split("#")[0].split(",") if n.strip()]
        else:
            level = len(dots)
            parts = package[: len(package) - level + 1] if level else ()
            base = ".".join((*parts, module.decode())).strip(".")
            listed = names.decode().split("#")[0].strip("()").replace("\n", " ").split(",")
            wanted = [base] + [f"{base}.{n.split()[0]}" for n in listed if n.strip()]
        found += [f for f in (_module_file(root, name) for name in wanted if name) if f]
    return tuple(found)


@functools.cache
def sources_stamp(py_file: str) -> str:
    """A hash of ``py_file`` and of every file of this project it imports, transitively:
    what a kernel defined in it may have compiled into itself (callees, constants)."""
    start = Path(py_file).resolve()
    root = _project_root(start)
    todo, seen = [start], set()
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += _imports(path)
    digest = hashlib.sha256()
    for path in sorted(seen):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.cache
def __getattr__(name: str) -> Any:
    """``Sources<numba locator>``: that numba locator with :func:`sources_stamp` as its
    source stamp.  Made when numba asks for it (``NUMBA_CACHE_LOCATOR_CLASSES``), so that
    importing this module never imports numba."""
    if not (name.startswith("Sources") and name[len("Sources") :] in LOCATORS):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from numba.core import caching

    base = getattr(caching, name[len("Sources") :])

    def get_source_stamp(self: Any) -> str:
        return sources_stamp(self._py_file)

    return type(name, (base,), {"get_source_stamp": get_source_stamp, "__module__": __name__})
