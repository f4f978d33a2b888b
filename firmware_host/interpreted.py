"""The live pipeline in pure Python: a worker process for ``run`` while the kernels compile.

Started as ``python -m firmware_host.interpreted`` with ``NUMBA_DISABLE_JIT=1``
in its environment, so every ``@njit`` kernel is the plain Python function
it was written as: the same decoder, timing core, fusion and rules, about
ten times slower than compiled but with nothing to compile.  A live table
sends about 150 frames a second; interpreted, one core keeps up with the
virtual table's full sensor set played about ten times faster than real
time (``docs/startup.md`` has the figures).

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
from typing import BinaryIO


def serve(inp: BinaryIO, out: BinaryIO) -> int:
    from .engine import Compiled

    kind, rules = pickle.load(inp)
    if kind != "rules":
        raise ValueError(f"expected the rules first, got {kind!r}")
    pipeline = Compiled(rules)  # the same class: here every kernel is plain Python
    while True:
        try:
            op = pickle.load(inp)
        except EOFError:
            return 0
        pickle.dump(pipeline.apply(op), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def main() -> int:
    if os.environ.get("NUMBA_DISABLE_JIT") != "1":
        sys.stderr.write("firmware_host.interpreted: start it with NUMBA_DISABLE_JIT=1\n")
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
