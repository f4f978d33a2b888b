"""Item 8: rack positions for every N, worked by hand, and the ``rack`` command."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rules_cases.cli import firmware_host

from protocol.geometry import DEFAULT_TABLE, Table
from rules.rack import check_rack, rack_positions

# Default table: apex row on the back mark x = 3·3569/4 = 2676.75, rows d·√3/2 = 58.8898 mm
# apart; y = W/2 + m·d/2 = 889 + 34·m.
ROW_X = (2676.75, 2735.6398, 2794.5296, 2853.4194, 2912.3091)
FULL_ROW = {0: (0,), 1: (-1, 1), 2: (-2, 0, 2), 3: (-3, -1, 1, 3), 4: (-4, -2, 0, 2, 4)}

# Row -> offsets m, by hand from the note to 8.2: rows fill from the apex; the base fills
# from the middle outwards; where the base count cannot be symmetric, the apex ball joins it.
EXPECTED = {
    1: {0: (0,)},
    2: {1: (-1, 1)},  # apex moved into the base
    3: {0: (0,), 1: (-1, 1)},
    4: {0: (0,), 1: (-1, 1), 2: (0,)},
    5: {1: (-1, 1), 2: (-2, 0, 2)},  # apex moved
    6: {0: (0,), 1: (-1, 1), 2: (-2, 0, 2)},
    7: {1: (-1, 1), 2: (-2, 0, 2), 3: (-1, 1)},  # apex moved
    8: {0: (0,), 1: (-1, 1), 2: (-2, 0, 2), 3: (-1, 1)},
    9: {1: (-1, 1), 2: (-2, 0, 2), 3: (-3, -1, 1, 3)},  # apex moved
    10: {k: FULL_ROW[k] for k in range(4)},
    11: {**{k: FULL_ROW[k] for k in range(4)}, 4: (0,)},
    12: {**{k: FULL_ROW[k] for k in range(1, 4)}, 4: (-2, 0, 2)},  # apex moved
    13: {**{k: FULL_ROW[k] for k in range(4)}, 4: (-2, 0, 2)},
    14: {**{k: FULL_ROW[k] for k in range(1, 4)}, 4: (-4, -2, 0, 2, 4)},  # apex moved
    15: FULL_ROW,
}


@pytest.mark.parametrize("n", range(1, 16))
def test_rack_positions_are_the_hand_worked_ones(n: int) -> None:
    expected = sorted((ROW_X[k], 889 + 34 * m) for k, ms in EXPECTED[n].items() for m in ms)
    got = sorted(rack_positions(n, DEFAULT_TABLE))
    assert len(got) == n
    assert flat(got) == pytest.approx(flat(expected), abs=1e-3)


def flat(points) -> list[float]:
    """Coordinates in one list: ``pytest.approx`` compares flat sequences."""
    return [c for p in points for c in p]


def _touching_triangle(table: Table, balls: list[tuple[float, float]]) -> None:
    d = table.ball_mm
    pairs = list(itertools.combinations(balls, 2))
    assert all(math.dist(a, b) >= d - 1e-6 for a, b in pairs), "balls overlap"
    # Neighbours touch: the touching graph is connected.
    reached, todo = {balls[0]}, [balls[0]]
    while todo:
        a = todo.pop()
        for b in balls:
            if b not in reached and math.isclose(math.dist(a, b), d, abs_tol=1e-6):
                reached.add(b)
                todo.append(b)
    assert len(reached) == len(balls), "a ball touches none of its neighbours"
    # All on places of the one standard triangle.
    full = rack_positions(15, table)
    assert all(min(math.dist(p, q) for q in full) < 1e-6 for p in balls)


@given(
    n=st.integers(1, 15),
    length=st.floats(2000, 4000),
    width=st.floats(1000, 2000),
    ball=st.floats(50, 70),
)
def test_every_rack_is_symmetric_and_touching(
    n: int, length: float, width: float, ball: float
) -> None:
    table = Table(length, width, ball)
    balls = rack_positions(n, table)
    mirrored = sorted((x, width - y) for x, y in balls)
    assert flat(mirrored) == pytest.approx(flat(sorted(balls)), abs=1e-6)
    _touching_triangle(table, balls)


def test_check_rack_finds_the_misplaced_ball_and_a_wrong_count() -> None:
    layout = dict(enumerate(rack_positions(15, DEFAULT_TABLE), start=1))
    assert check_rack(layout, 15, DEFAULT_TABLE, 10.0).ok
    x, y = layout[6]
    moved = check_rack(layout | {6: (x, y + 25)}, 15, DEFAULT_TABLE, 10.0)
    assert [b for b, _ in moved.misplaced] == [6] and moved.looks_racked
    assert not check_rack(layout, 14, DEFAULT_TABLE, 10.0).ok


def rack_cli(*args: str):
    return firmware_host("rack", *args)


def test_rack_command_json_gives_the_positions() -> None:
    done = rack_cli("12", "--json", "--length", "3000", "--width", "1500", "--ball", "60")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["n"] == 12
    assert flat(out["balls"]) == pytest.approx(
        flat(rack_positions(12, Table(3000, 1500, 60))), abs=1e-3
    )


def test_rack_command_draws_the_rack() -> None:
    done = rack_cli("7")
    assert done.returncode == 0
    picture = [line.strip() for line in done.stdout.splitlines()[3:8]]
    assert picture == [".", "o o", "o o o", ". o o .", ". . . . ."]


@pytest.mark.parametrize("args", [("0",), ("16",), ("3", "--ball", "0")])
def test_rack_command_rejects_impossible_racks(args: tuple[str, ...]) -> None:
    done = rack_cli(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
