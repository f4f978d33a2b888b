"""The club's page: every table on the broker at once, in a browser.

It subscribes to every table's club/+/verdict, state, … (never a command: those carry
the referee's token) on the broker (a persistent session, so that nothing
is missed while it restarts) and serves a page with a card per table: its
match state, its last verdicts with their rules, the lamp, its health and
whether it is online (a table that vanishes is marked OFFLINE by its last
will).  A table's name links to that table's own live page when the table
runs with --web.  The referee controls on each card go to that table over
the broker; the table checks its referee token and acts once per command.
Runs until interrupted (status 128 + the signal).  docs/club.md.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..cli.args import UsageError
from ..cli.options import add_broker_arguments, broker_settings, web_address

EXAMPLES = """\
  firmware-host club --mqtt mqtt://127.0.0.1:1883 --web 8090
  firmware-host club --mqtt mqtts://broker.hall --mqtt-username club --mqtt-ca ca.crt --web 0.0.0.0:80
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_broker_arguments(parser, "the club's broker: mqtt://HOST[:PORT] or mqtts:// (required)")
    parser.add_argument(
        "--web",
        type=web_address,
        default="127.0.0.1:8090",
        metavar="[HOST:]PORT",
        help="serve the page on HOST (127.0.0.1 when left out) and PORT (0: any free one; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--client-id",
        default="club-page",
        metavar="NAME",
        help="the broker session's name: one per club page (default club-page)",
    )


def run(args: argparse.Namespace) -> int:
    if args.mqtt is None:
        raise UsageError("--mqtt URL: the broker is required")
    try:
        from ..mqtt.club import Club
        from ..mqtt.club_page import ClubFeed, ClubServer
    except ModuleNotFoundError as exc:
        raise UsageError(f"club needs {exc.name}: pip install -e '.[mqtt]'") from None
    url, password, tls = broker_settings(args)
    feed = ClubFeed()
    club = feed.club = Club(url, feed.message, client_id=args.client_id, password=password, tls=tls)
    host, port = args.web
    server = ClubServer(feed, host, port)
    try:
        port = server.start()
    except OSError as exc:
        raise UsageError(f"--web {host}:{port}: cannot listen: {exc.strerror or exc}") from None
    club.start()
    sys.stderr.write(f"firmware-host club: club page: http://{host}:{port}/ (broker {url})\n")
    sys.stderr.flush()
    try:
        while True:
            time.sleep(3600)
    finally:
        server.stop()
        club.close()
