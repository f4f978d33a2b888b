"""The kernels as drivers of small steps (issues 9 and 26).

Each kernel of the decoder, the physics, the timing core and the fusion stays
readable (a docstring, one screen, a short argument list; in the timing core
and the fusion, parameters named in words and no file over 600 lines), and
each driver gives the same answer compiled and as the plain Python it was
written as, so the NamedTuples it takes work both ways (the interpreted
start-up path runs them with ``NUMBA_DISABLE_JIT``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

from firmware_host.virtual_table import physics
from firmware_host.virtual_table.physics import EV_BALL, Impulse, Table2D
from protocol import kernels
from protocol.decoder import _CHECKS, _REC_SIZE, FRAME_DTYPE, StreamDecoder
from protocol.synthetic import mixed_capture

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import kernel_shape  # bench/kernel_shape.py: the same measure, printed

CORES = ("fusion", "timing", "decoder")  # held to bench/kernel_shape.py's BOUNDS
MODULES = sorted({k.where for k in kernel_shape.kernels()})


def _kernels(relpath: str) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / relpath).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if getattr(target, "attr", getattr(target, "id", "")) in ("njit", "jit"):
                    found.append(node)
    return found


@pytest.mark.parametrize("relpath", MODULES)
def test_every_kernel_is_short_and_says_what_it_decides(relpath: str) -> None:
    kernels_ = _kernels(relpath)
    assert kernels_
    for fn in kernels_:
        lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        args = len(fn.args.posonlyargs) + len(fn.args.args) + len(fn.args.kwonlyargs)
        assert ast.get_docstring(fn), f"{relpath}:{fn.name} has no docstring"
        assert lines <= 80, f"{relpath}:{fn.name} is {lines} lines"
        assert args <= 10, f"{relpath}:{fn.name} takes {args} arguments"


@pytest.mark.parametrize("part", CORES)
def test_the_cores_name_their_parameters_and_keep_their_files_short(part: str) -> None:
    """Issue 26: at most 10 % of the parameter names under 3 characters (``st``, ``ev``,
    ``i`` were 58 % of the fusion's, ``b``, ``s``, ``f`` 18 % of the decoder's), no kernel
    file over 600 lines."""
    (measured,) = [p for p in kernel_shape.parts() if p.name == part]
    assert measured.kernels
    assert measured.problems() == []


def test_no_file_of_the_cores_is_over_600_lines() -> None:
    """Issue 26: protocol, timing, fusion and rules, kernels or not (rules/shot.py was
    1 222 lines, rules/referee.py 635)."""
    assert kernel_shape.core_files()
    assert kernel_shape.long_core_files() == []


def _scan(fn, data: np.ndarray):
    dec = StreamDecoder()
    bound = np.zeros(256, np.int64)
    delimiters = kernels.prescan(data, bound)
    sizes = bound * _REC_SIZE
    region = np.zeros(256, np.int64)
    np.cumsum(sizes[:-1], out=region[1:])
    out = kernels.FrameTables(
        frames=np.zeros(delimiters, FRAME_DTYPE),
        per_type=np.zeros(256, np.int64),
        region=region,
        rec_size=_REC_SIZE,
        records=np.zeros(int(sizes.sum()), np.uint8),
        raw=np.zeros(len(data), np.uint8),
    )
    n, consumed = fn(data, 0, -1, _CHECKS, dec._accounts, out)
    return n, consumed, out, dec._accounts


def test_scan_compiled_equals_interpreted() -> None:
    data = bytearray(mixed_capture(6000, seed=4))
    data[100:140] = bytes(40)  # a run of delimiters and a broken frame
    data[700] ^= 0x5A  # a CRC error
    arr = np.frombuffer(bytes(data), np.uint8)
    compiled = _scan(kernels.scan, arr)
    interpreted = _scan(kernels.scan.py_func, arr)
    assert compiled[:2] == interpreted[:2]
    assert compiled[0] > 100
    for a, b in zip(compiled[2] + compiled[3], interpreted[2] + interpreted[3], strict=True):
        assert a.tobytes() == b.tobytes()
    assert compiled[3].bad.sum() > 0


def _two_balls() -> Table2D:
    sim = Table2D()
    sim.place(0.0, 0, (500.0, 500.0))
    sim.place(0.0, 1, (900.0, 520.0))
    sim.apply(Impulse(0.0, 0, (2000.0, 0.0), (2000.0, 0.0)))
    return sim


def test_next_event_compiled_equals_interpreted() -> None:
    sim = _two_balls()
    args = (sim.balls, sim.motion, sim._cushions, sim._pockets, sim.geo.radius, 10.0)
    compiled = physics._next_event(*args)
    interpreted = physics._next_event.py_func(*args)
    assert compiled == interpreted
    dt, kind, i, j = compiled
    assert (kind, i, j) == (EV_BALL, 0, 1)
    # the centres meet one diameter apart: 400 mm apart along x, 20 mm across,
    # the cue ball rolling at 2 m/s and slowed by rolling resistance only
    travel = 400.0 - np.sqrt((2 * sim.geo.radius) ** 2 - 20.0**2)
    assert travel / 2000.0 < dt < travel / 1950.0
