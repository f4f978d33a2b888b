"""``decode --where``: filter expressions on a frame's fields, parsed, never evaluated.

The expression is Python's own comparison syntax, parsed by :func:`ast.parse`
and walked node by node against a whitelist; nothing is ever compiled or
``eval``'d, so ``__import__('os')`` is a syntax the filter refuses, not code
it runs::

    amplitude>1000 and cushion==2
    node=="cue" or type in ("KEYPAD", "LOG")
    not duplicate and seq_gap > 0
    cushion == "back"              # a field with value names (ICD §6) takes its name

Names are a frame's header fields (``node``, ``seq``, ``t_us``, ``flags``,
``offset``, ``type``), what the listing adds (``time``: the ``--time`` axis
in seconds; ``mark``: the sequence mark, e.g. ``"gap"``; ``seq_gap``;
``status``: ``"ok"``, ``"duplicate"``, ``"unknown"`` or a bad frame's
reason; ``duplicate``) and every payload field of the catalogue.  A frame
without a field (a HEARTBEAT has no ``amplitude``) fails every comparison
with it, as jq's ``null`` does.  Allowed: ``and or not``, ``== != < <= >
>= in not in``, unary minus, numbers, strings, tuples or lists of them.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable
from typing import Any

from protocol.catalogue import MESSAGES, NODE_NAMES, Header

from .names import VALUE_NAMES

Record = dict[str, Any]
Test = Callable[[Record], Any]
_MISSING = object()
LISTING_NAMES = ("offset", "type", "time", "mark", "seq_gap", "status", "duplicate")
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class WhereError(ValueError):
    """An expression the filter refuses; the message says what and where."""


def field_names() -> list[str]:
    """Every name an expression may use."""
    names = [sub.name for sub in Header.subcons] + list(LISTING_NAMES)
    for spec in MESSAGES:
        names += [sub.name for sub in spec.payload.subcons if sub.name not in names]
    return names


def _named(field: str) -> dict[str, int]:
    """A field's value names, lower-cased: ``"back"`` for cushion 3, ``"cue"`` for node 3."""
    if field in ("node", "peer"):
        return {name.lower(): v for v, name in NODE_NAMES.items()}
    names: dict[str, int] = {}
    for (_, name), values in VALUE_NAMES.items():
        if name == field:
            names |= {text.lower(): v for v, text in values.items()}
    return names


def compile_where(text: str) -> Test:
    """The expression as a test of a record (a frame's fields by name); WhereError if it is
    not one the filter allows."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise WhereError(f"{text!r}: not an expression (column {exc.offset})") from None
    return _node(tree.body, set(field_names()))


def _node(node: ast.AST, names: set[str]) -> Test:
    if isinstance(node, ast.BoolOp):
        parts = [_node(v, names) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda r: all(p(r) for p in parts)
        return lambda r: any(p(r) for p in parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _node(node.operand, names)
        return lambda r: not inner(r)
    if isinstance(node, ast.Compare):
        return _comparison(node, names)
    if isinstance(node, ast.Name):
        name = _name(node, names)
        return lambda r: bool(r.get(name))
    raise WhereError(f"{ast.unparse(node)!r}: not a comparison (use == != < <= > >= in)")


def _comparison(node: ast.Compare, names: set[str]) -> Test:
    """``a < b <= c``: each link a test; a missing field fails it; a string compared with
    a field that has value names is the value of that name."""
    terms = [node.left, *node.comparators]
    links = []
    for (left, right), op in zip(itertools.pairwise(terms), node.ops, strict=True):
        if type(op) not in _COMPARE:
            raise WhereError(f"{ast.unparse(node)!r}: {type(op).__name__} is not allowed")
        field = next((t.id for t in (left, right) if isinstance(t, ast.Name)), None)
        links.append((_value(left, names, field), _COMPARE[type(op)], _value(right, names, field)))

    def test(record: Record) -> bool:
        for left, compare, right in links:
            a, b = left(record), right(record)
            if a is _MISSING or b is _MISSING:
                return False
            try:
                if not compare(a, b):
                    return False
            except TypeError:  # a number against a string: no match, as jq
                return False
        return True

    return test


def _value(node: ast.AST, names: set[str], field: str | None) -> Callable[[Record], Any]:
    if isinstance(node, ast.Name):
        name = _name(node, names)
        return lambda r: r.get(name, _MISSING)
    constant = _constant(node, field)
    return lambda r: constant


def _constant(node: ast.AST, field: str | None) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
        if isinstance(node.value, bool):
            return int(node.value)
        if isinstance(node.value, str) and field is not None:
            return _by_name(node.value, field)
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _constant(node.operand, None)
        if isinstance(value, int | float):
            return -value
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_constant(e, field) for e in node.elts)
    raise WhereError(f"{ast.unparse(node)!r}: not a number, a string or a tuple of them")


def _by_name(text: str, field: str) -> Any:
    """A string against a field with value names is that value (``"back"`` is 3); against
    a text field (type, mark, status, LOG's text) it stays a string."""
    if field in ("type", "mark", "status"):
        return text.upper() if field == "type" else text.lower()
    named = _named(field)
    if not named:
        return text
    if text.lower() not in named:
        raise WhereError(f"{field}=={text!r}: no such name (one of {', '.join(sorted(named))})")
    return named[text.lower()]


def _name(node: ast.Name, names: set[str]) -> str:
    if node.id not in names:
        raise WhereError(f"{node.id}: no such field (fields: {', '.join(sorted(names))})")
    return node.id
