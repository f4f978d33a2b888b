"""Regenerate the HIL corpus: virtual-table captures and the verdicts each must give.

    python -m hil_tests.make_corpus --out /tmp/corpus     # every case into a scratch directory
    python -m hil_tests.make_corpus --replace-shipped     # regenerate hil_tests/corpus/ itself
    python -m hil_tests.make_corpus --out D --only push   # cases whose name starts with "push"
    python -m hil_tests.make_corpus --out D --xfail-failing  # also mark cases the pipeline gets wrong

It writes only its built-in cases (the virtual table's scenarios); a lab's
recording is added with ``firmware-host hil add CAPTURE`` instead.  The
shipped corpus is rewritten only when ``--replace-shipped`` says so.

Deterministic: the same scenario, seed and sensor set give the same bytes.
The expectation of a full-sensor capture is the ground truth's intended
verdict per shot; for the minimum and middle sets it is derived from that
verdict and the true events by RULES.md's sensor table (:func:`limited`), so
``referee`` appears exactly where those sensors cannot decide.  The rules
engine is never asked: an expectation it produced would prove nothing.

``--xfail-failing`` replays every case and writes, into the expectation of
each one the pipeline disagrees with, ``"xfail": "<first shot that differs>"``;
the expected verdicts themselves are never changed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware_host.virtual_table.physics_verdicts import NEAR_GAP_MM
from rules.config import RulesConfig

from .verdicts import Line, compare, decided

CORPUS = Path(__file__).resolve().parent / "corpus"
RESULT_ITEM = {True: "12.1", False: "20"}  # the shot's result: a break's item or item 20
POT_CLAUSE = {True: "12.1(1)", False: "20(1)"}
CERTAIN = {  # fouls each smaller set decides (RULES.md's table); the rest is tracker-only
    "minimum": {"18"},
    "middle": {"18", "19.1"},
}
# Fouls a smaller set sees a trace of but cannot decide: open (RULES.md's table, "14.2:
# referee | referee | yes": without a tracker the end of a shot is a quiet-period estimate).
OPEN = {"minimum": {"14.2"}, "middle": {"14.2"}}
# Without positions a first contact within ``near_contact_us`` of the stroke may be a
# touching ball (docs/rules.md, 19.2 on the middle set); the clicks and the tip carry
# onset jitter (ICD §7: 30 and 10 µs) and the clock mapping its own error, so a truth
# within this much past the bound may be read inside it.
NEAR_CONTACT_US = RulesConfig().near_contact_us
NEAR_CONTACT_SLACK_US = 500


@dataclass(frozen=True)
class Case:
    """One capture of the corpus: a named scenario, or a random match of ``minutes``."""

    scenario: str | None
    sensors: str = "full"
    seed: int = 0
    minutes: float | None = None

    @property
    def name(self) -> str:
        match = self.scenario or f"random_s{self.seed}_{self.minutes:g}min"
        return f"{match}.{self.sensors}"

    @property
    def command(self) -> str:
        """The same capture from the command line."""
        match = f"--scenario {self.scenario}" if self.scenario else f"--minutes {self.minutes:g}"
        return (
            f"firmware-host simulate --capture {self.name}.bin {match} "
            f"--seed {self.seed} --sensors {self.sensors}"
        )


# Where the sensor set changes the verdict: every decision of RULES.md's table once.
SMALL_SET_SCENARIOS = (
    "break_12_1_1",  # pot after the first contact: middle decides it
    "break_12_1_2",  # cushions by ball: referee below full
    "break_illegal",
    "coloured_outside_11_3",  # 11.3: tracker only
    "push",  # 19.1: middle decides by contact time
    "push_19_2_45deg",  # 19.2: tracker only
    "double_hit",  # 18: every set
    "early_shot_14_2",  # 14.2: every set
    "item20_1",
    "item20_2a",
    "item20_2a_fail",
    "ball_nudged_17",  # 17: tracker only
)


def cases() -> list[Case]:
    """The whole corpus, in a fixed order."""
    from firmware_host.virtual_table.scenarios import SCENARIOS

    named = sorted(name for name in SCENARIOS if name != "random")  # "random": 3 min, too big
    return [
        *(Case(name) for name in named),
        *(Case(name, sensors) for sensors in ("middle", "minimum") for name in SMALL_SET_SCENARIOS),
        # a full-sensor minute is ~1.2 MB (the tracker): half a minute there, more on the others
        Case(None, "full", seed=1, minutes=0.5),
        Case(None, "middle", seed=1, minutes=1.0),
        Case(None, "minimum", seed=1, minutes=1.0),
        Case(None, "middle", seed=2, minutes=1.0),
    ]


def limited(
    intended: Line,
    shot_events: list[Line],
    *,
    is_break: bool,
    sensors: str,
    ball_mm: float = 68.0,
    false_click: bool = False,
    early: bool = False,
) -> Line | None:
    """The verdict a smaller sensor set must give for a shot whose full-set verdict is ``intended``.

    RULES.md: without contact times (minimum) push and result are open; with
    clicks (middle) a push is timed, a pot after the first contact is legal,
    no contact at all is a foul and the rest of the result is open; 19.2, 17
    and 11.3 need the tracker, and 14.2 is the referee's on both (the end of
    a shot is an estimate).  What the intended verdict itself leaves open (the
    result of a shot a new stroke cut short) stays open.  A certain foul wins
    over open items.  A verdict outside a shot (item 17 off a ``ball_moved``)
    needs the tracker: None.

    ``false_click``: the acoustic node sent a false click (ICD §7: about one a
    minute) within the shot as the middle set delimits it.  Without a tracker
    nothing tells it from a contact, so "no contact at all" is not certain
    then: the result is open.  ``early``: the stroke came before that set's
    estimate of the previous shot's end (a false click in the pause pushes
    it on), so whether every ball had stopped is open: 14.2 (docs/hil.md).
    """
    if sensors == "full":
        if intended["verdict"] != "foul" or "19.2" not in intended["rules"]:
            return intended
        if not _stroke_unreadable(shot_events, ball_mm):
            return intended
        # docs/rules.md: the cue ball against a cushion or touching two balls, no reading
        # of the stroke is sound, so the engine never convicts on 19.2 there; a certain
        # foul still wins
        others = set(intended["rules"]) - {"19.2"}
        if others:
            return _verdict(intended["shot"], "foul", others)
        return _verdict(intended["shot"], "referee", {"19.2"})
    if intended["shot"] is None:
        return None
    fouls = set(intended["rules"]) if intended["verdict"] == "foul" else set()
    certain = fouls & CERTAIN[sensors]
    result = RESULT_ITEM[is_break]
    open_ = fouls & OPEN[sensors]
    if early:
        open_.add("14.2")
    if intended["verdict"] == "referee":  # its result item as this set numbers the shot
        open_ |= {result if r in RESULT_ITEM.values() else r for r in intended["rules"]}
    satisfied = None
    if sensors == "minimum":
        open_ |= {"19.1", result}
    else:
        contacts = [e for e in shot_events if e["type"] == "ball_contact"]
        if contacts and "19.1" not in fouls and _case_19_2(shot_events, ball_mm):
            open_.add("19.2")
        pot = contacts and any(
            e["type"] == "pocket" and e["t_us"] > contacts[0]["t_us"] for e in shot_events
        )
        if result in open_:  # cut short before any clause: open whatever the clicks say
            satisfied = None
        elif not contacts:
            (open_ if false_click else certain).add(result)
        elif pot:
            satisfied = POT_CLAUSE[is_break]
        else:
            open_.add(result)
    if certain:
        return _verdict(intended["shot"], "foul", certain)
    if open_:
        return _verdict(intended["shot"], "referee", open_)
    return _verdict(intended["shot"], "legal", set(), satisfied)


def _first_contact(shot_events: list[Line]) -> tuple[Line, Line] | None:
    """The shot's start and the cue ball's first ball contact, if it has one."""
    start = next((e for e in shot_events if e["type"] == "shot_start"), {})
    cue = start.get("cue_ball")
    first = next(
        (
            e
            for e in shot_events
            if e["type"] == "ball_contact" and (cue is None or cue in e["balls"])
        ),
        None,
    )
    return None if first is None else (start, first)


def _stroke_unreadable(shot_events: list[Line], ball_mm: float) -> bool:
    """The cue ball starts against a cushion, or within ``NEAR_GAP_MM`` of a ball besides
    the one it first meets (the truth's positions): 19.2 is the referee's there
    (docs/rules.md)."""
    found = _first_contact(shot_events)
    if found is None:
        return False
    start, first = found
    cue = start.get("cue_ball")
    balls = start.get("balls") or {}
    if str(cue) not in balls:
        return False
    if (start.get("frozen") or {}).get(str(cue)):
        return True
    return any(
        math.dist(balls[str(cue)], xy) - ball_mm < NEAR_GAP_MM
        for b, xy in balls.items()
        if int(b) != cue and int(b) not in first["balls"]
    )


def _case_19_2(shot_events: list[Line], ball_mm: float) -> bool:
    """19.2's case, which only the tracker decides: the cue ball's first contact is with a
    ball touching or nearly touching it at the start (the truth's positions), whatever
    the tip contact's duration; without positions, a tip still on the cue ball at that
    contact that the truth did not call a push (19.1) tells the same.  A set without
    the tracker cannot tell a near ball from a far one met as soon (its only handle is
    the time, docs/rules.md), so a contact that soon is its case too."""
    found = _first_contact(shot_events)
    if found is None:
        return False
    start, first = found
    t0 = start.get("t_us")
    if t0 is not None and first["t_us"] - t0 <= NEAR_CONTACT_US + NEAR_CONTACT_SLACK_US:
        return True
    cue = start.get("cue_ball")
    balls = start.get("balls") or {}
    a, b = first["balls"]
    other = b if a == cue else a
    if str(cue) in balls and str(other) in balls:
        return math.dist(balls[str(cue)], balls[str(other)]) - ball_mm < NEAR_GAP_MM
    tip = next((e for e in shot_events if e["type"] == "cue_contact"), None)
    return tip is not None and tip["t_us"] + tip["duration_us"] >= first["t_us"]


def _verdict(shot: int | None, verdict: str, rules: set[str], satisfied: str | None = None) -> Line:
    # rules-text order: every item 11.3 ... 20 sorts as a string in that order
    return {"shot": shot, "verdict": verdict, "rules": sorted(rules), "satisfied": satisfied}


# What a set without the tracker senses of a shot (its quiet-period end runs from the last).
SENSED = {
    "middle": frozenset({"cue_contact", "ball_contact", "cushion", "pocket", "line_cross"}),
    "minimum": frozenset({"cue_contact", "cushion", "pocket"}),
}


@dataclass(frozen=True)
class _Seen:
    """A shot as a set without the tracker delimits it (RULES.md: its end is an estimate)."""

    end_us: int  # the quiet-period end: FusionParams.quiet_us after the last activity
    false_click: bool  # a false click heard inside it, before the next stroke
    early: bool  # its stroke came before the previous shot's estimated end


def _as_seen(by_shot: dict[int, list[Line]], sensors: str, clicks: list[int]) -> dict[int, _Seen]:
    """Per shot: where the set's quiet-period estimate ends it, and whether a false click
    fell inside.  A click is activity too, so it pushes the estimate on; a stroke before
    the previous shot's estimate has come is an early stroke to that set (14.2 open).
    The estimate ends at the shot's first quiet period, as the fusion's ``quiet_end``
    does: a ball that rolls on unheard for longer and then drops is not in the shot."""
    from firmware_host.fusion.events import FusionParams

    quiet = FusionParams().quiet_us
    starts = sorted(
        (e["t_us"], shot) for shot, events in by_shot.items() for e in events
        if e.get("type") == "shot_start"
    )  # fmt: skip
    out: dict[int, _Seen] = {}
    prev_end: int | None = None
    for k, (t0, shot) in enumerate(starts):
        upto = starts[k + 1][0] if k + 1 < len(starts) else None
        sensed = [(e["t_us"], False) for e in by_shot[shot] if e.get("type") in SENSED[sensors]]
        noise = [(t, True) for t in clicks if t >= t0 and (upto is None or t < upto)]
        end, heard = t0 + quiet, False
        for t, false in sorted(sensed + noise):
            if t > end:  # the first quiet period ends the shot; what comes later is not in it
                break
            end, heard = max(end, t + quiet), heard or false
        out[shot] = _Seen(end, heard, prev_end is not None and t0 < prev_end)
        prev_end = end
    return out


def expected_verdicts(
    truth: list[Line], sensors: str, false_clicks_us: Sequence[int] = ()
) -> list[Line]:
    """Per shot, what the corpus expects from a capture of this truth on this sensor set.

    ``false_clicks_us``: hub times of the false clicks in the capture
    (:func:`false_clicks`), which only the sensor model knows.
    """
    by_shot: dict[int, list[Line]] = {}
    for line in truth:
        if line.get("kind") != "verdict" and line.get("shot") is not None:
            by_shot.setdefault(line["shot"], []).append(line)
    seen = _as_seen(by_shot, sensors, sorted(false_clicks_us)) if sensors in SENSED else {}
    breaks: set[int] = set()
    after_boot = False
    out = []
    ball_mm = 68.0
    for line in truth:
        if line.get("type") == "boot":
            after_boot = True
            ball_mm = (line.get("table") or {}).get("ball_mm", ball_mm)
        elif line.get("type") == "shot_start":
            # without a tracker the first shot after a boot is a break; the full set reads the layout
            if after_boot:
                breaks.add(line["shot"])
            after_boot = False
        if line.get("kind") == "verdict":
            view = seen.get(line["shot"]) if line["shot"] is not None else None
            events = by_shot.get(line["shot"], []) if line["shot"] is not None else []
            if view is not None:
                events = [e for e in events if e["t_us"] <= view.end_us]
            got = limited(
                decided(line),
                events,
                is_break=line["shot"] in breaks,
                sensors=sensors,
                ball_mm=ball_mm,
                false_click=view is not None and view.false_click,
                early=view is not None and view.early,
            )
            if got is not None:
                out.append(got)
    return out


def false_clicks(wire: Any) -> list[int]:
    """Hub times of the false clicks the acoustic node sent that reached the capture."""
    from firmware_host.virtual_table.sensors import FALSE_CLICK

    rows = wire.truth[(wire.truth["note"] == FALSE_CLICK) & (wire.truth["offset"] >= 0)]
    return sorted(round(float(t)) for t in rows["event_hub_us"])


def build(case: Case, out_dir: Path, match: Any) -> dict[str, Any]:
    """Write ``NAME.bin`` and return its expectation."""
    from firmware_host.virtual_table.capture import truth_lines, write_capture
    from firmware_host.virtual_table.hub import HubConfig, build_wire

    wire = build_wire(match, HubConfig(sensors=case.sensors, seed=case.seed))
    with open(out_dir / f"{case.name}.bin", "wb") as out:
        write_capture(wire, out)
    return {
        "capture": f"{case.name}.bin",
        "scenario": case.scenario,
        "seed": case.seed,
        "minutes": case.minutes,
        "sensors": case.sensors,
        "command": case.command,
        "verdicts": expected_verdicts(truth_lines(match, wire), case.sensors, false_clicks(wire)),
    }


def mark_xfail(expectation: dict[str, Any], data: bytes) -> str | None:
    """Replay the capture; the first shot the pipeline gets wrong, or None."""
    from firmware_host.pipeline import replay

    cmp = compare(expectation["verdicts"], replay(data).lines)
    return None if cmp.ok else cmp.first_difference()


def dump(expectation: dict[str, Any]) -> str:
    """JSON with one verdict a line, so a diff of the corpus shows which shot changed."""
    head = {k: v for k, v in expectation.items() if k != "verdicts"}
    lines = ",\n".join(f"  {json.dumps(v)}" for v in expectation["verdicts"])
    body = json.dumps(head, indent=1)[:-2]
    return f'{body},\n "verdicts": [\n{lines}\n ]\n}}\n'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hil_tests.make_corpus", description=__doc__)
    parser.add_argument(
        "--out",
        type=Path,
        default=CORPUS,
        help="corpus directory to write (default: the shipped hil_tests/corpus, "
        "which needs --replace-shipped)",
    )
    parser.add_argument(
        "--replace-shipped",
        action="store_true",
        help="allow rewriting the shipped corpus (after a change to the virtual table)",
    )
    parser.add_argument("--only", nargs="*", default=[], help="case names starting with these")
    parser.add_argument(
        "--xfail-failing", action="store_true", help="mark cases the pipeline disagrees with"
    )
    args = parser.parse_args(argv)
    if args.out.resolve() == CORPUS and not args.replace_shipped:
        parser.error(
            f"--out {args.out}: the shipped corpus; --replace-shipped regenerates it, "
            "--out DIR writes a scratch copy"
        )

    from firmware_host.virtual_table.scenarios import SCENARIOS, random_match

    args.out.mkdir(parents=True, exist_ok=True)
    matches: dict[tuple[str | None, int, float | None], Any] = {}
    for case in cases():
        if args.only and not case.name.startswith(tuple(args.only)):
            continue
        key = (case.scenario, case.seed, case.minutes)
        if key not in matches:
            matches[key] = (
                SCENARIOS[case.scenario]()
                if case.scenario
                else random_match(seed=case.seed, minutes=case.minutes or 1.0)
            )
        expectation = build(case, args.out, matches[key])
        if args.xfail_failing:
            reason = mark_xfail(expectation, (args.out / expectation["capture"]).read_bytes())
            if reason:
                expectation["xfail"] = reason
                sys.stderr.write(f"{case.name}: xfail: {reason}\n")
        path = args.out / f"{case.name}.expect.json"
        path.write_text(dump(expectation), encoding="utf-8")
        sys.stderr.write(f"{path.name}: {len(expectation['verdicts'])} verdicts\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
