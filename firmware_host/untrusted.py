"""What a peer sends, made safe before anything else looks at it (docs/security.md).

Every edge takes bytes from someone who may be hostile: a message on the
club's broker, a body POSTed to a page, a node's LOG text.  ``json.loads``
alone is not enough there: it accepts ``NaN`` (which a browser's
``JSON.parse`` then refuses), nests until it raises ``RecursionError``
(not a ``ValueError``, so a handler that catches only that dies of it), and
reads any size.  :func:`json_object` checks the size first, then parses with
no NaN or Infinity, then checks the depth, and every refusal is one
:class:`Refused` with its reason in words, for the caller to count and say.

>>> json_object(b'{"a": [1, 2]}', max_bytes=100)
{'a': [1, 2]}
>>> try:
...     json_object(b'{"a": NaN}', max_bytes=100)
... except Refused as exc:
...     print(exc)
NaN is not a number JSON allows
>>> log_text("ok\\n\\x1b[2Jforged")
'ok\\\\n\\\\x1b[2Jforged'
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 16  # the deepest message any edge sends is 4 levels (health's nodes)
LOG_TEXT_MAX = 512  # characters of a peer's text in one log line
LARGEST = 2**63  # no number any edge sends is this big (and a float of it is finite)
BURST = 5  # refusals logged one by one per window, per kind of refusal ...
WINDOW_S = 60.0  # ... then summed, by source, at the window's end
SUMMARY_SOURCES = 20  # sources named in one summary line (the busiest first)


NONE = type(None)
Spec = dict[str, Any]  # field -> a tuple of types, a ListOf, or a Spec (an object or null)


class Refused(ValueError):
    """A payload not taken; ``str()`` says why (``"invalid JSON"``, ``"nested too deeply"``)."""


def _no_constant(name: str) -> Any:
    raise Refused(f"{name} is not a number JSON allows")


def json_object(payload: bytes | str, max_bytes: int, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """One JSON object from ``payload``, at most ``max_bytes`` long and ``max_depth`` deep."""
    if len(payload) > max_bytes:
        raise Refused(f"{len(payload)} bytes, over the {max_bytes} allowed")
    try:
        found = json.loads(payload, parse_constant=_no_constant)
    except Refused:
        raise
    except RecursionError:
        raise Refused("nested too deeply") from None
    except ValueError:  # not UTF-8, not JSON, an integer of thousands of digits
        raise Refused("invalid JSON") from None
    if not isinstance(found, dict):
        raise Refused("not a JSON object")
    check_depth(found, max_depth)
    return found


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Refuse lists and objects nested deeper than ``max_depth`` (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list):
                if depth >= max_depth:
                    raise Refused(f"nested deeper than {max_depth}")
                stack.append((child, depth + 1))


class ListOf:
    """A field that is a list of these types (``rules``, ``problems``)."""

    def __init__(self, *types: type) -> None:
        self.types = types


class DictOf:
    """A field that is an object whose keys are all ``keys`` (a regular expression) and whose
    values are all one spec: a tuple of types, or a Spec of an object (``nodes``)."""

    def __init__(self, values: Any, keys: str = ".*") -> None:
        self.values = values
        self.keys = re.compile(keys)


def check_shape(obj: dict[str, Any], spec: Spec, where: str = "") -> None:
    """Each field ``spec`` names, where present, has one of its types (an absent one is
    left to the reader, as the page does)."""
    for name, want in spec.items():
        if name not in obj:
            continue
        value, at = obj[name], f"{where}{name}"
        if isinstance(want, dict):
            if value is not None and not isinstance(value, dict):
                raise Refused(f'"{at}" must be an object or null')
            if value is not None:
                check_shape(value, want, f"{at}.")
        elif isinstance(want, DictOf):
            if not isinstance(value, dict):
                raise Refused(f'"{at}" must be an object')
            for key, item in value.items():
                if not want.keys.fullmatch(key):
                    raise Refused(f'"{at}" has a key {key[:40]!r} it cannot have')
                if isinstance(want.values, dict) and not isinstance(item, dict):
                    raise Refused(f'"{at}.{key[:40]}" must be an object')
                check_shape({key: item}, {key: want.values}, f"{at}.")
        elif isinstance(want, ListOf):
            if not isinstance(value, list) or not all(isinstance(v, want.types) for v in value):
                raise Refused(f'"{at}" must be a list of {want.types[0].__name__}')
        elif not isinstance(value, want) or (bool not in want and isinstance(value, bool)):
            raise Refused(f'"{at}" must be {" or ".join(_name(t) for t in want)}')
        elif isinstance(value, int | float) and not -LARGEST < value < LARGEST:
            raise Refused(f'"{at}" is out of range')


def _name(kind: type) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(
        kind, "null" if kind is NONE else kind.__name__
    )


def log_text(text: str, limit: int = LOG_TEXT_MAX) -> str:
    """A peer's text for one log line: control characters (newlines, terminal escapes) and
    the backslash written as escapes, so it can neither forge a line nor drive a terminal,
    and reads back unambiguously; cut at ``limit``."""
    cut = text[:limit]
    shown = "".join(
        c if c.isprintable() and c != "\\" else c.encode("unicode_escape").decode() for c in cut
    )
    return shown + (f"… ({len(text) - limit} more characters)" if len(text) > limit else "")


class Refusals:
    """Refusals counted by reason, and logged with who sent them: never silenced, never a flood.

    The first ``burst`` in a window are a line each (``control refused from
    10.0.0.5: wrong token``); the rest are summed per source and reason and
    said in one line when the window ends, busiest sources first, whether
    or not another refusal comes.  The journal's own rate limit (and
    :class:`~firmware_host.lograte.RateLimit`, which would drop a repeated line's
    address) never has to drop one.  ``counts`` is for health.
    """

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        burst: int = BURST,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = logger
        self.what = what
        self.burst = burst
        self.window_s = window_s
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self._held: Counter[tuple[str, str]] = Counter()
        self._started = -window_s
        self._shown = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def add(self, source: str, reason: str) -> None:
        """One refusal of ``source`` (an address, a topic) for ``reason`` (a short phrase)."""
        with self._lock:
            self.counts[reason] += 1
            now = self.clock()
            if now - self._started >= self.window_s:
                self._say_held()
                self._started, self._shown = now, 0
            if self._shown < self.burst:
                self._shown += 1
                self.log.warning(f"{self.what} refused from %s: %s", source, reason)
                return
            self._held[(source, reason)] += 1
            if self._timer is None:
                self._timer = threading.Timer(self._started + self.window_s - now, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Say what is held now (the window's end; and at a stop)."""
        with self._lock:
            self._say_held()

    def _say_held(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._held:
            return
        busiest = self._held.most_common()
        named = "; ".join(f"{src}: {why} x{n}" for (src, why), n in busiest[:SUMMARY_SOURCES])
        others = len(busiest) - SUMMARY_SOURCES
        more = f"; and {others} more sources" if others > 0 else ""
        self.log.warning(
            f"{self.what}: %d more refused in the last %g s: %s%s",
            sum(self._held.values()),
            self.window_s,
            named,
            more,
        )
        self._held.clear()
