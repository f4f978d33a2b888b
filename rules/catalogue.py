"""The event types of EVENTS.md, once: one TypedDict per type, and all that derives from it.

What ``protocol/catalogue.py`` is for frames, this is for the fusion's
events.  Each type is a TypedDict (:class:`CushionEvent`, ...), listed in
:data:`EVENT_TYPES` in code order, and each of its keys says in
``Annotated`` metadata everything the places that write or read the key
need, so the schema is written here and nowhere else:

* its type, for the rules (``rules/referee.py`` reads events as these
  TypedDicts);
* whether the rules need it (``Required[...]``): :data:`NEEDED_KEYS`, which
  the referee and ``judge`` refuse a line without;
* what ``judge`` checks of it (:class:`Int`, :class:`Num`, :class:`OneOf`,
  :class:`Shape`): ``firmware_host/cli/eventcheck.py`` builds its ``SHAPES``
  from :data:`KEYS`, the messages beside its checks.  A key with no check
  is one EVENTS.md's table does not name (``boot``'s ``inferred``, the
  ``source`` and ``certain`` a cushion or line crossing may carry): the
  fusion writes it, ``judge`` leaves it alone, as it leaves any key the
  format may gain;
* where the fusion kernel's int64 record holds it and how it becomes the
  JSON value (:class:`Slot`: ``fusion/records.py``'s ``O_*`` slots by name,
  a converter ``fusion/dicts.py`` names): ``to_dict`` is built from it.  Only
  what is genuinely structured is built by hand there (:class:`Built`): a
  layout of balls and the cushions they rest against (from ``Out.layouts``),
  a shot's paths (``Out.paths``), and the boot's table and node list (three
  slots into an object, a bit set into names).

The type codes are the order of :data:`EVENT_TYPES`: events of one hub time
are written in code order (a shot ends before the next starts; a shot
starts before its tip contact).  Pure data, no numpy, no I/O: ``rules/``
stays free of both, and the fusion imports this from below.  The metadata
is read once, at import, into the plain tuples of :data:`KEYS`.
"""

from typing import (
    Annotated,
    Literal,
    NamedTuple,
    NotRequired,
    Required,
    TypedDict,
    get_args,
    get_origin,
)

from protocol.geometry import LINE_NAMES

# --------------------------------------------------------------- what judge checks of a key


class Int(NamedTuple):
    """An integer from ``lo`` to ``hi``; ``null``: or null."""

    lo: int
    hi: int
    null: bool = False


class Num(NamedTuple):
    """A finite number from ``lo`` to ``hi``."""

    lo: float
    hi: float


class OneOf(NamedTuple):
    """One of these strings (None: null)."""

    choices: tuple[str | None, ...]


class Shape(NamedTuple):
    """A check ``eventcheck.py`` names (a ball, a layout, a table ...); ``null``: or null."""

    kind: str
    null: bool = False


Check = Int | Num | OneOf | Shape

# ------------------------------------------------------- where the fusion's record holds it


class Slot(NamedTuple):
    """The record slots the value is made from (``records.SLOTS`` names), and the converter
    (``fusion/dicts.py``) that makes it; ``as_is``: the slot's integer itself."""

    slots: tuple[str, ...]
    via: str = "as_is"


class Built(NamedTuple):
    """A structured value ``fusion/dicts.py`` builds by hand (named by ``what``)."""

    what: str


# ------------------------------------------------------------------------- the key types

COLOURS = ("white", "coloured")  # a pocket's colour, by the kernel's code
DIRECTIONS = ("front", "back")  # a line crossing's direction, by the kernel's code
SIDES = 6  # cushions and pockets, 0-5

Ball = Annotated[int | None, Shape("ball"), Slot(("BALL",), "ball")]
Side = Annotated[int, Int(0, SIDES - 1), Slot(("A",))]
Positions = dict[str, list[float]]  # ball number -> [x_mm, y_mm]
Layout = Annotated[Positions | None, Shape("positions", null=True), Built("positions")]
Resting = Annotated[dict[str, list[int]] | None, Shape("frozen", null=True), Built("frozen")]


class TableSize(TypedDict):
    length_mm: float
    width_mm: float
    ball_mm: float


class _Event(TypedDict, total=False):
    """What every event has (EVENTS.md "Ordered events")."""

    t_us: Required[int]
    shot: int | None


class BootEvent(_Event, total=False):
    type: Required[Literal["boot"]]
    boot_id: Annotated[int | None, Int(0, 2**64 - 1, null=True), Slot(("A",), "boot_id")]
    inferred: Annotated[bool, Slot(("A",), "inferred")]  # a boot the timeline inferred
    table: Annotated[TableSize | None, Shape("table", null=True), Built("table")]
    nodes: Annotated[list[str] | None, Shape("nodes", null=True), Built("nodes")]


class NodeStatusEvent(_Event, total=False):
    type: Required[Literal["node_status"]]
    node: Annotated[int | str, Shape("node"), Slot(("A",), "node")]
    status: Annotated[str | None, Shape("text", null=True), Slot(("B", "C"), "status")]
    source: Annotated[Literal["hub", "host"], Slot(("C",), "status_source")]  # who said so


class KeypadEvent(_Event, total=False):
    type: Required[Literal["keypad"]]
    key: Annotated[str | None, Shape("text", null=True), Slot(("A",), "key")]
    arg: Annotated[int | str | None, Shape("arg"), Slot(("B",))]


class ShotEndEvent(_Event, total=False):
    type: Required[Literal["shot_end"]]
    balls: Layout
    certain: Annotated[bool, Shape("flag"), Slot(("FLAGS",), "certain")]
    interrupted: Annotated[bool, Shape("flag"), Slot(("FLAGS",), "interrupted")]
    paths: Annotated[dict[str, list[list[float]]] | None, Shape("paths", null=True), Built("paths")]


class RestEvent(_Event, total=False):
    type: Required[Literal["rest"]]
    balls: Layout
    frozen: Resting


class ShotStartEvent(_Event, total=False):
    type: Required[Literal["shot_start"]]
    cue_ball: Ball
    balls: Layout
    frozen: Resting


class CueContactEvent(_Event, total=False):
    type: Required[Literal["cue_contact"]]
    duration_us: Annotated[float, Num(0, 1e9), Slot(("A",))]
    force_n: Annotated[float, Num(0, 1e6), Slot(("B",), "tenth")]


class BallContactEvent(_Event, total=False):
    type: Required[Literal["ball_contact"]]
    balls: Required[
        Annotated[list[int | None], Shape("two_balls"), Slot(("BALL", "A"), "ball_pair")]
    ]


class CushionEvent(_Event, total=False):
    type: Required[Literal["cushion"]]
    ball: Required[Ball]
    cushion: Required[Side]
    # too soft for the rails: the tracker saw the touch ...
    source: Annotated[Literal["tracker"], Slot(("B",), "tracker_source")]
    # ... at a pocket's mouth before the frames could decide: it may have been (C; only a
    # touch the tracker saw carries the doubt)
    certain: Annotated[bool, Slot(("B", "C"), "touch_uncertain")]


class PocketEvent(_Event, total=False):
    type: Required[Literal["pocket"]]
    ball: Required[Ball]
    pocket: Required[Side]
    colour: Annotated[str | None, OneOf((*COLOURS, None)), Slot(("B",), "colour")]


class LineCrossEvent(_Event, total=False):
    type: Required[Literal["line_cross"]]
    ball: Required[Ball]
    line: Required[Annotated[str, OneOf(LINE_NAMES), Slot(("A",), "line")]]
    direction: Annotated[str | None, OneOf((*DIRECTIONS, None)), Slot(("B",), "direction")]
    # written (false) only when in doubt: the ball stopped within the curtain's ambiguity, the
    # tracker undecided
    certain: Annotated[bool, Slot(("C",), "uncertain")]


class BallMovedEvent(_Event, total=False):
    type: Required[Literal["ball_moved"]]
    ball: Ball


#: every event type, in code order
EVENT_TYPES: tuple[type, ...] = (
    BootEvent,
    NodeStatusEvent,
    KeypadEvent,
    ShotEndEvent,
    RestEvent,
    ShotStartEvent,
    CueContactEvent,
    BallContactEvent,
    CushionEvent,
    PocketEvent,
    LineCrossEvent,
    BallMovedEvent,
)
Event = (
    BootEvent
    | NodeStatusEvent
    | KeypadEvent
    | ShotEndEvent
    | RestEvent
    | ShotStartEvent
    | CueContactEvent
    | BallContactEvent
    | CushionEvent
    | PocketEvent
    | LineCrossEvent
    | BallMovedEvent
)
#: the events a running shot collects, judged at its end (a tip or ball contact also at once)
InShotEvent = CueContactEvent | BallContactEvent | CushionEvent | PocketEvent | LineCrossEvent
COMMON_KEYS = ("t_us", "type", "shot")


class Key(NamedTuple):
    """One key of one event type, its metadata read out of the TypedDict."""

    name: str
    needed: bool  # the rules cannot judge the event without it
    check: Check | None  # what judge checks (None: a key EVENTS.md's table does not name)
    fill: Slot | Built  # how the fusion's record becomes it


def _read(typed: type) -> tuple[str, tuple[Key, ...]]:
    """A TypedDict's name (its ``type`` Literal) and its own keys, from the annotations."""
    hints = dict(typed.__annotations__)
    (name,) = get_args(get_args(hints["type"])[0])
    keys = []
    for key, hint in hints.items():
        if key in COMMON_KEYS:
            continue
        while get_origin(hint) in (Required, NotRequired):
            (hint,) = get_args(hint)
        meta = getattr(hint, "__metadata__", ())
        check = next((m for m in meta if isinstance(m, Int | Num | OneOf | Shape)), None)
        fill = next(m for m in meta if isinstance(m, Slot | Built))
        keys.append(Key(key, key in typed.__required_keys__, check, fill))  # type: ignore[attr-defined]
    return name, tuple(keys)


_READ = tuple(_read(t) for t in EVENT_TYPES)
NAMES = tuple(name for name, _ in _READ)
CODES = {name: code for code, name in enumerate(NAMES)}
#: type -> its keys beyond t_us, type and shot, in the order the fusion writes them
KEYS = dict(_READ)
#: type -> the keys the engine needs beyond t_us and type (types that need none: absent)
NEEDED_KEYS = {
    name: need for name, keys in KEYS.items() if (need := tuple(k.name for k in keys if k.needed))
}
