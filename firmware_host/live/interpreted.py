"""The live pipeline in pure Python: a worker process for ``run`` while the kernels compile.

Started as ``python -m firmware_host.live.interpreted`` with ``NUMBA_DISABLE_JIT=1``
in its environment, so every ``@njit`` kernel is the plain Python function
it was written as: the same decoder, timing core, fusion and rules, about
ten times slower than compiled but with nothing to compile.  Two kernels
whose loops numpy or zlib do in one call are swapped for *twins* that give
the same results (:data:`TWINS`; the tests hold them equal): the paths'
simplification's inner loop at each shot's end, which cost half a second
of Python per moving ball, and the frames' CRC.  A live table sends about 150 frames a
second; interpreted, one core judges the full sensor set about six times
faster than a real table plays (``docs/startup.md`` has the figures).

Protocol (pickles, in order): stdin carries ``("rules", RulesConfig)``
first, then the ops of :mod:`.engine` (``("feed", data, host_rx_ns)``,
``("tick", host_now_ns)``, ``("press", key, arg, host_now_ns)``, ``("flush",)``); stdout carries one
:class:`~.engine.Outcome` per op, in the same order.  End of stdin ends the
worker.  Anything the pipeline writes (numpy's overflow warnings on the
wrapping unsigned arithmetic the kernels rely on) stays off the pipe.
"""

from __future__ import annotations

import os
import pickle
import sys
import warnings
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

#: Where the worker's own package modules start (the names a twin replaces are looked up there).
PACKAGES = ("firmware_host.", "protocol.")


def farthest(x: np.ndarray, y: np.ndarray, a: int, b: int) -> tuple[float, int]:
    """``fusion.paths.farthest`` with the chord's distances computed by numpy in one go.

    The same arithmetic in the same order, and the first farthest point of
    equals (``argmax``), so a shot's paths keep the same points: the end of a
    shot no longer costs the worker half a second of Python per moving ball.
    """
    dx, dy = x[b] - x[a], y[b] - y[a]
    norm2 = dx * dx + dy * dy
    xs, ys = x[a + 1 : b] - x[a], y[a + 1 : b] - y[a]
    if not len(xs):
        return -1.0, -1
    u = (xs * dx + ys * dy) / norm2 if norm2 > 1e-12 else np.zeros(len(xs))
    u = np.minimum(np.maximum(u, 0.0), 1.0)
    d = np.hypot(xs - u * dx, ys - u * dy)
    far = int(np.argmax(d))
    return float(d[far]), a + 1 + far


def crc32(buf: np.ndarray, start: int, n: int, t: np.ndarray) -> np.uint32:
    """``protocol.kernels.crc32`` by zlib (the same CRC-32/ISO-HDLC; ``t`` is not needed)."""
    return np.uint32(zlib.crc32(buf[start : start + n]))


#: (module, kernel) -> its twin for a process where every kernel is plain Python.
TWINS: dict[tuple[str, str], Callable[..., Any]] = {
    ("firmware_host.fusion.paths", "farthest"): farthest,
    ("protocol.kernels", "crc32"): crc32,
}


def install_twins() -> list[str]:
    """Put each twin wherever its kernel is bound (its module and every module that
    imported it by name); returns what was replaced, ``module.name``, for the tests."""
    import importlib

    done = []
    for (module, name), twin in TWINS.items():
        kernel = getattr(importlib.import_module(module), name)
        for mod in list(sys.modules.values()):
            if mod.__name__.startswith(PACKAGES) and getattr(mod, name, None) is kernel:
                setattr(mod, name, twin)
                done.append(f"{mod.__name__}.{name}")
    return done


def serve(inp: BinaryIO, out: BinaryIO) -> int:
    from .engine import Compiled

    kind, rules = pickle.load(inp)
    if kind != "rules":
        raise ValueError(f"expected the rules first, got {kind!r}")
    pipeline = Compiled(rules)  # the same class: here every kernel is plain Python ...
    install_twins()  # ... but for those numpy or zlib do in one call
    while True:
        try:
            op = pickle.load(inp)
        except EOFError:
            return 0
        outcome = pipeline.apply(op)
        # the totals with every answer: the page's frame count and the health follow the worker
        outcome.decoder_stats = pipeline.decoder_stats()
        pickle.dump(outcome, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def main() -> int:
    if os.environ.get("NUMBA_DISABLE_JIT") != "1":
        sys.stderr.write("firmware_host.live.interpreted: start it with NUMBA_DISABLE_JIT=1\n")
        return 2
    # Interpreted, the kernels' wrapping uint64/uint32 arithmetic runs on numpy scalars,
    # which warn where numba wraps silently; the results are the same.
    warnings.simplefilter("ignore", RuntimeWarning)
    out = os.fdopen(os.dup(1), "wb")  # the protocol's own copy of stdout ...
    os.dup2(2, 1)  # ... and a stray print goes to stderr, not into the pipe
    try:
        return serve(sys.stdin.buffer, out)
    except BrokenPipeError:  # the daemon went away
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
