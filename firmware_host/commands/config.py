"""Check the daemon's config file, or write an example one (docs/config.md).

config check FILE reads a TOML file as run --config FILE would, and prints
the effective settings, the file's over the defaults, one section.key = value
per line (TOML: the output can be saved as a config file; a key with no value
is a comment, a secret one is shown as ***).  It takes run's options too, to
show how they override the file.  A problem is one line on stderr naming the
file, the key, the value and what is wrong, exit status 2.

config check fails (one line, exit status 2) when the file names no [link]
port: a table's config is for a real table, and run --config refuses to
start without one (--virtual, given to both, plays the virtual table).

config example prints a commented file with every key, its meaning and its
default; run's options given to it set their keys (config example --port
/dev/serial/by-id/... writes a file that config check accepts).  A file that is
valid but cannot work with the club's documented broker (docs/club.md: the broker
user is the table id) is said on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import sys

EXAMPLES = """\
  firmware-host config example --port /dev/ttyUSB0 > table.toml
  firmware-host config check table.toml
  firmware-host config check table.toml --near-gap 12 | grep rules.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..cli.options import add_settings

    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = sub.add_parser(
        "check",
        help="check a config file and print the effective settings",
        description=__doc__,
    )
    check.add_argument("config", metavar="FILE", help="the TOML config file to check")
    add_settings(check)
    example = sub.add_parser(
        "example",
        help="print a commented example config file",
        description=__doc__,
    )
    add_settings(example)


def run(args: argparse.Namespace) -> int:
    from ..cli.config_file import effective, example
    from ..cli.options import add_settings, check_link

    if args.action == "example":
        parser = argparse.ArgumentParser()
        add_settings(parser)
        parser.set_defaults(**vars(args))  # the options given: their keys set in the file
        sys.stdout.write(example(parser))
        return 0
    check_link(args)
    sys.stdout.write("".join(f"{line}\n" for line in effective(args)))
    warning = club_user_warning(args)
    if warning:
        sys.stderr.write(f"firmware-host config: {args.config}: {warning}\n")
        return 1
    return 0


def club_user_warning(args: argparse.Namespace) -> str | None:
    """A broker user that is not the table id: on the documented ACL (a table's user writes
    only club/<user>/...) the broker refuses every message the table publishes."""
    if args.mqtt is None or args.table_id is None:
        return None
    from ..mqtt.topics import broker_url

    user = args.mqtt_username or broker_url(args.mqtt).username
    if user is None or user == args.table_id:
        return None
    return (
        f"[mqtt] username {user!r} is not the table id {args.table_id!r}: the club's ACL "
        f"(docs/club/mosquitto.acl) lets a table's user write only club/<user>/..., so the "
        f"broker would refuse every message of club/{args.table_id}/ (leave username out: "
        "it defaults to the table id)"
    )
