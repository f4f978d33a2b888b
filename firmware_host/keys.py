"""The table's signing key on the host side (ICD §9, docs/security.md).

A key file holds the 32-byte key as 64 hex digits and one newline.  It is
made by ``firmware-host keys new`` with mode 0600, and a key file that its
group or others may read or write is refused: a key anyone on the host can
read signs forged frames as well as the table's.  The key is never printed,
logged or written anywhere else; what may be shown is its fingerprint
(:func:`protocol.signing.fingerprint`).

>>> parse_require("cue,keypad") == (1 << 3) | (1 << 7)
True
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from protocol.catalogue import KEY_SIZE, NODE_IDS
from protocol.signing import HOST_BIT, require_bit

from .files import NotAFile, read_small

KEY_FILE_MODE = 0o600


class KeyFileError(Exception):
    """An unusable key file or require list: one line, exit status 2."""


def read_key_file(path: str | Path) -> bytes:
    """The key in ``path``, refused unless only its owner may read it."""
    try:
        info = os.stat(path)
        if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
            raise KeyFileError(
                f"{path}: a key file others may read (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"chmod 600 {path}"
            )
        text = read_small(path, 4 * KEY_SIZE).decode("ascii").strip()
        key = bytes.fromhex(text)
    except (OSError, NotAFile) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise KeyFileError(f"{path}: {why}") from None
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != KEY_SIZE:
        raise KeyFileError(
            f"{path}: not a key file ({2 * KEY_SIZE} hex digits, from firmware-host keys new)"
        )
    return key


def write_key_file(path: str | Path, key: bytes) -> None:
    """A new key file, mode 0600 from its creation on; an existing file is never replaced
    (a table paired with the old key would stop being heard)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, KEY_FILE_MODE)
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")


def state_dir() -> Path:
    """Where the daemon keeps what must survive it (the signing counters): the user's
    state directory, as the broker's spool (``$XDG_STATE_HOME/firmware-host``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "firmware-host"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def parse_require(text: str) -> int:
    """A ``require`` mask from node names (``cue,keypad,host``) or a number (``0x8088``)."""
    text = text.strip()
    try:
        mask = int(text, 0)
    except ValueError:
        mask = 0
        for name in filter(None, (part.strip() for part in text.split(","))):
            if name not in NODE_IDS:
                names = ", ".join(NODE_IDS)
                raise KeyFileError(f"require: {name!r} is not a node (one of: {names})") from None
            mask |= require_bit(NODE_IDS[name])
        return mask
    if not 0 <= mask <= 0xFFFF or mask & ~((1 << 8) - 1 | 1 << HOST_BIT):
        raise KeyFileError(f"require: {text}: bits 0-7 (nodes) and 15 (host) only")
    return mask
