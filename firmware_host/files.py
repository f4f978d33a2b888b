"""Files read and written where someone careless (or hostile) may have put something else.

A status file path that names a FIFO hung ``config check``; ``/dev/zero``
ran ``status`` out of memory; a directory named like a recording part
crashed ``run`` into a restart loop; ``pcap in.bin -o in.bin`` overwrote the
capture it read, and a symlink planted where the status file's predictable
temporary name would go clobbered another file.  So:

* :func:`read_small` opens without blocking (a FIFO does not hang the open),
  checks that it is a regular file no bigger than asked, then reads it;
* :func:`is_regular` says whether a path is a regular file, without opening it;
* :func:`replace_atomically` writes a new file beside the target under an
  unpredictable name (``O_EXCL``: never through a planted symlink) and renames
  it over the target (which replaces a symlink there, never follows it); it
  refuses a target that is one of the inputs.

Each problem is an :class:`OSError` whose text says it in words.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO


class NotAFile(OSError):
    """Not a regular file, too big, or the input itself: ``str()`` says which."""


def read_small(path: str | Path, max_bytes: int) -> bytes:
    """The whole of a regular file of at most ``max_bytes`` (a FIFO, a device, a directory
    or a bigger file is :class:`NotAFile`; a missing one FileNotFoundError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(f"not a regular file ({kind_of(info.st_mode)})")
        if info.st_size > max_bytes:
            raise NotAFile(f"{info.st_size} bytes, more than the {max_bytes} such a file holds")
        with os.fdopen(os.dup(fd), "rb") as source:
            data = source.read(max_bytes + 1)
        if len(data) > max_bytes:  # (grew while read)
            raise NotAFile(f"more than the {max_bytes} bytes such a file holds")
        return data
    finally:
        os.close(fd)


def is_regular(path: str | Path) -> bool:
    """A regular file (a symlink to one counts), not a directory, FIFO or device."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def same_file(a: str | Path, b: str | Path) -> bool:
    """``a`` and ``b`` are the same file (a hard link or a symlink of it too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def not_an_input(target: str | Path, inputs: Iterable[str | Path]) -> None:
    """:class:`NotAFile` if ``target`` is one of ``inputs`` (by any name): check it before
    the work that would end in overwriting it."""
    for source in inputs:
        if same_file(source, target):
            raise NotAFile(f"is the input {source}: it would be overwritten")


@contextlib.contextmanager
def replace_atomically(target: str | Path, inputs: Iterable[str | Path] = ()) -> Iterator[BinaryIO]:
    """A binary file to write; renamed over ``target`` when the block ends without an error
    (removed if it raises).  A reader sees the old file or the new one, never half; a
    symlink at ``target`` is replaced, not followed; ``target`` being one of ``inputs`` is
    :class:`NotAFile` before anything is written."""
    target = Path(target)
    not_an_input(target, inputs)
    if target.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(target))
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o644)  # as a plain create would make it (mkstemp's is 0600)
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def kind_of(mode: int) -> str:
    """What a path is, in words, for the one line that refuses it (``st_mode`` of a stat)."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "another kind of file"
