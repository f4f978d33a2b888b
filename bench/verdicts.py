"""Verdict accuracy: random virtual-table matches, replayed, against their intended verdicts.

For every seed, plays a random match (``simulate --seed S --minutes M
--sensors X --capture C --truth T``) on each sensor set and replays the
capture (``replay C``), in memory through the same functions those commands
call (:func:`hil_tests.accuracy.play`), so the verdicts are exactly
``replay``'s.  The matches run in parallel, one per core by default;
progress goes to stderr every few seconds.

    python bench/verdicts.py                                   # seeds 1-20, 10 min, every set
    python bench/verdicts.py --seeds 1-20 --sensors full --jobs 2
    python bench/verdicts.py --seeds 3,4,11-16 --minutes 10 --sensors middle,minimum --detail

Printed per sensor set: the confusion table of intended against given
verdicts (legal, foul, referee, none), a per-rule table (for each foul
item: shots it was intended on, and whether the replay gave a foul with
it, a foul without it, legal, referee or nothing; and ``false``: shots it
was given on that the truth does not have), then the counts, then every
miss (seed, shot, intended verdict, given verdict and its reason).
``--detail`` adds each miss's events, truth and replay, in ms from the
shot's start.

What is compared (docs/verdicts.md):

* **Intended**: the truth file's verdict line of the shot on the full set;
  on the middle and minimum sets, the verdict those sensors must give,
  derived from it by RULES.md's sensor table as the HIL corpus derives it
  (``referee`` where they cannot decide).
* **Equal**: the same ``verdict`` (legal/foul/referee), the same *set* of
  ``rules``, and for a legal shot the same ``satisfied`` clause (EVENTS.md
  verdict lines; early announcements dropped, the shot's final line kept).
* **Shots** are matched by time, not number: a truth shot is the replay's
  shot whose ``shot_start`` is nearest in hub time (within 100 ms, one to
  one); a verdict outside a shot (item 17) by its ``t_us`` (within 1 s).
  A truth shot without a replay verdict is *missing*, a replay verdict
  without a truth shot *extra*.
* **False foul**: a rule of a given foul that the truth's verdict does not
  list.  **Missed foul**: a rule of an intended foul that a decided replay
  verdict (legal or foul) does not list.  **Clause difference**: legal
  either way, another ``satisfied``.  **Contradicts the truth**: a false
  foul, or a legal verdict over a foul this set could have seen.

Exit status 0, whatever the accuracy; 2 for unusable arguments (one line).
"""

from __future__ import annotations

import argparse
import sys
import time

from hil_tests.accuracy import (
    SENSOR_SETS,
    Played,
    Row,
    Tally,
    brief,
    cores,
    play_many,
)

HEARTBEAT_S = 3.0


class BadArguments(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadArguments(message)


def seed_list(text: str) -> list[int]:
    """``1-20``, ``3,4,11-16``: the seeds, in order, each once."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if dash else (int(part), int(part))
        except ValueError:
            raise BadArguments(f"--seeds {text}: {part!r} is not a seed or a range a-b") from None
        if first < 0 or last < first:
            raise BadArguments(f"--seeds {text}: {part!r} is not a range of seeds >= 0")
        seeds += [s for s in range(first, last + 1) if s not in seeds]
    return seeds


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(prog="bench/verdicts.py", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-20", help="seeds: 1-20, 3,4,11-16 (default 1-20)")
    parser.add_argument("--minutes", type=float, default=10.0, help="match length (default 10)")
    parser.add_argument(
        "--sensors",
        default=",".join(SENSOR_SETS),
        help="sensor sets, comma-separated (default full,middle,minimum)",
    )
    parser.add_argument(
        "--jobs", type=int, default=cores(), help="matches at a time (default: cores)"
    )
    parser.add_argument(
        "--detail", action="store_true", help="each miss's events, truth and replay"
    )
    parser.add_argument(
        "--physics",
        choices=("table", "pooltool"),
        default="table",
        help="the virtual table's own physics (default) or pooltool's, an independent engine "
        "(optional extra: pip install -e '.[pooltool]')",
    )
    parser.add_argument(
        "--frame-shots",
        type=int,
        default=None,
        help="end each frame after this many shots after its break (more breaks a match)",
    )
    args = parser.parse_args(argv)
    args.seeds = seed_list(args.seeds)
    if not args.seeds:
        raise BadArguments("--seeds: no seed given")
    if not args.minutes > 0:
        raise BadArguments(f"--minutes {args.minutes}: must be positive")
    if args.jobs < 1:
        raise BadArguments(f"--jobs {args.jobs}: must be at least 1")
    if args.frame_shots is not None and args.frame_shots < 0:
        raise BadArguments(f"--frame-shots {args.frame_shots}: must be 0 or more")
    sets = [s.strip() for s in args.sensors.split(",") if s.strip()]
    bad = [s for s in sets if s not in SENSOR_SETS]
    if bad or not sets:
        raise BadArguments(f"--sensors {args.sensors}: each one of {', '.join(SENSOR_SETS)}")
    args.sensors = [s for s in SENSOR_SETS if s in sets]
    return args


class Progress:
    """One stderr line per stage of a match, and a line every few seconds while none comes."""

    def __init__(self, total: int) -> None:
        self.t0 = time.monotonic()
        self.last = self.t0
        self.total = total
        self.done = 0
        self.stage: dict[int, tuple[str, float]] = {}

    def __call__(self, seed: int | None, stage: str) -> None:
        now = time.monotonic()
        if seed is None:
            if now - self.last < HEARTBEAT_S:
                return
            running = ", ".join(
                f"seed {s} {st} {now - t:.0f}s" for s, (st, t) in sorted(self.stage.items())
            )
            self._say(now, f"{self.done}/{self.total} matches done; running: {running or '-'}")
            return
        if stage == "done":
            self.done += 1
            self.stage.pop(seed, None)
            self._say(now, f"seed {seed} done ({self.done}/{self.total})")
        else:
            self.stage[seed] = (stage, now)
            self._say(now, f"seed {seed}: {stage}")

    def _say(self, now: float, text: str) -> None:
        sys.stderr.write(f"[{now - self.t0:6.1f}s] {text}\n")
        sys.stderr.flush()
        self.last = now


def report(played: list[Played], sets: list[str], detail: bool) -> str:
    out = []
    failed = [p for p in played if p.error]
    shots = sum(p.shots for p in played if not p.error)
    out.append(
        f"{len(played)} matches x {played[0].minutes:g} min, seeds "
        f"{','.join(str(p.seed) for p in played)}: {shots} shots played"
    )
    for p in failed:
        out.append(f"seed {p.seed}: NOT SCORED: {p.error}")
    for sensors in sets:
        tally = Tally.of(r for p in played for r in p.rows if r.sensors == sensors)
        out.append("")
        out.append(tally.table(f"{sensors}: "))
        out.append(decided_breaks(tally.rows))
        misses = tally.misses
        out.append(f"  misses ({len(misses)}):" if misses else "  misses: none")
        for row in sorted(misses, key=lambda r: (r.seed, r.t_us)):
            out.append(f"    {row.describe()}")
            if detail:
                match = next(p for p in played if p.seed == row.seed)
                truth, ours = match.detail.get((sensors, row.t_us), ([], []))
                out.append(f"      truth:  {brief(truth)}")
                out.append(f"      replay: {brief(ours)}")
    return "\n".join(out)


def decided_breaks(rows: list[Row]) -> str:
    """Issue 28's figures: breaks the replay decided (legal or foul, not ``referee``) and
    clear shots (this set must give legal or foul) given exactly that verdict."""
    breaks = [r for r in rows if r.is_break]
    decided = sum(r.got is not None and r.got["verdict"] in ("legal", "foul") for r in breaks)
    clear = [
        r for r in rows if r.expected is not None and r.expected["verdict"] in ("legal", "foul")
    ]
    equal = sum(r.equal for r in clear)
    return (
        f"  breaks decided: {decided} of {len(breaks)} ({decided / max(len(breaks), 1):.1%}); "
        f"clear shots equal: {equal} of {len(clear)} ({equal / max(len(clear), 1):.1%})"
    )


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv)
    except BadArguments as exc:
        sys.stderr.write(f"bench/verdicts.py: {exc}\n")
        return 2
    progress = Progress(len(args.seeds))
    sys.stderr.write(
        f"{len(args.seeds)} matches x {args.minutes:g} min on {','.join(args.sensors)}, "
        f"{min(args.jobs, len(args.seeds))} at a time (a cold numba cache compiles first, ~1.5 min)\n"
    )
    played = play_many(
        args.seeds, args.minutes, args.sensors, args.jobs, progress, args.physics, args.frame_shots
    )
    sys.stdout.write(report(played, args.sensors, args.detail) + "\n")
    sys.stderr.write(f"[{time.monotonic() - progress.t0:6.1f}s] finished\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
