"""Logs under systemd: a repeating message is told ``burst`` times a window, then summed."""

from __future__ import annotations

import logging

import pytest

from firmware_host.lograte import RateLimit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def logged():
    clock = Clock()
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep()
    handler.addFilter(RateLimit(burst=3, window_s=60.0, clock=clock))
    log = logging.getLogger("test.lograte")
    log.addHandler(handler)
    log.propagate = False
    yield log, clock, lines
    log.removeHandler(handler)


def test_a_message_repeated_100_times_is_told_3_times_then_summed(logged):
    log, clock, lines = logged
    for i in range(100):
        log.warning("node %s: %s (detail %d)", "cue", "sensor saturated", i)
    assert lines == [f"node cue: sensor saturated (detail {i})" for i in range(3)]
    clock.now = 61.0
    log.warning("node %s: %s (detail %d)", "cue", "sensor saturated", 100)
    assert (
        lines[-1] == "node cue: sensor saturated (detail 100); 97 more like this in the last 60 s"
    )


def test_other_messages_are_not_held_back_by_one_that_repeats(logged):
    log, _, lines = logged
    for _ in range(10):
        log.warning("hub refused host frame %d: %s", 7, "busy")
    log.warning("port %s lost (%s); reconnecting", "/dev/ttyUSB0", "unplugged")
    assert lines[-1] == "port /dev/ttyUSB0 lost (unplugged); reconnecting"
    assert len(lines) == 4


def test_a_message_that_does_not_repeat_is_told_every_time(logged):
    log, clock, lines = logged
    for minute in range(5):
        clock.now = 61.0 * minute
        log.warning("hub rebooted: boot_id %08x", minute)
    assert len(lines) == 5 and "more like this" not in " ".join(lines)


def test_a_referee_press_is_always_told_never_summed():
    """An audit record (issue 24): the 6th press in a minute is told like the first."""
    now = [0.0]
    limit = RateLimit(burst=5, window_s=60.0, clock=lambda: now[0])
    told = []
    for n in range(8):
        record = logging.LogRecord(
            "firmware_host.presses",
            logging.INFO,
            __file__,
            1,
            "referee press from %s: %s %d",
            ("page 10.0.0.7", "new_frame", 0),
            None,
        )
        record.audit = True
        told.append(limit.filter(record))
        now[0] += 1.0
    assert told == [True] * 8
