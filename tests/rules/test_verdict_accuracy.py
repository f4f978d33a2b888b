"""Verdicts of random matches against their intended ones, on seeds drawn afresh each run (issue 18).

The fixed-seed tests keep passing on the seeds they were tuned on; this one
plays ``N_SEEDS`` random matches of ``MINUTES`` on seeds drawn from
``SEED_RANGE`` with a time-seeded ``random.Random()``, replays each on every
sensor set (:mod:`hil_tests.accuracy`, what ``bench/verdicts.py`` prints)
and holds:

* full set: no false foul, and at most ``MAX_MISSES`` verdicts that differ
  from the intended ones (docs/verdicts.md: same verdict, same set of rules,
  same clause).  About 95 shots cannot resolve a rate: ``bench/verdicts.py``
  measured 0.66 % misses over 15 525 shots, seeds 0-999 (README), so a
  sample expects 0.6 of them.  Misses come in clusters, not one by one: a
  seed whose layout keeps the cue ball near 45° of a touching ball gives
  several (a stress run drew seeds 440 and 879: five misses in 95 shots, all
  referee's calls or a rule missed, none a false foul), so the bound is one
  miss a seed on average, ten times the measured rate;
* middle and minimum: no decided verdict the truth contradicts, ``referee``
  only where RULES.md's sensor table says the set cannot decide, and a
  verdict for every shot.

A failure names the seeds; ``VERDICT_SEEDS=3,17,... pytest
tests/rules/test_verdict_accuracy.py`` plays those again, and the message gives the
bench command that lists every miss with its events.
"""

from __future__ import annotations

import os
import random
import time
from functools import cache

import pytest

from hil_tests.accuracy import (
    SENSOR_SETS,
    Played,
    Row,
    Tally,
    V,
    cores,
    equal,
    play,
    play_many,
    rows,
)

pytestmark = pytest.mark.wall_s(35)  # alone, on an idle core: run first (conftest.py)

SEED_RANGE = range(1000)
N_SEEDS = 6
MINUTES = 5.0
MAX_MISSES = N_SEEDS  # none of them a false foul


def _seeds() -> list[int]:
    given = os.environ.get("VERDICT_SEEDS")
    if given:
        return [int(s) for s in given.split(",")]
    return sorted(random.Random(time.time_ns()).sample(SEED_RANGE, N_SEEDS))


SEEDS = _seeds()


def _sample() -> str:
    return f"seeds {','.join(map(str, SEEDS))} x {MINUTES:g} min"


def _again() -> str:
    seeds = ",".join(map(str, SEEDS))
    return (
        f"{_sample()}: again with VERDICT_SEEDS={seeds} pytest "
        f"tests/rules/test_verdict_accuracy.py; every miss with its events: "
        f"python bench/verdicts.py --seeds {seeds} --minutes {MINUTES:g} --detail"
    )


@cache
def played() -> list[Played]:
    return play_many(SEEDS, MINUTES, SENSOR_SETS, jobs=min(2, cores()))


def tally(sensors: str) -> Tally:
    matches = played()
    broken = [f"seed {p.seed}: {p.error}" for p in matches if p.error]
    assert not broken, f"{_again()}\n" + "\n".join(broken)
    return Tally.of(r for p in matches for r in p.rows if r.sensors == sensors)


def _failure(t: Tally, sensors: str) -> str:
    misses = "\n".join(f"  {row.describe()}" for row in t.misses)
    return f"{_again()}\n{t.table(f'{sensors}: ')}\nmisses:\n{misses}"


def test_full_set_gives_the_intended_verdicts_and_no_false_foul(capsys):
    t = tally("full")
    with capsys.disabled():
        print(f"\nverdict accuracy, {_sample()}: full {t.equal}/{t.total} equal")
    assert t.total > 0, _again()
    # ~95 shots cannot resolve a rate: the sample may hold a few misses that are no false
    # foul (a referee's call, a clause told apart); the rate is the bench's (README).
    held = not t.false_fouls and len(t.misses) <= MAX_MISSES
    assert held, _failure(t, "full")


# Seeds whose 5-minute matches once drew a false foul on the full set: a soft touch at a
# corner's mouth or resting against a cushion near one (20), a contact given to the wrong
# pair (17, 20), the stroke read off a cue ball against a cushion or in a cluster (19.2),
# a touch or a second collision no sensor reported, a ball leaving the centre line by
# half a millimetre (20: only the paths show them).
ONCE_FALSE = (120, 196, 337, 348, 369, 403, 464, 480, 519, 532, 728, 821, 900, 920, 992)


@pytest.mark.parametrize("seed", ONCE_FALSE)
def test_a_match_that_once_drew_a_false_foul_draws_none(seed):
    t = Tally.of(play(seed, MINUTES, ("full",)).rows)
    assert t.total > 0 and not t.false_fouls, t.table(f"seed {seed} full: ")


@pytest.mark.parametrize("sensors", ["middle", "minimum"])
def test_smaller_sets_decide_nothing_the_truth_contradicts(sensors):
    t = tally(sensors)
    assert t.total > 0, _again()
    held = (t.contradictions, t.undue_referee, t.missing) == (0, 0, 0)
    assert held, _failure(t, sensors)


# ---------------------------------------------------------------- the scoring itself


def test_equal_is_same_verdict_same_set_of_rules_and_for_legal_the_same_clause():
    assert equal(V("foul", "19.2", "20"), V("foul", "20", "19.2"))
    assert not equal(V("foul", "19.2", "20"), V("foul", "20"))
    assert not equal(V("legal", s="20(2)(a)"), V("legal", s="20(3)(a)"))
    assert not equal(V("referee", "20"), V("foul", "20"))
    assert equal(V("referee", "19.1", "20"), V("referee", "20", "19.1"))
    assert not equal(V("legal", s="20(1)"), None)


def _shot(shot: int, t_us: int, cue: int | None = 1) -> list[dict]:
    return [
        {"t_us": t_us, "type": "shot_start", "shot": shot, "cue_ball": cue},
        {"t_us": t_us + 3_000_000, "type": "shot_end", "shot": shot},
    ]


def _line(shot: int | None, t_us: int, verdict: str, *rules: str, s: str | None = None) -> dict:
    return {"kind": "verdict", "t_us": t_us, **V(verdict, *rules, s=s, shot=shot)}


def test_shots_are_matched_by_start_time_not_number():
    boot = {"t_us": 0, "type": "boot", "shot": None}
    truth = [boot, *_shot(1, 10_000_000), _line(1, 13_000_000, "legal", s="20(1)")]
    truth += [*_shot(2, 30_000_000), _line(2, 33_000_000, "foul", "20")]
    # the replay saw a spurious shot first, so its numbers run one ahead
    ours = [boot, *_shot(1, 5_000_000), *_shot(2, 10_000_050), *_shot(3, 30_000_020)]
    lines = [
        _line(1, 8_000_000, "foul", "20"),
        _line(2, 13_000_000, "legal", s="20(1)"),
        _line(3, 33_000_000, "foul", "17", "20"),
    ]
    got = rows(truth, ours, lines, "full")
    assert [(r.shot, r.got_shot, r.equal) for r in got] == [
        (None, 1, False),
        (1, 2, True),
        (2, 3, False),
    ]
    t = Tally.of(got)
    assert (t.extra, t.missing, dict(t.false_fouls), t.contradictions) == (
        1,
        0,
        {"17": 1, "20": 1},
        2,
    )


def test_a_referee_call_is_allowed_only_where_the_set_cannot_decide():
    open_ = Row(
        1, "middle", 1, 1, 0, V("legal", s="20(2)(a)"), V("referee", "20"), V("referee", "20")
    )
    undue = Row(1, "middle", 2, 2, 0, V("foul", "18"), V("foul", "18"), V("referee", "18", "20"))
    unseen = Row(
        1, "middle", 3, 3, 0, V("foul", "17"), V("legal", s="20(1)"), V("legal", s="20(1)")
    )
    wrong = Row(1, "middle", 4, 4, 0, V("foul", "19.1"), V("foul", "19.1"), V("legal", s="20(1)"))
    t = Tally.of([open_, undue, unseen, wrong])
    assert (t.undue_referee, t.contradictions, dict(t.missed_fouls)) == (1, 1, {"19.1": 1})
    assert [r.contradicts for r in t.rows] == [False, False, False, True]
