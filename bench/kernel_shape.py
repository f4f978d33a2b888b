"""The numba kernels' shape: how long each jitted function is, how many arguments it
takes, how its parameters are named, and whether it says what it decides (issues 9 and
26: a newcomer must be able to read them).  Read from the source with :mod:`ast`,
nothing compiled.

    python bench/kernel_shape.py            # per part, the summary and the 12 longest
    python bench/kernel_shape.py --all      # every kernel
    python bench/kernel_shape.py --check    # exit 1 if a part is over its bounds

Per part of the code (the fusion, the timing core, the virtual table's physics, the
decoder): the kernels, the longest (lines, decorator excluded), the most arguments,
the share of parameter names under 3 characters (``st``, ``ev``, ``i``), the kernels
without a docstring, and the longest file.  ``--check`` holds the fusion, the timing
core and the decoder to ``BOUNDS``: 80 lines, 10 arguments, 10 % short names, 600 lines
a file; and every source file of the four cores (``CORES``: kernels or not, the rules
too) to 600 lines.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the parts measured, each a name and the source files it is
PARTS = {
    "fusion": ("firmware_host/fusion",),
    "timing": ("firmware_host/timing",),
    "physics": ("firmware_host/virtual_table",),
    "decoder": ("protocol",),
}
SHORT = 3  # a parameter name shorter than this says nothing
#: what --check holds a part to: longest kernel, most arguments, short names, longest file
BOUNDS = {"lines": 80, "args": 10, "short_share": 0.10, "file_lines": 600}
CHECKED = ("fusion", "timing", "decoder")
#: the cores (docs/architecture.md): none of their files over BOUNDS["file_lines"]
CORES = ("protocol", "firmware_host/timing", "firmware_host/fusion", "rules")


@dataclass
class Kernel:
    where: str
    name: str
    lines: int
    params: list[str]
    docstring: bool

    @property
    def args(self) -> int:
        return len(self.params)


@dataclass
class Part:
    name: str
    kernels: list[Kernel]
    files: dict[str, int]  # source file -> lines

    @property
    def params(self) -> list[str]:
        return [p for k in self.kernels for p in k.params]

    @property
    def short_share(self) -> float:
        params = self.params
        return sum(len(p) < SHORT for p in params) / len(params) if params else 0.0

    def longest(self) -> Kernel:
        return max(self.kernels, key=lambda k: k.lines)

    def widest(self) -> Kernel:
        return max(self.kernels, key=lambda k: k.args)

    def longest_file(self) -> tuple[str, int]:
        return max(self.files.items(), key=lambda item: item[1])

    def problems(self) -> list[str]:
        """How the part exceeds ``BOUNDS`` ([] when it does not)."""
        out = []
        longest, widest, (path, size) = self.longest(), self.widest(), self.longest_file()
        if longest.lines > BOUNDS["lines"]:
            out.append(f"{longest.where}:{longest.name} is {longest.lines} lines")
        if widest.args > BOUNDS["args"]:
            out.append(f"{widest.where}:{widest.name} takes {widest.args} arguments")
        if self.short_share > BOUNDS["short_share"]:
            out.append(
                f"{self.short_share:.0%} of the parameter names are under {SHORT} characters"
            )
        if size > BOUNDS["file_lines"]:
            out.append(f"{path} is {size} lines")
        out += [f"{k.where}:{k.name} has no docstring" for k in self.kernels if not k.docstring]
        return [f"{self.name}: {p}" for p in out]


def _jitted(node: ast.FunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit"):
            return True
    return False


def _kernels(path: Path) -> list[Kernel]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = str(path.relative_to(ROOT))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _jitted(node):
            a = node.args
            params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            found.append(Kernel(where, node.name, lines, params, bool(ast.get_docstring(node))))
    return found


def parts() -> list[Part]:
    """Every part, measured."""
    out = []
    for name, dirs in PARTS.items():
        kernels, files = [], {}
        for directory in dirs:
            for path in sorted((ROOT / directory).rglob("*.py")):
                found = _kernels(path)
                if found:
                    kernels += found
                    files[str(path.relative_to(ROOT))] = len(path.read_text().splitlines())
        out.append(Part(name, kernels, files))
    return out


def core_files() -> dict[str, int]:
    """Every source file of the cores with its lines (as ``wc -l`` counts them)."""
    return {
        str(path.relative_to(ROOT)): path.read_bytes().count(b"\n")
        for directory in CORES
        for path in sorted((ROOT / directory).rglob("*.py"))
    }


def long_core_files() -> list[str]:
    """The cores' files over ``BOUNDS["file_lines"]``, said ([] when none is)."""
    limit = BOUNDS["file_lines"]
    return [f"cores: {p} is {n} lines" for p, n in core_files().items() if n > limit]


def kernels() -> list[Kernel]:
    """Every kernel of every part."""
    return [k for part in parts() for k in part.kernels]


def summary(measured: list[Part]) -> str:
    """One row per part: the figures issue 26 asks of the fusion and the timing core."""
    head = (
        f"{'part':<8} {'kernels':>7} {'longest':>7} {'args':>4} {'short names':>11} "
        f"{'no doc':>6} {'longest file':>12}  longest kernel / most arguments"
    )
    rows = [head]
    for p in measured:
        longest, widest, (path, size) = p.longest(), p.widest(), p.longest_file()
        bare = sum(not k.docstring for k in p.kernels)
        rows.append(
            f"{p.name:<8} {len(p.kernels):7d} {longest.lines:7d} {widest.args:4d} "
            f"{p.short_share:10.0%} {bare:6d} {size:12d}  "
            f"{longest.name} / {widest.name} ({Path(path).name} longest file)"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every kernel")
    parser.add_argument("--check", action="store_true", help="exit 1 if a part is over bounds")
    args = parser.parse_args(argv)
    measured = parts()
    print(summary(measured))
    every = [k for p in measured for k in p.kernels]
    shown = sorted(every, key=lambda k: -k.lines)
    print(f"\n{'kernel':<55} {'lines':>5} {'args':>4} doc  short parameter names")
    for k in shown if args.all else shown[:12]:
        short = ", ".join(p for p in k.params if len(p) < SHORT)
        print(
            f"{k.where + ':' + k.name:<55} {k.lines:5d} {k.args:4d} "
            f"{'yes' if k.docstring else 'no ':3}  {short}"
        )
    files = core_files()
    path, size = max(files.items(), key=lambda item: item[1])
    print(f"\ncores ({', '.join(CORES)}): {len(files)} files, the longest {path} ({size} lines)")
    if args.check:
        problems = [line for p in measured if p.name in CHECKED for line in p.problems()]
        problems += long_core_files()
        sys.stderr.writelines(f"{line}\n" for line in problems)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
