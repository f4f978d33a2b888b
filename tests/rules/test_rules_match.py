"""The match around the shots: items 8, 10-11, 12.2, 13, 17 between shots, keypad calls."""

from __future__ import annotations

import pytest
from rules_cases.events import TABLE, Match, W, judge, racked, verdicts

from rules.referee import Referee

HOUSE_X = TABLE.house_line_x


def notices(match: Match) -> list[dict]:
    return [line for line in judge(match.events) if line["kind"] == "notice"]


def rules_noticed(match: Match) -> list[str]:
    return [r for line in notices(match) for r in line["rules"]]


# ------------------------------------------------------------------ which shot is a break


@pytest.mark.parametrize(
    ("name", "balls", "is_break"),
    [
        ("first shot after boot from a full rack", racked(15), True),
        (
            "twin: first shot after boot from a played layout (host restarted mid-frame)",
            {0: (500.0, W / 2), 3: (1200.0, 300.0), 9: (3000.0, 1500.0)},
            False,
        ),
        (
            "a sloppy rack is still a rack (item 8 notices it)",
            racked(15) | {4: (racked(15)[4][0] + 20, racked(15)[4][1])},
            True,
        ),
    ],
)
def test_a_break_is_told_by_the_layout_with_a_tracker(
    name: str, balls: dict, is_break: bool
) -> None:
    verdict = verdicts(Match().shot(balls=balls).hit(0, 1).pot(4, 2).end().events)[-1]
    assert verdict["break"] is is_break


def test_a_soft_illegal_break_accepted_is_not_a_new_break() -> None:
    m = Match().shot(balls=racked(15)).hit(0, 1).end().key("accept")
    m.shot(cue=0, balls=racked(15, (2000.0, W / 2))).hit(0, 1).pot(1, 2).end()
    soft, after = verdicts(m.events)
    assert (soft["verdict"], soft["break"]) == ("foul", True)
    assert (after["break"], after["player"]) == (False, 2)


# ------------------------------------------------------------------ 10-11: the house, 11.3, 11.5


@pytest.mark.parametrize(
    ("name", "x", "warned"),
    [
        ("10.2: on the house line is outside", HOUSE_X, True),
        ("10.1 twin: just inside the line", HOUSE_X - 0.5, False),
        ("11.3: well outside", HOUSE_X + 300, True),
    ],
)
def test_11_3_warning_before_the_break(name: str, x: float, warned: bool) -> None:
    m = Match().rest(racked(15, (x, W / 2)))
    assert ("11.3" in rules_noticed(m)) is warned


@pytest.mark.parametrize(
    ("name", "corrected_x", "played_x", "rules"),
    [
        ("11.3: warned, then broke from outside", None, HOUSE_X + 300, ["11.3"]),
        ("11.3 twin: warned, corrected into the house (11.5)", 500.0, 500.0, []),
        ("11.3 twin: never warned counts as correctly placed", None, HOUSE_X + 300, []),
    ],
)
def test_11_3_foul_only_after_the_warning(
    name: str, corrected_x, played_x: float, rules: list[str]
) -> None:
    m = Match()
    if rules or corrected_x is not None:
        m.rest(racked(15, (HOUSE_X + 300, W / 2)))
    if corrected_x is not None:
        m.moved(0).rest(racked(15, (corrected_x, W / 2)))
    verdict = verdicts(
        m.shot(balls=racked(15, (played_x, W / 2))).hit(0, 1).pot(4, 2).end().events
    )[-1]
    assert verdict["rules"] == rules
    assert verdict["verdict"] == ("foul" if rules else "legal")


def test_11_5_adjusting_the_coloured_ball_before_the_break_is_no_foul() -> None:
    m = Match().rest(racked(15)).moved(0).rest(racked(15, (400.0, 700.0)))
    assert verdicts(m.events) == []


# ------------------------------------------------------------------ 8: the rack check


def moved(layout: dict, ball: int, dx: float) -> dict:
    return layout | {ball: (layout[ball][0] + dx, layout[ball][1])}


@pytest.mark.parametrize(
    ("name", "layout", "expected"),
    [
        ("a full rack", racked(15), None),
        (
            "twin: ball 4 20 mm off its place",
            moved(racked(15), 4, 20),
            "ball 4 is 20 mm off its place",
        ),
        # The note to 8.2: an incomplete pyramid is a rack too; after a boot its count
        # is not known (a re-rack after a penalty ball), so any count set right is no notice.
        ("a 14-ball rack (the apex ball moved into the base)", racked(14), None),
        ("a 13-ball rack", racked(13), None),
        ("a 10-ball rack (four full rows)", racked(10), None),
        (
            "twin: 14 balls left as the full rack less a corner: the apex is out of place",
            {b: xy for b, xy in racked(15).items() if b != 15},
            "ball 1 is 272 mm off its place in a 14-ball rack",
        ),
        (
            "twin: a 13-ball rack with ball 9 off its place",
            moved(racked(13), 9, -25),
            "ball 9 is 25 mm off its place in a 13-ball rack",
        ),
        (
            "twin: a 10-ball rack with ball 2 off its place",
            moved(racked(10), 2, 15),
            "ball 2 is 15 mm off its place in a 10-ball rack",
        ),
    ],
)
def test_8_rack_check_before_the_break(name: str, layout: dict, expected: str | None) -> None:
    found = [line["reason"] for line in notices(Match().rest(layout)) if line["rules"] == ["8"]]
    assert found == ([] if expected is None else found[:1])
    if expected:
        assert expected in found[0]


@pytest.mark.parametrize("n", [14, 13, 10])
def test_8_an_incomplete_rack_after_a_boot_is_a_break_without_a_notice(n: int) -> None:
    m = Match().rest(racked(n)).shot(balls=racked(n)).hit(0, 1).pot(4, 2).end()
    assert not [line for line in notices(m) if line["rules"] == ["8"]]
    assert verdicts(m.events)[-1]["break"] is True


def test_8_twin_a_new_frame_needs_the_full_rack() -> None:
    m = Match().broken().key("new_frame").rest(racked(14))
    assert "14 white balls on the table, the rack needs 15" in notices(m)[-1]["reason"]


# ------------------------------------------------------------------ 12.2 and 13


def foul_break() -> Match:
    """Player 1 breaks and the cue ball touches nothing: a foul, 12.2 awaits a choice."""
    return Match().shot().cushion(0, 3).end()


@pytest.mark.parametrize(
    ("key", "player", "is_break", "rack_n"),
    [
        ("accept", 2, False, None),
        ("offender_continues", 1, False, None),
        ("rerack_i_break", 2, True, 14),
        ("rerack_offender_breaks", 1, True, 14),
    ],
)
def test_12_2_choices_decide_who_plays_and_whether_to_rerack(
    key: str, player: int, is_break: bool, rack_n
) -> None:
    m = foul_break().key(key)
    chosen = notices(m)[-1]
    assert chosen["rules"] == ["12.2"]
    if rack_n:
        assert f"re-rack {rack_n} balls" in chosen["reason"]
    after = verdicts(m.shot().hit(0, 1).pot(4, 2).end().events)[-1]
    assert (after["player"], after["break"]) == (player, is_break)


def test_12_2_rerack_uses_the_incomplete_pyramid_after_the_penalty_ball() -> None:
    m = foul_break().key("rerack_i_break")
    assert not [n for n in notices(m.rest(racked(14))) if n["rules"] == ["8"]]
    full = foul_break().key("rerack_i_break").rest(racked(15))
    assert "15 white balls on the table, the rack needs 14" in notices(full)[-1]["reason"]


def test_12_2_choice_without_an_illegal_break_is_ignored() -> None:
    m = Match().broken().key("accept")
    assert "ignored" in notices(m)[-1]["reason"]


def test_13_players_break_in_turn() -> None:
    m = Match().broken().key("new_frame").broken().key("new_frame").broken()
    breaks = [(v["player"], v["break"]) for v in verdicts(m.events)]
    assert breaks == [(1, True), (2, True), (1, True)]
    referee = Referee()
    for ev in m.events:
        referee.feed(ev)
    assert referee.state.breakers == {1: 1, 2: 2, 3: 1}


def test_turns_follow_pots_and_fouls() -> None:
    m = (
        Match()
        .broken()  # player 1 pots on the break: plays on
        .shot()
        .hit(0, 7)
        .cushion(7, 1)
        .cushion(7, 3)
        .end()  # legal, no pot: player 2 next
        .shot()
        .cushion(0, 1)
        .end()  # player 2 fouls: player 1 next
        .shot()
        .hit(0, 7)
        .pot(7, 2)
        .end()
    )
    assert [v["player"] for v in verdicts(m.events)] == [1, 1, 2, 1]


# ------------------------------------------------------------------ 17 between shots, keypad


@pytest.mark.parametrize(
    ("name", "build", "fouls"),
    [
        ("17: a ball touched between shots", lambda: Match().broken().moved(9), 1),
        ("twin: racking before the break", lambda: Match().moved(9).moved(3), 0),
        (
            "twin: the penalty ball taken after a foul",
            lambda: Match().broken().shot().cushion(0, 1).end().moved(9),
            0,
        ),
    ],
)
def test_17_between_shots(name: str, build, fouls: int) -> None:
    between = [v for v in verdicts(build().events) if v["shot"] is None]
    assert [(v["verdict"], v["rules"]) for v in between] == [("foul", ["17"])] * fouls


@pytest.mark.parametrize("item", [15, 16, 17])
def test_referee_foul_between_shots_is_a_verdict_outside_any_shot(item: int) -> None:
    line = verdicts(Match().broken().key("referee_foul", item).events)[-1]
    assert (line["shot"], line["verdict"], line["rules"], line["player"]) == (
        None,
        "foul",
        [str(item)],
        1,
    )


def test_referee_foul_turns_the_last_shot_into_a_foul_and_passes_the_turn() -> None:
    m = Match().broken().key("referee_foul", 16).shot().hit(0, 7).pot(7, 1).end()
    assert verdicts(m.events)[-1]["player"] == 2


def test_referee_clear_overrules_the_last_verdict() -> None:
    m = Match().broken().shot().tip().hit(0, 7).pot(7, 1).end().key("referee_clear")
    line = verdicts(m.events)[-1]
    assert (line["verdict"], line["overrules"], line["shot"]) == ("legal", 2, None)
    # Cleared, the pot stands: player 1 plays on.
    assert verdicts(m.shot().hit(0, 3).pot(3, 1).end().events)[-1]["player"] == 1


def test_referee_clear_after_a_referee_foul_restores_the_shot() -> None:
    m = Match().broken().key("referee_foul", 16).key("referee_clear")
    line = verdicts(m.events)[-1]
    assert (line["verdict"], line["overrules"]) == ("legal", 1)
    assert verdicts(m.shot().hit(0, 3).pot(3, 1).end().events)[-1]["player"] == 1


def test_referee_clear_overrules_a_touch_between_shots() -> None:
    m = (
        Match()
        .broken()
        .shot()
        .hit(0, 7)
        .cushion(7, 1)
        .cushion(7, 3)
        .end()
        .moved(9)
        .key("referee_clear")
    )
    # Player 2 was to play after a legal shot without a pot, and still is.
    assert verdicts(m.shot().hit(0, 3).pot(3, 1).end().events)[-1]["player"] == 2


def test_a_new_frame_settles_the_last_verdict() -> None:
    m = Match().broken().key("new_frame").key("referee_clear")
    assert "ignored" in notices(m)[-1]["reason"]


def test_referee_clear_before_any_verdict_is_ignored() -> None:
    assert "ignored" in notices(Match().key("referee_clear"))[-1]["reason"]


def test_declare_frozen_255_means_the_ball_nearest_the_cue_ball() -> None:
    # Two resting balls; 9 is the nearer, so the declaration does not cover 7.
    balls = {0: (2500.0, 900.0), 7: (TABLE.length_mm - 35.0, 900.0), 9: (2300.0, 900.0)}
    m = Match().broken().key("declare_frozen", 255).shot(balls=balls).hit(0, 7).cushion(0, 1).end()
    assert verdicts(m.events)[-1]["verdict"] == "foul"


def test_a_malformed_event_is_a_notice_not_a_crash() -> None:
    m = Match().broken().shot().hit(0, 7).add("cushion", ball=7).cushion(7, 1).cushion(7, 3).end()
    lines = judge(m.events)
    assert "cushion event without cushion: ignored" in [
        n["reason"] for n in lines if n["kind"] == "notice"
    ]
    assert lines[-1]["satisfied"] == "20(2)(a)"


def test_the_next_shots_tip_contact_may_come_before_its_shot_start() -> None:
    m = Match().broken().shot().hit(0, 7).pot(7, 1).end(interrupted=True)
    m.add("cue_contact", 0, shot=3, duration_us=1000, force_n=20.0)
    m.shot(dt=0).events.pop()  # the builder's own tip contact: this one came first
    m.hit(0, 5).pot(5, 0).end()
    shots = verdicts(m.events)
    assert [(v["shot"], v["rules"]) for v in shots[-2:]] == [(2, []), (3, ["14.2"])]


@pytest.mark.parametrize(
    ("name", "build", "early"),
    [
        (
            "a double hit is announced at the second tip contact",
            lambda: Match().broken().shot().tip().hit(0, 7).pot(7, 1).end(),
            ["18"],
        ),
        (
            "a push is announced at the contact",
            lambda: Match().broken().shot(duration_us=30_000).hit(0, 7, dt=20_000).pot(7, 1).end(),
            ["19.1"],
        ),
        (
            "twin: a clean stroke announces nothing",
            lambda: Match().broken().shot().hit(0, 7).pot(7, 1).end(),
            [],
        ),
    ],
)
def test_early_fouls_are_announced_and_repeated(name: str, build, early: list[str]) -> None:
    lines = [v for v in verdicts(build().events) if v["shot"] == 2]
    announced = [r for v in lines if v.get("early") for r in v["rules"]]
    assert announced == early
    final = lines[-1]
    assert not final.get("early") and set(early) <= set(final["rules"])
    if early:
        assert lines[0]["t_us"] < final["t_us"]
