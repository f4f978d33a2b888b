"""The rules' own words for a verdict's rule: the working translation and the Russian original.

A report cites each rule a verdict names, in English (RULES.md's working
translation) and in the original (``rules-ru-items-8-20.txt``, the
authority).  Both texts ship with the package (``texts/``, copied from
``../shared``) so that a report is made anywhere.  A verdict's rule is cited
by its item: ``"20(2)(b)"`` and ``"20 note 2"`` by item 20, ``"12.1(3)"`` by
12.1, ``"19.2"`` by 19.2.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_RU_ITEM = re.compile(r"^(\d+(?:\.\d+)?)\.\s")
_EN_ITEM = re.compile(r"\*\*(\d+(?:\.\d+)?)\*\*")


def item_of(rule: str) -> str:
    """``"20(2)(b)"`` -> ``"20"``; ``"12.1(3)"`` -> ``"12.1"``; ``"20 note 2"`` -> ``"20"``."""
    match = re.match(r"\d+(?:\.\d+)?", rule)
    return match.group(0) if match else rule


def _text(name: str) -> str:
    return resources.files(__package__).joinpath("texts", name).read_text(encoding="utf-8")


@cache
def russian() -> dict[str, str]:
    """Item -> its original text; an item ``N`` holds its sub-items (``20`` is all of 20)."""
    items: dict[str, list[str]] = {}
    open_: list[str] = []
    for line in _text("rules-ru-items-8-20.txt").splitlines():
        match = _RU_ITEM.match(line)
        if match:
            item = match.group(1)
            top = item.split(".")[0]
            open_ = [top, item] if "." in item else [item]
        for item in open_:
            items.setdefault(item, []).append(line)
    return {k: "\n".join(v).strip() for k, v in items.items()}


@cache
def english() -> dict[str, str]:
    """Item -> its working translation; ``N`` holds its sub-items too."""
    body = _text("rules-en-items-8-20.md").split("\n", 1)[1]
    text = " ".join(body.split())
    items: dict[str, list[str]] = {}
    marks = list(_EN_ITEM.finditer(text))
    for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
        item = mark.group(1)
        said = text[mark.start() : nxt.start() if nxt else len(text)].strip()
        for key in {item, item.split(".")[0]}:
            items.setdefault(key, []).append(said)
    return {k: " ".join(v).replace("**", "") for k, v in items.items()}


def cite(rule: str) -> tuple[str, str]:
    """(English, Russian) for a verdict's rule; empty strings where the texts have none."""
    item = item_of(rule)
    return english().get(item, ""), russian().get(item, "")
