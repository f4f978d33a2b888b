"""The event types of EVENTS.md, once: their codes and the keys the rules need.

What ``protocol/catalogue.py`` is for frames, this is for the fusion's
events, so the schema is not written again in each place that reads or
writes it:

* the fusion kernel's type codes (``fusion/records.py``: ``EV_*``) and the
  names ``to_dict`` writes (``EVENT_NAMES``) are :data:`CODES` and
  :data:`NAMES`;
* the keys the referee needs before it uses an event (``rules.referee``'s
  ``NEEDED_KEYS``) and the keys ``judge`` requires of a line
  (``firmware_host/cli/eventcheck.py``) are :data:`NEEDED_KEYS`;
* ``judge``'s check of each key's range stays beside its messages in
  ``eventcheck.py``, keyed by these names (a test holds the two in step).

The order is the kernel's: events of one hub time are written in code
order (a shot ends before the next starts; a shot starts before its tip
contact).  Pure data, no numpy: ``rules/`` stays free of I/O and numba, and
the fusion imports it from below.
"""

from __future__ import annotations

from typing import NamedTuple


class EventType(NamedTuple):
    name: str  # the "type" of the EVENTS.md line
    needs: tuple[str, ...] = ()  # keys the rules cannot judge the event without


#: every event type, in code order
EVENT_TYPES = (
    EventType("boot"),
    EventType("node_status"),
    EventType("keypad"),
    EventType("shot_end"),
    EventType("rest"),
    EventType("shot_start"),
    EventType("cue_contact"),
    EventType("ball_contact", ("balls",)),
    EventType("cushion", ("ball", "cushion")),
    EventType("pocket", ("ball", "pocket")),
    EventType("line_cross", ("ball", "line")),
    EventType("ball_moved"),
)
NAMES = tuple(e.name for e in EVENT_TYPES)
CODES = {e.name: code for code, e in enumerate(EVENT_TYPES)}
NEEDED_KEYS = {e.name: e.needs for e in EVENT_TYPES if e.needs}
