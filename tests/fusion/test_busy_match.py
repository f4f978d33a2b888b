"""The busy table bench/busy.py times: every ball kept on the cloth, strokes while balls roll."""

from __future__ import annotations

import numpy as np

from firmware_host.virtual_table.match import busy_match


def test_a_busy_table_keeps_its_balls_on_the_cloth_and_strikes_while_they_roll() -> None:
    truth = busy_match(seed=2, minutes=0.75)
    strokes = truth.strokes[1:]  # after the break
    assert len(strokes) >= 10
    # every stroke but the last ends the one before it while balls still roll (14.2)
    assert sum(s["interrupted"] for s in truth.strokes) >= len(strokes) - 1
    t = np.arange(truth.strokes[1]["t_start_s"], truth.duration_s - 3.0, 1 / 120)
    _, state, present = truth.sample(t)
    assert present.sum(axis=1).min() >= 13  # a potted ball is back before the next stroke
    assert present.sum(axis=1).mean() > 15.5
    assert (state != 0).sum(axis=1).mean() > 4  # a quiet match moves under one ball on average
