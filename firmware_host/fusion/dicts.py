"""Event records to EVENTS.md dicts, as the event catalogue (``rules/catalogue.py``) says.

The catalogue names, for each key of each type, the record slots its value
is made from and a converter (:data:`CONVERT`) or, for what is genuinely
structured, a builder (:data:`BUILD`: a layout, the cushions balls rest
against, a shot's paths, the boot's table and nodes).  Both are read once,
at import, into a plan per type code (:data:`PLANS`), so :func:`to_dict`
is a loop over a few tuples: nothing about a type is written here twice.
Events are few (thousands an hour); the per-frame work stays in the kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

import numpy as np

from firmware_host.timing.timeline import INFERRED_BOOT
from protocol.catalogue import KEYPAD_KEYS, NODE_NAMES, NODE_STATUS_CODES
from protocol.geometry import LINE_NAMES
from rules.catalogue import COLOURS, DIRECTIONS, KEYS, NAMES, Built

from . import records

OMIT = object()  # a converter's answer when the key is not written at all
_COLOURS = dict(enumerate(COLOURS))
_DIRECTIONS = dict(enumerate(DIRECTIONS))


def _ball(b: int) -> int | None:
    return None if b < 0 else b


def _status(code_who: tuple[int, int]) -> str:
    """A node's status code, unless the host's rate limit set the node aside (it flooded)."""
    code, who = code_who
    if who == records.STATUS_FLOOD and code == 1:
        return "flooded"
    return NODE_STATUS_CODES.get(code, str(code))


def _touch_uncertain(source_doubt: tuple[int, int]) -> Any:
    """A cushion touch the tracker saw at a pocket's mouth before its frames could decide."""
    source, doubt = source_doubt
    return False if source == records.SOURCE_TRACKER and doubt else OMIT


#: converter name (a ``Slot``'s ``via``) -> its function of the slot's value (of a tuple of
#: values where a ``Slot`` names several slots)
CONVERT: dict[str, Callable[[Any], Any]] = {
    "as_is": lambda v: v,
    "ball": _ball,
    "ball_pair": lambda pair: [_ball(pair[0]), _ball(pair[1])],
    "tenth": lambda v: v / 10,
    "colour": _COLOURS.get,
    "line": LINE_NAMES.__getitem__,
    "direction": _DIRECTIONS.__getitem__,
    "uncertain": lambda v: False if v else OMIT,
    "tracker_source": lambda v: "tracker" if v == records.SOURCE_TRACKER else OMIT,
    "touch_uncertain": _touch_uncertain,
    "certain": lambda flags: bool(flags & records.FLAG_CERTAIN),
    "interrupted": lambda flags: bool(flags & records.FLAG_INTERRUPTED),
    "key": lambda v: KEYPAD_KEYS.get(v, str(v)),
    "node": lambda v: NODE_NAMES.get(v, str(v)),
    "status": _status,
    "status_source": lambda v: "hub" if v == records.STATUS_FROM_HUB else "host",
    # a boot the timeline inferred (a join, a reboot whose HELLO was lost) has no id
    "boot_id": lambda v: None if v == INFERRED_BOOT else v,
    "inferred": lambda v: True if v == INFERRED_BOOT else OMIT,
}

Record = list[int]  # one event record, as Python ints (``O_*`` slots)
Builder = Callable[[Record, np.ndarray, np.ndarray, np.ndarray], Any]


def _positions(rec: Record, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray) -> Any:
    """``{"7": [x_mm, y_mm], ...}``: the balls on the cloth in the event's layout."""
    at = rec[records.O_SNAP]
    if at < 0:
        return {}
    snap = snaps[at]
    return {
        str(b): [round(float(snap[b, 0]), 1), round(float(snap[b, 1]), 1)]
        for b in range(16)
        if snap[b, 2]
    }


def _frozen(rec: Record, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray) -> Any:
    """``{"7": [3], ...}``: the cushions each ball of the layout rests against (bits)."""
    at = rec[records.O_SNAP]
    if at < 0:
        return {}
    snap, bits = snaps[at], frozen[at]
    return {
        str(b): [c for c in range(6) if bits[b] >> c & 1]
        for b in range(16)
        if snap[b, 2] and bits[b]
    }


def _paths(rec: Record, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray) -> Any:
    """``{"7": [[t_us, x_mm, y_mm], ...], ...}``: the shot's points [PATH0, PATH1)."""
    trail: dict[str, list[list[float]]] = {}
    points = paths[rec[records.O_PATH0] : rec[records.O_PATH1]]
    xy = np.round(points[:, 2:4], 1).tolist()
    for ball, t, (x, y) in zip(
        points[:, 0].astype(int).tolist(), points[:, 1].astype(np.int64).tolist(), xy
    ):
        trail.setdefault(str(ball), []).append([t, x, y])
    return trail


def _table(rec: Record, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray) -> Any:
    """The boot's table: length and width in mm (C, D), the ball in µm (E)."""
    return {
        "length_mm": float(rec[records.O_C]),
        "width_mm": float(rec[records.O_D]),
        "ball_mm": rec[records.O_E] / 1000,
    }


def _nodes(rec: Record, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray) -> Any:
    """The boot's nodes present (a bit set in B; the hub always)."""
    present = rec[records.O_B] | 1
    return [NODE_NAMES[n] for n in range(8) if present >> n & 1]


#: a ``Built``'s name -> its builder
BUILD: dict[str, Builder] = {
    "positions": _positions,
    "frozen": _frozen,
    "paths": _paths,
    "table": _table,
    "nodes": _nodes,
}

# one step of a plan: the key, the slots' getter (None: a builder), the converter or builder
Step = tuple[str, Callable[[Record], Any] | None, Callable[..., Any]]


def _plan(name: str) -> tuple[Step, ...]:
    """The steps that write type ``name``'s keys, in the catalogue's order."""
    steps: list[Step] = []
    for key in KEYS[name]:
        if isinstance(key.fill, Built):
            steps.append((key.name, None, BUILD[key.fill.what]))
        else:
            take = itemgetter(*(records.SLOTS[s] for s in key.fill.slots))
            steps.append((key.name, take, CONVERT[key.fill.via]))
    return tuple(steps)


#: type code -> its plan
PLANS = tuple(_plan(name) for name in NAMES)


def to_dict(
    event: np.ndarray, snaps: np.ndarray, frozen: np.ndarray, paths: np.ndarray
) -> dict[str, Any]:
    """One event record as its EVENTS.md line."""
    rec = event.tolist()
    code, shot = rec[records.O_TYPE], rec[records.O_SHOT]
    out: dict[str, Any] = {
        "t_us": rec[records.O_T],
        "type": NAMES[code],
        "shot": shot if shot > 0 else None,
    }
    for key, take, make in PLANS[code]:
        value = make(rec, snaps, frozen, paths) if take is None else make(take(rec))
        if value is not OMIT:
            out[key] = value
    return out
