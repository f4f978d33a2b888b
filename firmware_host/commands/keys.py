"""Make the table's signing key (ICD §9): ``keys new FILE``.

Writes 32 random bytes from the operating system as 64 hex digits into a
new file of mode 0600 (an existing file is never replaced: a table paired
with the old key would stop being heard).  The key itself is never
printed; the command says where it went and its fingerprint, which
``status`` and the daemon's log show to tell keys apart.  Give the file as
``[signing] key_file`` in the config (``run`` then sends SETUP_SIGNING at
connect) or as ``--key-file`` to ``replay``, ``events`` and ``decode``.
"""

from __future__ import annotations

import argparse
import sys

EXAMPLES = """\
  firmware-host keys new /etc/firmware-host/table.key
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = sub.add_parser("new", help="write a new key file (mode 0600)")
    new.add_argument("file", metavar="FILE", help="where the key goes; must not exist yet")


def run(args: argparse.Namespace) -> int:
    from protocol.signing import fingerprint, new_key

    from ..cli.args import UsageError
    from ..keys import write_key_file

    key = new_key()
    try:
        write_key_file(args.file, key)
    except FileExistsError:
        raise UsageError(f"{args.file}: exists; a key file is never replaced") from None
    except OSError as exc:
        raise UsageError(f"{args.file}: {exc.strerror}") from None
    sys.stdout.write(f"{args.file}: new table key, fingerprint {fingerprint(key)} (mode 0600)\n")
    return 0
