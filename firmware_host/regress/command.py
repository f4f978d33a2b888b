"""``firmware-host hil regress``: the options checked, the cluster joined, the run, its files.

Everything a user can get wrong is said in one line before a worker starts
(exit 2): a corpus with no capture, a baseline that is not one, an ``OUT``
holding another run, a ``--workers`` with ``--scheduler``, Dask missing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from ..cli.args import UsageError, rules_config

RUN_FILE = "run.json"  # what the run compares with, so --resume continues the same run


def _say(text: str) -> None:
    sys.stderr.write(f"firmware-host hil regress: {text}\n")


def _check_out(out: Path, settings: dict[str, Any], resume: bool) -> None:
    from .results import batch_files

    stored = out / RUN_FILE
    if batch_files(out) and not resume:
        raise UsageError(f"-o {out}: holds an earlier run (--resume continues it, or pick another)")
    if resume and stored.exists():
        earlier = json.loads(stored.read_text())
        if earlier != settings:
            changed = sorted(k for k in settings if earlier.get(k) != settings[k])
            raise UsageError(
                f"--resume: {out} was a run with other settings ({', '.join(changed)})"
            )
    out.mkdir(parents=True, exist_ok=True)
    stored.write_text(json.dumps(settings, indent=1) + "\n")


def run_regress(args: argparse.Namespace) -> int:
    try:
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ModuleNotFoundError as exc:
        raise UsageError(f"hil regress needs {exc.name}: pip install -e '.[regress]'") from None
    from dataclasses import asdict

    from .against import AgainstError, interpreter
    from .baseline import BaselineError, stored
    from .corpus import CorpusError, find_recordings
    from .results import done_recordings
    from .run import Plan

    if args.output is None:
        raise UsageError("-o OUT: where to write the results is needed")
    if args.scheduler and args.workers:
        raise UsageError("--workers is for the local cluster; a scheduler has its own workers")
    out = Path(args.output)
    rules = rules_config(args)
    try:
        recordings = find_recordings(args.corpus)
        python = interpreter(args.against, say=_say) if args.against else None
        base = None if python else stored(args.baseline)
    except (CorpusError, BaselineError, AgainstError) as exc:
        raise UsageError(str(exc)) from None
    against = f"{args.against} (run by {python})" if python else base.describe  # type: ignore[union-attr]
    settings = {"baseline": against, "rules": asdict(rules)}
    _check_out(out, settings, args.resume)
    done = done_recordings(out) if args.resume else {}
    todo = [r for r in recordings if r.name not in done]
    if done:
        _say(f"resuming: {len(done)} recordings done, {len(todo)} to go")
    plan = Plan(todo, rules, out, stored=base.verdicts if base else None, python=python)
    outcome = _on_cluster(args, plan, against, out)
    return 1 if outcome else 0


def _on_cluster(args: argparse.Namespace, plan: Any, against: str, out: Path) -> bool:
    """Run, summarise, report; True if some recording failed."""
    from .cluster import SAMPLE_BYTES, VersionError, connect, prepare
    from .corpus import filesystem
    from .progress import Progress
    from .report import summary, summary_text
    from .results import change_counts, done_recordings
    from .run import replay_all, write_report

    sample = b""
    if plan.recordings:
        fs, path = filesystem(plan.recordings[0].parts[0].url)
        with fs.open(path, "rb") as f:
            sample = f.read(SAMPLE_BYTES)
    # Dask's own INFO lines (the in-process scheduler's) only with -v
    logging.getLogger("distributed").setLevel(logging.INFO if args.verbose else logging.WARNING)
    with connect(args.scheduler, args.workers, args.memory_limit) as client:
        try:
            threads = prepare(client, sample)
        except VersionError as exc:
            raise UsageError(str(exc)) from None
        parts = sum(len(r.parts) for r in plan.recordings)
        progress = Progress(parts, sum(r.size for r in plan.recordings))
        try:
            outcome = replay_all(client, plan, threads, progress)
        finally:
            progress.close()
        shots, kinds = change_counts(out)
        figures = summary(done_recordings(out), kinds, shots, outcome.failed, against)
        drawn = write_report(client, out, figures, args.report_limit)
    (out / "summary.json").write_text(json.dumps(figures, indent=1) + "\n")
    text = summary_text(figures)
    more = f" (the first {drawn})" if drawn < figures["changed"] else ""
    sys.stdout.write(text + f"report: {out / 'report.html'}{more}\n")
    return bool(outcome.failed)
