"""The numba kernels' shape: how long each jitted function is, how many arguments it
takes, and whether it says what it decides (issue 9: a newcomer must be able to read
them).  Read from the source with :mod:`ast`, nothing compiled.

    python bench/kernel_shape.py            # the summary and the 12 longest
    python bench/kernel_shape.py --all      # every kernel

Prints the number of kernels, the longest (lines, decorator excluded), the largest
argument count, the kernels without a docstring, and a table.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("firmware_host", "protocol")


@dataclass
class Kernel:
    where: str
    name: str
    lines: int
    args: int
    docstring: bool


def _jitted(node: ast.FunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit"):
            return True
    return False


def kernels() -> list[Kernel]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and _jitted(node):
                    a = node.args
                    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                    found.append(
                        Kernel(
                            str(path.relative_to(ROOT)),
                            node.name,
                            (node.end_lineno or node.lineno) - node.lineno + 1,
                            count,
                            ast.get_docstring(node) is not None,
                        )
                    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every kernel")
    args = parser.parse_args()
    found = kernels()
    longest = max(found, key=lambda k: k.lines)
    widest = max(found, key=lambda k: k.args)
    bare = [k for k in found if not k.docstring]
    print(f"kernels: {len(found)}")
    print(f"longest: {longest.lines} lines ({longest.where}:{longest.name})")
    print(f"most arguments: {widest.args} ({widest.where}:{widest.name})")
    print(f"over 80 lines: {sum(k.lines > 80 for k in found)}")
    print(
        f"without a docstring: {len(bare)}"
        + (f" ({', '.join(k.name for k in bare)})" if bare else "")
    )
    shown = sorted(found, key=lambda k: -k.lines)
    print(f"\n{'kernel':<55} {'lines':>5} {'args':>4} doc")
    for k in shown if args.all else shown[:12]:
        print(
            f"{k.where + ':' + k.name:<55} {k.lines:5d} {k.args:4d} {'yes' if k.docstring else 'no'}"
        )


if __name__ == "__main__":
    main()
