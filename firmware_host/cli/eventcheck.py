"""The shape of an ordered event (EVENTS.md), checked at the command line's edge.

``judge`` reads events anyone may have written by hand; the rules engine
trusts their shape (a number where a number belongs, a table with all its
sizes), so each line is checked here first and a bad one is named:
``line 7: cushion: 'cushion' must be an integer from 0 to 5, not [1, 2]``.

Known types are checked key by key; the keys the engine needs must be
present, the others are checked when present.  Keys EVENTS.md does not
name are left alone (the format may gain keys), and so is an unknown
``type`` (the engine ignores it).

>>> check_event({"t_us": 5, "type": "cushion", "ball": 3, "cushion": 9})
Traceback (most recent call last):
...
firmware_host.cli.eventcheck.BadEvent: cushion: 'cushion' must be an integer from 0 to 5, not 9
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from rules import catalogue
from rules.catalogue import NEEDED_KEYS

MAX_LINE = 16 << 20  # bytes: a shot_end with every path is far below this
MAX_T_US = 2**63 - 1
MAX_MM = 1e6  # a coordinate or size beyond a kilometre is no billiards table
MAX_SIZE_MM = 100_000.0
BALLS = 16  # 0 the coloured ball, 1-15 white
SIDES = catalogue.SIDES  # cushions and pockets, 0-5


class BadEvent(ValueError):
    """What is wrong with one event, in words for the one-line message."""


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str | float) else json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _int(v: Any, what: str, lo: int, hi: int) -> None:
    if not (_is_int(v) and lo <= v <= hi):
        raise BadEvent(f"{what} must be an integer from {lo} to {hi}, not {_show(v)}")


def _num(v: Any, what: str, lo: float, hi: float) -> None:
    if not (_is_num(v) and lo <= v <= hi):
        raise BadEvent(f"{what} must be a number from {lo:g} to {hi:g}, not {_show(v)}")


def _ball(v: Any, what: str) -> None:
    if v is not None and not (_is_int(v) and 0 <= v < BALLS):
        raise BadEvent(f"{what} must be a ball 0 to {BALLS - 1} or null, not {_show(v)}")


def _text(v: Any, what: str, choices: tuple[str | None, ...] = (), longest: int = 64) -> None:
    if choices:
        if v not in choices:
            names = " or ".join("null" if c is None else json.dumps(c) for c in choices)
            raise BadEvent(f"{what} must be {names}, not {_show(v)}")
    elif not (isinstance(v, str) and len(v) <= longest):
        raise BadEvent(f"{what} must be a string (at most {longest} characters), not {_show(v)}")


def _flag(v: Any, what: str) -> None:
    if not isinstance(v, bool):
        raise BadEvent(f"{what} must be true or false, not {_show(v)}")


def _by_ball(v: Any, what: str, item: Callable[[Any, str], None]) -> None:
    """``{"7": ..., ...}``: an object keyed by ball numbers."""
    if not isinstance(v, dict):
        raise BadEvent(f"{what} must be an object keyed by ball number, not {_show(v)}")
    for key, value in v.items():
        if not (key.isdigit() and len(key) <= 2 and int(key) < BALLS):
            raise BadEvent(f"{what}: key {_show(key)} is not a ball number 0 to {BALLS - 1}")
        item(value, f"{what}[{json.dumps(key)}]")


def _xy(v: Any, what: str) -> None:
    if not (isinstance(v, list) and len(v) == 2):
        raise BadEvent(f"{what} must be [x_mm, y_mm], not {_show(v)}")
    for c in v:
        _num(c, what, -MAX_MM, MAX_MM)


def _cushions(v: Any, what: str) -> None:
    if not (isinstance(v, list) and len(v) <= SIDES):
        raise BadEvent(f"{what} must be a list of cushions 0 to 5, not {_show(v)}")
    for c in v:
        _int(c, what, 0, SIDES - 1)


def _path(v: Any, what: str) -> None:
    if not isinstance(v, list):
        raise BadEvent(f"{what} must be a list of [t_us, x_mm, y_mm], not {_show(v)}")
    for point in v:
        if not (isinstance(point, list) and len(point) == 3):
            raise BadEvent(f"{what} must hold [t_us, x_mm, y_mm] points, not {_show(point)}")
        _int(point[0], f"{what} t_us", 0, MAX_T_US)
        _xy(point[1:], what)


def _positions(v: Any, what: str) -> None:
    _by_ball(v, what, _xy)


def _frozen(v: Any, what: str) -> None:
    _by_ball(v, what, _cushions)


def _paths(v: Any, what: str) -> None:
    _by_ball(v, what, _path)


def table_problem(length_mm: float, width_mm: float, ball_mm: float) -> str | None:
    """What makes these sizes no table for a full rack (item 8), or None.

    Shared by ``rack`` and the ``boot`` event's ``table``: the rules place a
    rack on the back mark and measure from the cushions, so the 15-ball
    triangle must lie on the cloth.
    """
    from protocol.geometry import Table
    from rules.rack import MAX_BALLS, rack_positions

    sizes = (length_mm, width_mm, ball_mm)
    if not all(_is_num(s) and 0 < s <= MAX_SIZE_MM for s in sizes):
        return f"sizes must be numbers above 0 and at most {MAX_SIZE_MM:g} mm"
    if width_mm > length_mm:
        return "the width must not exceed the length"
    table = Table(float(length_mm), float(width_mm), float(ball_mm))
    r = ball_mm / 2
    for x, y in rack_positions(MAX_BALLS, table):
        if not (r <= x <= length_mm - r and r <= y <= width_mm - r):
            return (
                f"a rack of {ball_mm:g} mm balls does not fit on a "
                f"{length_mm:g} x {width_mm:g} mm table"
            )
    return None


def _table(v: Any, what: str) -> None:
    keys = ("length_mm", "width_mm", "ball_mm")
    if not isinstance(v, dict):
        raise BadEvent(f"{what} must be an object with {', '.join(keys)}, not {_show(v)}")
    if not v:
        return  # {}: the default table
    missing = [k for k in keys if k not in v]
    if missing:
        raise BadEvent(f"{what} has no {', '.join(repr(k) for k in missing)}")
    for k in keys:
        _num(v[k], f"{what}.{k}", 0, MAX_SIZE_MM)
    problem = table_problem(*(v[k] for k in keys))
    if problem:
        raise BadEvent(f"{what}: {problem}")


def _nodes(v: Any, what: str) -> None:
    if not (isinstance(v, list) and len(v) <= 256):
        raise BadEvent(f"{what} must be a list of node names, not {_show(v)}")
    for name in v:
        _text(name, f"{what} item")


def _node(v: Any, what: str) -> None:
    if not _is_int(v):
        _text(v, what)
    else:
        _int(v, what, 0, 255)


def _arg(v: Any, what: str) -> None:
    ok = v is None or (_is_int(v) and 0 <= v <= 255) or (isinstance(v, str) and len(v) <= 32)
    if not ok:
        raise BadEvent(
            f"{what} must be an integer from 0 to 255, a short string or null, not {_show(v)}"
        )


def _two_balls(v: Any, what: str) -> None:
    if not (isinstance(v, list) and len(v) == 2):
        raise BadEvent(f"{what} must be [a, b], two balls, not {_show(v)}")
    for b in v:
        _ball(b, what)


def _nullable(check: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    def inner(v: Any, what: str) -> None:
        if v is not None:
            check(v, what)

    return inner


Check = Callable[[Any, str], None]

#: a catalogue ``Shape``'s kind -> its check
KINDS: dict[str, Check] = {
    "ball": _ball,
    "two_balls": _two_balls,
    "flag": _flag,
    "text": _text,
    "node": _node,
    "arg": _arg,
    "nodes": _nodes,
    "table": _table,
    "positions": _positions,
    "frozen": _frozen,
    "paths": _paths,
}


def _check(rule: catalogue.Check) -> Check:
    """The check of one catalogue rule for a key (its range, its choices or its shape)."""
    if isinstance(rule, catalogue.Shape):
        return _nullable(KINDS[rule.kind]) if rule.null else KINDS[rule.kind]
    if isinstance(rule, catalogue.OneOf):
        choices = rule.choices
        return lambda v, what: _text(v, what, choices)
    if isinstance(rule, catalogue.Num):
        low, high = rule.lo, rule.hi
        return lambda v, what: _num(v, what, low, high)
    lo, hi = rule.lo, rule.hi
    check: Check = lambda v, what: _int(v, what, lo, hi)
    return _nullable(check) if rule.null else check


# type -> key -> its check, in the order the keys are checked: the event catalogue's
# (rules/catalogue.py) keys that EVENTS.md's table names.  Which are required is the
# catalogue's too (NEEDED_KEYS: what the rules cannot judge without); the others are checked
# when present.
SHAPES: dict[str, dict[str, Check]] = {
    name: {key.name: _check(key.check) for key in keys if key.check is not None}
    for name, keys in catalogue.KEYS.items()
}


def check_event(event: Any) -> None:
    """Raise :class:`BadEvent` naming the first thing wrong with ``event``."""
    if not isinstance(event, dict):
        raise BadEvent("not a JSON object")
    missing = [k for k in ("t_us", "type") if k not in event]
    if missing:
        raise BadEvent(f"no {', '.join(repr(k) for k in missing)}")
    t_us, kind = event["t_us"], event["type"]
    if not _is_int(t_us):
        raise BadEvent(f"t_us {_show(t_us)} is not an integer")
    if not 0 <= t_us <= MAX_T_US:
        raise BadEvent(f"t_us {t_us} is out of range (0 to 2**63 - 1)")
    _text(kind, "type")
    if "shot" in event and event["shot"] is not None:
        _int(event["shot"], "shot", 0, 2**31 - 1)
    shape = SHAPES.get(kind)
    if shape is None:
        return  # a type this version does not know: the engine ignores it
    missing = [k for k in NEEDED_KEYS.get(kind, ()) if k not in event]
    if missing:
        raise BadEvent(f"no {', '.join(repr(k) for k in missing)} (a {kind} needs it)")
    for key, check in shape.items():
        if key in event:
            check(event[key], f"{kind}: {key!r}")


def _no_constant(name: str) -> Any:
    raise BadEvent(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadEvent(f"{text[:20]} is too large for a number")
    return value


def parse_line(raw: bytes) -> Any:
    """One JSON Lines line to a checked event; :class:`BadEvent` says what is wrong."""
    if len(raw) > MAX_LINE:
        raise BadEvent(f"longer than {MAX_LINE >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadEvent(f"not UTF-8 (byte {exc.start}: {raw[exc.start]:#04x})") from None
    try:
        event = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise BadEvent(f"not JSON ({exc.msg})") from None
    except RecursionError:
        raise BadEvent("not an event (nested too deeply)") from None
    except BadEvent:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise BadEvent(f"not usable JSON ({str(exc).split(';')[0]})") from None
    check_event(event)
    return event
