"""The capture commands' output, this checkout against a reference run: byte for byte.

Streaming ``events``, ``replay``, ``stats`` and ``decode`` in chunks (docs/memory.md)
must not change one byte they write.  This runs every command (and its JSON
form) on the HIL corpus, the README's hour (``bench/fusion.py``'s one-hour
full-sensor match) and a busy hour (``bench/busy.py``), all in this one
process (``firmware_host.cli.main``: no interpreter start per run), and keeps
a SHA-256 of each run's stdout, stderr and exit status.

    python bench/stream_cmp.py --save REF.json     # on the reference (main's checkout)
    python bench/stream_cmp.py --against REF.json  # here: every run must match

``--quick`` leaves out the two hours (the corpus alone, a few minutes), ``--hours``
the corpus.  Two saved runs compare with ``cmp`` (the same keys, in order).
Exit status 1 when a run differs, naming it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

COMMANDS = (
    ("events",),
    ("replay",),
    ("replay", "--events"),
    ("stats",),
    ("stats", "--json"),
    ("decode",),
    ("decode", "--json"),
)


def captures(quick: bool, hours: bool) -> list[Path]:
    found = [] if hours else sorted((ROOT / "hil_tests" / "corpus").glob("*.bin"))
    if not quick:
        from busy import busy_capture
        from fusion import capture

        found += [capture(60.0, 1)[0], busy_capture(60.0, 1)[0]]
    return found


class _Kept(io.BytesIO):
    """stdout's bytes, still there after the command closed its stream."""

    def close(self) -> None:
        pass


def run_one(argv: list[str]) -> dict[str, object]:
    """One command in this process; the digests of what it wrote and its status."""
    from firmware_host.cli import main

    out, err = _Kept(), io.StringIO()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", newline="")
    sys.stderr = err
    try:
        status = main(argv)
        sys.stdout.flush()
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    return {
        "status": status,
        "stdout": hashlib.sha256(out.getvalue()).hexdigest(),
        "stdout_bytes": len(out.getvalue()),
        "stderr": hashlib.sha256(err.getvalue().encode()).hexdigest(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--save", type=Path, metavar="REF.json")
    which.add_argument("--against", type=Path, metavar="REF.json")
    parser.add_argument("--quick", action="store_true", help="the HIL corpus only")
    parser.add_argument("--hours", action="store_true", help="the two hours only")
    args = parser.parse_args()
    reference = json.loads(args.against.read_text()) if args.against else {}
    results: dict[str, object] = {}
    differ = 0
    start = time.monotonic()
    for capture in captures(args.quick, args.hours):
        for command in COMMANDS:
            key = f"{' '.join(command)} {capture.name}"
            results[key] = got = run_one([*command, str(capture)])
            if args.against and key in reference and reference[key] != got:
                differ += 1
                print(f"DIFFERS: {key}: {reference[key]} here {got}", file=sys.stderr)
        print(f"{time.monotonic() - start:6.0f} s  {capture.name}", file=sys.stderr, flush=True)
    if args.save:
        args.save.write_text(json.dumps(results, indent=1) + "\n")
        print(f"{len(results)} runs saved in {args.save}")
        return 0
    missing = [key for key in results if key not in reference]
    print(f"{len(results)} runs, {differ} differ, {len(missing)} not in the reference")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
