"""Verdict accuracy on random virtual-table matches: replay against the intended verdicts.

Pure scoring plus one in-memory runner; ``bench/verdicts.py`` prints it and
``tests/rules/test_verdict_accuracy.py`` asserts on it (docs/verdicts.md).

* :func:`play` is ``simulate --capture --truth`` then ``replay`` without the
  files: the same match, the same :class:`HubConfig` (sensor noise seeded
  with the match seed, no faults, no wrap), the same capture bytes and truth
  lines, and :func:`firmware_host.pipeline.replay` with the default rules
  settings, which is exactly what the ``replay`` command runs.
* The intended verdict of a shot is the truth's verdict line; on the middle
  and minimum sets, the verdict those sensors must give is derived from it
  by :func:`hil_tests.make_corpus.expected_verdicts` (RULES.md's sensor
  table), as the HIL corpus does, told the capture's false clicks
  (:func:`hil_tests.make_corpus.false_clicks`: the middle set cannot tell
  one from a contact).
* **Equal** (:func:`equal`): the same ``verdict`` (legal/foul/referee), the
  same *set* of ``rules``, and for a legal shot the same ``satisfied``
  clause.  ``player``, ``t_us``, ``evidence`` and ``reason`` are not compared.
* **Matching shots** (:func:`rows`): the replay's shot numbers are its own,
  so a truth shot is matched to the replay's shot whose ``shot_start`` is
  nearest in hub time, within :data:`SHOT_TOLERANCE_US`, one to one.  A
  verdict outside any shot (item 17 between shots) is matched the same way
  on its own ``t_us``, within :data:`LOOSE_TOLERANCE_US`.  A truth shot
  left without a replay verdict is *missing*; a replay verdict left without
  a truth shot is *extra*.

>>> rows_ = [Row(1, "full", 5, 5, 0, truth=V("legal", s="20(1)"), expected=V("legal", s="20(1)"),
...              got=V("foul", "17"))]
>>> t = Tally.of(rows_)
>>> t.equal, dict(t.false_fouls), t.legal_called_foul, t.contradictions
(0, {'17': 1}, 1, 1)
"""

from __future__ import annotations

import os
import queue
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .make_corpus import expected_verdicts, false_clicks
from .verdicts import Line, decided, final_verdicts, summary

SENSOR_SETS = ("full", "middle", "minimum")
VERDICTS = ("legal", "foul", "referee")
SHOT_TOLERANCE_US = 100_000  # shot starts are >= 5 s apart in a random match; the tip time is exact
LOOSE_TOLERANCE_US = 1_000_000  # a touched ball between shots: the tracker's first moving frame
RESULT_ITEMS = frozenset({"12.1", "20"})  # the shot's result: a break's item or item 20
# What a set without the tracker cannot even suspect (RULES.md's table: 17, 11.3, 8 are
# tracker-only and leave no trace in the other sensors), so a legal verdict over them is no
# contradiction.  Everything else it cannot decide it must leave to the referee.
UNSEEN = {"full": frozenset(), "middle": frozenset({"17", "11.3", "8"})}
UNSEEN["minimum"] = UNSEEN["middle"]


def V(verdict: str, *rules: str, s: str | None = None, shot: int | None = None) -> Line:
    """A verdict line, short (for examples and tests)."""
    return {"shot": shot, "verdict": verdict, "rules": list(rules), "satisfied": s}


def equal(expected: Line | None, got: Line | None) -> bool:
    """Same decided value, same set of rules, and for a legal shot the same clause."""
    if expected is None or got is None:
        return expected is got
    if expected["verdict"] != got["verdict"]:
        return False
    if set(expected["rules"]) != set(got["rules"]):
        return False
    return expected["verdict"] != "legal" or expected.get("satisfied") == got.get("satisfied")


def _fouls(line: Line | None) -> set[str]:
    return set(line["rules"]) if line is not None and line["verdict"] == "foul" else set()


@dataclass
class Row:
    """One shot (or one verdict outside a shot) of one match on one sensor set.

    ``shot`` is the truth's shot number, ``got_shot`` the replay's (None
    outside a shot, or when that side has no verdict).  ``truth`` is the
    intended verdict from the truth file, ``expected`` what this sensor set
    must give (the truth itself on the full set), ``got`` the replay's final
    verdict line (with its ``reason``).
    """

    seed: int
    sensors: str
    shot: int | None
    got_shot: int | None
    t_us: int
    truth: Line | None
    expected: Line | None
    got: Line | None
    is_break: bool = False  # the truth's shot is a break

    @property
    def equal(self) -> bool:
        return equal(self.expected, self.got)

    def _truth_fouls(self) -> set[str]:
        fouls = _fouls(self.truth)
        if self.sensors != "full" and fouls & RESULT_ITEMS:
            # without tracker and keypad a later frame's break is not known as one: 12.1 reads 20
            fouls |= RESULT_ITEMS
        return fouls

    @property
    def false_fouls(self) -> list[str]:
        """Rules the replay calls a foul that the truth does not have."""
        return sorted(_fouls(self.got) - self._truth_fouls())

    @property
    def missed_fouls(self) -> list[str]:
        """Fouls this set must call that a decided replay verdict (legal or foul) leaves out."""
        if self.got is None or self.got["verdict"] == "referee":
            return []
        return sorted(_fouls(self.expected) - _fouls(self.got))

    @property
    def legal_called_foul(self) -> bool:
        return (
            self.expected is not None
            and self.expected["verdict"] == "legal"
            and self.got is not None
            and self.got["verdict"] == "foul"
        )

    @property
    def referee_call(self) -> bool:
        return self.got is not None and self.got["verdict"] == "referee"

    @property
    def undue_referee(self) -> bool:
        """``referee`` where RULES.md's table says this set decides (always, on the full set)."""
        return self.referee_call and (
            self.expected is None or self.expected["verdict"] != "referee"
        )

    @property
    def clause_differs(self) -> bool:
        return (
            self.expected is not None
            and self.got is not None
            and self.expected["verdict"] == self.got["verdict"] == "legal"
            and self.expected.get("satisfied") != self.got.get("satisfied")
        )

    @property
    def contradicts(self) -> bool:
        """A decided replay verdict the truth refutes.

        A foul the truth does not have, or a legal verdict over a foul this
        set could have seen (not 17/11.3/8 without the tracker).
        """
        if self.got is None or self.got["verdict"] == "referee":
            return False
        if self.got["verdict"] == "foul":
            return bool(self.false_fouls)
        return bool(self._truth_fouls() - UNSEEN[self.sensors])

    def categories(self) -> list[str]:
        """Why a row is not equal, short: ``false 17``, ``missed 19.2``, ``clause``, ..."""
        out = [f"false {r}" for r in self.false_fouls]
        out += [f"missed {r}" for r in self.missed_fouls]
        if self.legal_called_foul:
            out.append("legal called foul")
        if self.undue_referee:
            out.append("undue referee")
        if self.clause_differs:
            out.append("clause")
        if self.got is None:
            out.append("missing")
        if self.expected is None and self.got is not None:
            out.append("extra")
        if not out and not self.equal:
            out.append("other")
        if self.contradicts:
            out.append("CONTRADICTS TRUTH")
        return out

    def describe(self) -> str:
        """``full seed 13 shot 20: intended foul 20, given foul 17,20 (reason) [false 17]``."""
        shot = f"shot {self.shot}" if self.shot is not None else "outside a shot"
        if self.got_shot is not None and self.got_shot != self.shot:
            shot += f" (replay's shot {self.got_shot})"
        intended = summary(self.expected)
        if (
            self.truth is not None
            and self.expected is not None
            and not equal(self.truth, self.expected)
        ):
            intended += f" (truth {summary(self.truth)})"
        reason = (self.got or {}).get("reason", "")
        return (
            f"{self.sensors} seed {self.seed} {shot}: intended {intended}, given {summary(self.got)}"
            + (f" ({reason})" if reason else "")
            + f" [{'; '.join(self.categories())}]"
        )


def _nearest(
    left: list[int], right: list[int], tolerance: int
) -> tuple[dict[int, int], list[int], list[int]]:
    """One-to-one pairs of indices whose times are within tolerance, closest first."""
    cand = sorted(
        (abs(a - b), i, j)
        for i, a in enumerate(left)
        for j, b in enumerate(right)
        if abs(a - b) <= tolerance
    )
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in cand:
        if i not in pairs and j not in used:
            pairs[i] = j
            used.add(j)
    return (
        pairs,
        [i for i in range(len(left)) if i not in pairs],
        [j for j in range(len(right)) if j not in used],
    )


def rows(
    truth: list[Line],
    events: list[Line],
    lines: list[Line],
    sensors: str,
    seed: int = 0,
    false_clicks_us: Sequence[int] = (),
) -> list[Row]:
    """Rows of one replay: truth lines (events and verdicts), the replay's events and lines.

    Truth and replay run on one hub clock here (no reboot in a random match,
    and ``simulate`` does not wrap by default), so times compare directly.
    ``false_clicks_us``: the capture's false clicks (:func:`.make_corpus.false_clicks`),
    for the middle set's expectation.
    """
    starts_t = {e["shot"]: e["t_us"] for e in truth if e.get("type") == "shot_start"}
    starts_g = {e["shot"]: e["t_us"] for e in events if e["type"] == "shot_start"}
    t_shots, g_shots = list(starts_t), list(starts_g)
    pairs, _, _ = _nearest(
        [starts_t[s] for s in t_shots], [starts_g[s] for s in g_shots], SHOT_TOLERANCE_US
    )
    to_got = {t_shots[i]: g_shots[j] for i, j in pairs.items()}

    intended = {v["shot"]: v for v in truth if v.get("kind") == "verdict"}
    expected = {
        v["shot"]: v
        for v in expected_verdicts(truth, sensors, false_clicks_us)
        if v["shot"] is not None
    }
    finals = final_verdicts(lines)
    got: dict[int, Line] = {}
    out: list[Row] = []
    for line in finals:
        if line["shot"] is None:
            continue
        if line["shot"] in got:  # a second final verdict for one shot: extra
            out.append(Row(seed, sensors, None, line["shot"], line["t_us"], None, None, line))
        else:
            got[line["shot"]] = line
    for shot, exp in expected.items():
        g_shot = to_got.get(shot)
        given = got.pop(g_shot) if g_shot in got else None
        t = intended[shot]
        out.append(
            Row(
                seed,
                sensors,
                shot,
                g_shot if given else None,
                t["t_us"],
                decided(t),
                exp,
                given,
                bool(t.get("break")),
            )
        )
    for g_shot, line in got.items():  # the replay's verdicts on shots the truth does not have
        out.append(Row(seed, sensors, None, g_shot, line["t_us"], None, None, line))

    # outside any shot: a touched ball (item 17), tracker only
    loose_t = [v for v in truth if v.get("kind") == "verdict" and v["shot"] is None]
    if sensors != "full":
        loose_t = []  # make_corpus.limited: nothing expected without the tracker
    loose_g = [v for v in finals if v["shot"] is None]
    pairs, left_t, left_g = _nearest(
        [v["t_us"] for v in loose_t], [v["t_us"] for v in loose_g], LOOSE_TOLERANCE_US
    )
    for i, j in pairs.items():
        v = loose_t[i]
        out.append(Row(seed, sensors, None, None, v["t_us"], decided(v), decided(v), loose_g[j]))
    for i in left_t:
        v = loose_t[i]
        out.append(Row(seed, sensors, None, None, v["t_us"], decided(v), decided(v), None))
    for j in left_g:  # a touch the truth does not have
        out.append(Row(seed, sensors, None, None, loose_g[j]["t_us"], None, None, loose_g[j]))
    out.sort(key=lambda r: r.t_us)
    return out


# ---------------------------------------------------------------- tallies


@dataclass
class Tally:
    """Counts over rows of one sensor set (docs/verdicts.md names each)."""

    rows: list[Row] = field(default_factory=list)
    equal: int = 0
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    per_rule: dict[str, Counter[str]] = field(default_factory=dict)
    false_fouls: Counter[str] = field(default_factory=Counter)
    missed_fouls: Counter[str] = field(default_factory=Counter)
    legal_called_foul: int = 0
    referee_calls: int = 0
    undue_referee: int = 0
    clause_differs: int = 0
    missing: int = 0
    extra: int = 0
    contradictions: int = 0

    @classmethod
    def of(cls, rows_: Iterable[Row]) -> Tally:
        t = cls()
        for row in rows_:
            t.add(row)
        return t

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.equal += row.equal
        exp = row.expected["verdict"] if row.expected else "none"
        got = row.got["verdict"] if row.got else "none"
        self.confusion[(exp, got)] += 1
        for rule in _fouls(row.expected):
            c = self.per_rule.setdefault(rule, Counter())
            c["intended"] += 1
            c[_outcome(rule, row.got)] += 1
        for rule in row.false_fouls:
            self.per_rule.setdefault(rule, Counter())["false"] += 1
        self.false_fouls.update(row.false_fouls)
        self.missed_fouls.update(row.missed_fouls)
        self.legal_called_foul += row.legal_called_foul
        self.referee_calls += row.referee_call
        self.undue_referee += row.undue_referee
        self.clause_differs += row.clause_differs
        self.missing += row.expected is not None and row.got is None
        self.extra += row.expected is None and row.got is not None
        self.contradictions += row.contradicts

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def rate(self) -> float:
        return self.equal / self.total if self.total else 1.0

    @property
    def misses(self) -> list[Row]:
        return [row for row in self.rows if not row.equal]

    def table(self, title: str = "") -> str:
        """The confusion table, the per-rule table and the counts, as printed by the bench."""
        out = [f"{title}{self.total} verdicts, equal {self.equal} ({self.rate:.2%})"]
        cols = (*VERDICTS, "none")
        out.append("  intended \\ given " + "".join(f"{c:>9}" for c in cols))
        for exp in cols:
            counts = [self.confusion[(exp, g)] for g in cols]
            if any(counts):
                out.append(f"  {exp:<17}" + "".join(f"{n:>9}" for n in counts))
        rule_cols = ("intended", "caught", "other", "legal", "referee", "none", "false")
        out.append("  per rule          " + "".join(f"{c:>9}" for c in rule_cols))
        for rule in sorted(self.per_rule, key=_rule_order):
            c = self.per_rule[rule]
            out.append(f"  foul {rule:<12}" + "".join(f"{c[k]:>9}" for k in rule_cols))
        out.append(f"  false fouls (a foul the truth does not have): {_counts(self.false_fouls)}")
        out.append(f"  missed fouls (an intended foul not given):    {_counts(self.missed_fouls)}")
        out.append(f"  legal shots called foul: {self.legal_called_foul}")
        out.append(
            f"  referee calls: {self.referee_calls} (where this set can decide: {self.undue_referee})"
        )
        out.append(f"  clause differences (legal either way): {self.clause_differs}")
        out.append(f"  missing verdicts: {self.missing}, extra verdicts: {self.extra}")
        out.append(f"  decided verdicts the truth contradicts: {self.contradictions}")
        return "\n".join(out)


def _outcome(rule: str, got: Line | None) -> str:
    """Per-rule column: given foul with it (caught), foul without it (other), legal, referee, none."""
    if got is None:
        return "none"
    if got["verdict"] == "foul":
        return "caught" if rule in got["rules"] else "other"
    return str(got["verdict"])


def _rule_order(rule: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in rule.split("."))


def _counts(counter: Counter[str]) -> str:
    total = sum(counter.values())
    inner = ", ".join(
        f"{r}: {n}" for r, n in sorted(counter.items(), key=lambda kv: _rule_order(kv[0]))
    )
    return f"{total}" + (f" ({inner})" if inner else "")


# ---------------------------------------------------------------- running a match


@dataclass
class Played:
    """One seed on several sensor sets: the rows, and each miss's events for a closer look."""

    seed: int
    minutes: float
    rows: list[Row]
    shots: int
    error: str | None = None  # the match could not be played or replayed: why
    detail: dict[tuple[str, int], tuple[list[Line], list[Line]]] = field(default_factory=dict)


def play(
    seed: int,
    minutes: float,
    sensor_sets: Iterable[str] = SENSOR_SETS,
    progress: Callable[[str], None] = lambda _: None,
    physics: str = "table",
    frame_shots: int | None = None,
) -> Played:
    """``simulate --seed S --minutes M --sensors X --capture --truth`` then ``replay``, per set.

    The physics is played once; each set gets its own sensor model and hub,
    as ``simulate`` builds them.  ``detail`` keeps, for every row that is
    not equal, the truth's events of that shot and the replay's.
    """
    from firmware_host.pipeline import replay
    from firmware_host.virtual_table.capture import truth_lines
    from firmware_host.virtual_table.hub import HubConfig, build_wire
    from firmware_host.virtual_table.scenarios import random_match

    progress("physics")
    if physics == "pooltool":  # the second physics (issue 28), an optional extra
        from firmware_host.virtual_table.pooltool_table import PooltoolTimeline

        match = random_match(seed, minutes, timeline=PooltoolTimeline, frame_shots=frame_shots)
    else:
        match = random_match(seed=seed, minutes=minutes, frame_shots=frame_shots)
    out = Played(seed, minutes, [], len(match.strokes))
    for sensors in sensor_sets:
        progress(f"{sensors}: sensors and hub")
        wire = build_wire(match, HubConfig(sensors=sensors, seed=seed))
        truth = truth_lines(match, wire)
        progress(f"{sensors}: replay")
        result = replay(b"".join(wire.chunks))
        got = rows(truth, result.events, result.lines, sensors, seed, false_clicks(wire))
        out.rows += got
        for row in got:
            if not row.equal:
                out.detail[(sensors, row.t_us)] = (
                    [
                        e
                        for e in truth
                        if "type" in e and row.shot is not None and e["shot"] == row.shot
                    ],
                    [
                        e
                        for e in result.events
                        if row.got_shot is not None and e.get("shot") == row.got_shot
                    ],
                )
    return out


def brief(events: list[Line]) -> str:
    """A shot's events in one line, each as ``ms:what``, ms from its first event.

    ``0:start cue 7 0:tip 1719us 156:7-14 857:7@c4 2277:5xcf 2822:pot 6 3000:MOVED 5``:
    ``7-14`` a ball contact, ``7@c4`` ball 7 at cushion 4, ``5xcf`` ball 5 crossed the
    centre line going front (``h`` house, ``b`` back), ``MOVED`` a ``ball_moved``.
    """
    if not events:
        return "-"
    t0 = events[0]["t_us"]
    parts = []
    for e in events:
        kind, ms = e["type"], (e["t_us"] - t0) / 1000
        if kind == "shot_start":
            text = f"start cue {e.get('cue_ball')}"
        elif kind == "cue_contact":
            text = f"tip {e.get('duration_us')}us"
        elif kind == "ball_contact":
            text = "-".join(str(b) for b in e["balls"])
        elif kind == "cushion":
            text = f"{e['ball']}@c{e['cushion']}"
        elif kind == "line_cross":
            text = f"{e['ball']}x{e['line'][0]}{e['direction'][0]}"
        elif kind == "pocket":
            text = f"pot {e['ball']}"
        elif kind == "ball_moved":
            text = f"MOVED {e['ball']}"
        elif kind == "shot_end":
            text = "end" + (" interrupted" if e.get("interrupted") else "")
        else:
            text = kind
        parts.append(f"{ms:.0f}:{text}")
    return " ".join(parts)


_progress_queue: Any = None


def _init_worker(q: Any) -> None:
    global _progress_queue
    _progress_queue = q


def _play_in_worker(
    seed: int, minutes: float, sensor_sets: tuple[str, ...], physics: str, frame_shots: int | None
) -> Played:
    def say(stage: str) -> None:
        _progress_queue.put((seed, stage))

    try:
        return play(seed, minutes, sensor_sets, say, physics, frame_shots)
    except Exception as exc:  # noqa: BLE001 -- one broken match must not hide the rest; said per seed
        return Played(seed, minutes, [], 0, error=_why(exc))


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def play_many(
    seeds: Iterable[int],
    minutes: float,
    sensor_sets: Iterable[str] = SENSOR_SETS,
    jobs: int | None = None,
    progress: Callable[[int | None, str], None] = lambda seed, stage: None,
    physics: str = "table",
    frame_shots: int | None = None,
) -> list[Played]:
    """:func:`play` for every seed, ``jobs`` matches at a time (default: every core), in seed order.

    ``progress(seed, stage)`` is called in this process as each match moves
    on (``"done"`` when it is), and ``progress(None, "")`` about five times
    a second while nothing moved, so a caller can show it is alive.  A
    match that raises comes back with ``error`` set, not as an exception.
    """
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    seeds = list(seeds)
    sets = tuple(sensor_sets)
    jobs = max(1, min(jobs or cores(), len(seeds) or 1))
    done: dict[int, Played] = {}
    # a fresh worker rather than a fork of a caller that may run threads (pytest, a daemon);
    # each loads the numba cache once, about a second
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
    q = ctx.Queue()
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker, initargs=(q,)) as pool:
        running: dict[Future[Played], int] = {
            pool.submit(_play_in_worker, seed, minutes, sets, physics, frame_shots): seed
            for seed in seeds
        }
        while running:
            finished, _ = wait(running, timeout=0.05, return_when=FIRST_COMPLETED)
            moved = _drain(q, progress)
            for fut in finished:
                seed = running.pop(fut)
                try:
                    done[seed] = fut.result()
                except BrokenProcessPool as exc:  # a worker killed outright
                    done[seed] = Played(seed, minutes, [], 0, error=f"{type(exc).__name__}: {exc}")
                _drain(q, progress)
                progress(seed, "done")
                moved = True
            if not moved and not finished:
                time.sleep(0.2)
                if not _drain(q, progress):
                    progress(None, "")
    return [done[s] for s in seeds]


def _why(exc: BaseException) -> str:
    """``AttributeError: ... (rules/shot.py:120 in judge)``: the error and where it was raised."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _drain(q: Any, progress: Callable[[int | None, str], None]) -> bool:
    moved = False
    while True:
        try:
            seed, stage = q.get_nowait()
        except queue.Empty:
            return moved
        progress(seed, stage)
        moved = True
