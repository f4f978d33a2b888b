"""The captures of a corpus, grouped into recordings whose parts replay as one stream.

A daemon's recording rotates into parts (``capture-20261130-133500-0001.bin``,
``-0002.bin``, …) and a restarted daemon resumes the match from every part
of the same UTC day in its folder (:mod:`firmware_host.service.resume`), so
the verdicts it gave rest on all of them, in name order.  A regression must
replay them the same way: one :class:`Recording` per folder, prefix and day,
its parts in order.  Any other ``.bin`` (a HIL corpus case, a capture cut
by hand) is a recording of one part.

Paths are fsspec URLs as well as plain paths, so the corpus may be on
shared storage (``/mnt/club``) or in object storage (``s3://club/2026``):
only listing and opening go through fsspec.

>>> [r.name for r in find_recordings(["hil_tests/corpus"])][:1]  # doctest: +SKIP
['ball_nudged_17.full.bin']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: ``PREFIX-YYYYmmdd-HHMMSS-NNNN.bin``, as :func:`firmware_host.link.recorder.part_name` writes it
PART_NAME = re.compile(r"^(?P<prefix>.+)-(?P<day>\d{8})-(?P<time>\d{6})-(?P<part>\d{4,})\.bin$")


class CorpusError(ValueError):
    """A corpus argument that names nothing usable (one line for the command to say)."""


@dataclass(frozen=True)
class Part:
    url: str  # as fsspec opens it (a plain path for a local file)
    size: int  # bytes


@dataclass(frozen=True)
class Recording:
    """One stream of bytes as the daemon judged it: ``parts`` in stream order."""

    name: str  # relative to its corpus argument: stable across machines and runs
    parts: tuple[Part, ...]

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)


def filesystem(url: str) -> tuple[Any, str]:
    """fsspec's file system for ``url`` and the path inside it."""
    from fsspec.core import url_to_fs

    return url_to_fs(url)


def _protocol_prefix(url: str) -> str:
    """What to put back before a path fsspec lists (it drops ``s3://``), so it opens anywhere."""
    return "" if "://" not in url else url.split("://", 1)[0] + "://"


def find_recordings(corpora: Sequence[str]) -> list[Recording]:
    """Every recording below the ``corpora`` (files or folders, searched recursively).

    Names must be unique across the arguments: two corpora that both hold
    ``a/x.bin`` are an error, since the results are keyed by name.
    """
    found: dict[str, Recording] = {}
    for corpus in corpora:
        for rec in _recordings_of(corpus):
            if rec.name in found:
                raise CorpusError(f"{corpus}: {rec.name} is also in an earlier corpus argument")
            found[rec.name] = rec
    return sorted(found.values(), key=lambda r: r.name)


def _recordings_of(corpus: str) -> list[Recording]:
    fs, root = filesystem(corpus)
    if not fs.exists(root):
        raise CorpusError(f"{corpus}: no such file or folder")
    prefix = _protocol_prefix(corpus)
    if fs.isdir(root):
        listing = fs.find(root, detail=True)
        base = root.rstrip("/") + "/"
    else:
        listing = {root: fs.info(root)}
        base = root.rsplit("/", 1)[0] + "/" if "/" in root else ""
    files = {
        path[len(base) :]: Part(prefix + path, int(info.get("size") or 0))
        for path, info in listing.items()
        if path.endswith(".bin") and info.get("type", "file") == "file"
    }
    if not files:
        raise CorpusError(f"{corpus}: no .bin capture in it")
    groups: dict[str, list[tuple[str, Part]]] = {}
    for rel, part in files.items():
        folder, _, name = rel.rpartition("/")
        m = PART_NAME.match(name)
        # a rotated recording: every part of one day and prefix in one folder is one stream
        key = f"{folder}/{m['prefix']}-{m['day']}".lstrip("/") if m else rel
        groups.setdefault(key, []).append((name, part))
    return [
        Recording(key, tuple(part for _, part in sorted(parts))) for key, parts in groups.items()
    ]
