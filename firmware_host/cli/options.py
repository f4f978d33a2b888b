"""The option groups several commands share, so that no command imports another.

``run``'s settings (also what ``config check`` takes as overrides), the
club's broker options (``run`` and ``club``), the virtual table's match
(``run``, ``simulate`` and ``club-sim``), the frame selection (``decode`` and
``monitor``) and the link to one table (``send`` and ``ping``): each
defined once, here, with its checks.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .args import (
    SEED_MAX,
    UsageError,
    add_port_arguments,
    add_rules_arguments,
    add_signing_arguments,
    finite_float,
    int_in,
    table_id,
)

SENSOR_SETS = ("minimum", "middle", "full")


MAX_MINUTES = 24 * 60.0  # a random match of a day is already a long test
MIN_SPEED, MAX_SPEED = 0.01, 1000.0

# The shared option types: `run` passes these options on to its virtual table.
SEED = int_in(0, SEED_MAX)
MINUTES = finite_float(0, MAX_MINUTES, lo_open=True)
SPEED = finite_float(MIN_SPEED, MAX_SPEED)


def add_virtual_match(
    group: Any,
    seed_help: str = "random match seed (default 0)",
    speed: float = 10.0,
    speed_help: str = "play this many times real time (default 10)",
) -> None:
    """The virtual table's match as ``run`` and ``club-sim`` take it (a daemon refereeing
    virtual tables): the seed, the length, the pace (10x by default) and the sensors."""
    group.add_argument("--seed", type=SEED, default=0, help=seed_help)
    group.add_argument(
        "--minutes", type=MINUTES, default=2.0, help="random match length (default 2)"
    )
    group.add_argument("--speed", type=SPEED, default=speed, help=speed_help)
    group.add_argument(
        "--sensors", choices=SENSOR_SETS, default="full", help="the virtual table's sensor set"
    )


MAX_DURATION_S = 366 * 86_400.0


def web_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` for ``--web``: the host defaults to this machine only."""
    host, _, port = text.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not [HOST:]PORT") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be 0 to 65535")
    return host or "127.0.0.1", number


web_address.takes_text = True  # type: ignore[attr-defined]  # the config file gives it a string


def mqtt_url(text: str) -> str:
    """``--mqtt``: ``mqtt://[USER[:PASSWORD]@]HOST[:PORT]`` or ``mqtts://``, checked, kept as text."""
    from ..mqtt.topics import broker_url

    try:
        broker_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


mqtt_url.takes_text = True  # type: ignore[attr-defined]


def referee_token(text: str) -> str:
    """``--referee-token``: long enough that trying every one is hopeless."""
    from ..live.referee_token import MIN_LENGTH

    if len(text) < MIN_LENGTH or not text.isprintable() or text != text.strip():
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_LENGTH} printable characters, without spaces at its ends"
        )
    return text


referee_token.takes_text = True  # type: ignore[attr-defined]


def add_settings(parser: argparse.ArgumentParser) -> None:
    """Every option of run but --config: also what ``config check`` accepts as overrides."""
    add_port_arguments(
        parser,
        default="required with --config or under a service; else the built-in virtual table",
    )
    parser.add_argument("--json", action="store_true", help="verdicts and notices as JSON Lines")
    parser.add_argument("--events", action="store_true", help="also show every ordered event")
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record the raw capture into DIR (rotating .bin; created if missing)",
    )
    kept = parser.add_argument_group("recording parts and retention (with --record)")
    kept.add_argument(
        "--record-part-mb",
        type=finite_float(1, 1_000_000),
        metavar="MB",
        help="start a new part when one reaches MB megabytes (default: one part a session)",
    )
    kept.add_argument(
        "--record-keep-days",
        type=finite_float(0, 36_500, lo_open=True),
        metavar="DAYS",
        help="delete parts older than DAYS, oldest first (default: keep all)",
    )
    kept.add_argument(
        "--record-keep-gb",
        type=finite_float(0, 1_000_000, lo_open=True),
        metavar="GB",
        help="delete the oldest parts while the recordings take more than GB gigabytes",
    )
    parser.add_argument(
        "--web",
        type=web_address,
        metavar="[HOST:]PORT",
        help="serve the live page on HOST (default 127.0.0.1) and PORT (0: any free one; "
        "docs/web.md)",
    )
    parser.add_argument(
        "--referee-token",
        type=referee_token,
        metavar="TOKEN",
        help="the secret the referee's controls on the page need (at least 6 characters; "
        "default: a new one, printed once at start)",
    )
    parser.add_argument(
        "--status",
        metavar="FILE",
        help="write the daemon's health to FILE once a second, for `firmware-host status` "
        "(docs/service.md)",
    )
    parser.add_argument(
        "--duration",
        type=finite_float(0, MAX_DURATION_S, lo_open=True),
        metavar="S",
        help="stop after S seconds (at most a year)",
    )
    add_rules_arguments(parser)
    add_signing_arguments(parser)
    add_mqtt_arguments(parser)
    virtual = parser.add_argument_group("built-in virtual table (no --port)")
    virtual.add_argument(
        "--virtual",
        action="store_true",
        help="referee the built-in virtual table, also with --config or under a service",
    )
    virtual.add_argument(
        "--scenario", metavar="NAME", help="a named scenario (--scenario list: the names)"
    )
    virtual.add_argument(
        "--faults",
        metavar="SPEC",
        default="",
        help="what goes wrong at the virtual table, as simulate --faults takes it (e.g. "
        "flood-tracker:5000@20-25: a tracker flooding the link; default: none)",
    )
    add_virtual_match(
        virtual,
        speed=UNCHOSEN_SPEED,
        speed_help="play this many times real time (default 10; 1 on a first start, while "
        "the kernels compile: the pure-Python referee keeps up with a real table's pace)",
    )


class Unchosen(float):
    """A default the user did not choose (the command line and a config file give plain
    numbers): ``run`` may pick another for the situation, and says so."""


UNCHOSEN_SPEED = Unchosen(10.0)


def add_broker_arguments(group: Any, url_help: str) -> None:
    """--mqtt and how to log in to the broker: shared by run and club."""
    group.add_argument("--mqtt", type=mqtt_url, metavar="URL", help=url_help)
    group.add_argument("--mqtt-username", metavar="NAME", help="the broker user")
    group.add_argument(
        "--mqtt-password",
        metavar="TEXT",
        help="the broker password (a command line is public: better $FIRMWARE_HOST_MQTT_PASSWORD, "
        "or run's config file)",
    )
    group.add_argument(
        "--mqtt-ca", metavar="FILE", help="the CA certificate that signed the broker"
    )
    group.add_argument("--mqtt-cert", metavar="FILE", help="a client certificate (TLS)")
    group.add_argument("--mqtt-key", metavar="FILE", help="the client certificate's private key")


def broker_settings(args: argparse.Namespace) -> tuple[Any, str | None, Any]:
    """The broker's URL (with --mqtt-username), the password and the TLS files, checked."""
    from ..mqtt.publisher import Tls
    from ..mqtt.topics import broker_url

    for option in ("mqtt_ca", "mqtt_cert", "mqtt_key"):
        path = getattr(args, option)
        if path is not None and not os.access(path, os.R_OK):
            raise UsageError(f"--{option.replace('_', '-')} {path}: cannot read it")
    url = broker_url(args.mqtt)
    if args.mqtt_username:
        url = type(url)(url.host, url.port, url.tls, args.mqtt_username, url.password)
    password = args.mqtt_password or os.environ.get("FIRMWARE_HOST_MQTT_PASSWORD")
    return url, password, Tls(args.mqtt_ca, args.mqtt_cert, args.mqtt_key)


def add_mqtt_arguments(parser: argparse.ArgumentParser) -> None:
    club = parser.add_argument_group("the club's broker (docs/club.md)")
    add_broker_arguments(
        club,
        "publish verdicts, events, the lamp, state and health to this MQTT broker: "
        "mqtt://HOST[:PORT] (default port 1883) or mqtts:// (TLS, 8883); needs --table",
    )
    club.add_argument(
        "--table",
        dest="table_id",
        type=table_id,
        metavar="ID",
        help="this table's name: its topics are club/ID/... (no / + or #)",
    )
    club.add_argument(
        "--mqtt-spool",
        metavar="FILE",
        help="the queue on disk while the broker is away (default "
        "$XDG_STATE_HOME/firmware-host/mqtt-ID.sqlite)",
    )
    club.add_argument(
        "--mqtt-spool-max",
        type=int_in(100, 100_000_000),
        default=100_000,
        metavar="N",
        help="queue at most N messages; past it the oldest events go first, never verdicts "
        "(default %(default)s)",
    )


SERVICE_ENVIRONMENT = ("INVOCATION_ID", "NOTIFY_SOCKET")


def service_manager(environ: Any = os.environ, parent: str | None = None) -> str | None:
    """The variable that says systemd started this process as a service, or None.

    The variables are inherited by every process below a service, a CI
    runner's tests or a shell in a tmux started by systemd among them, so
    they count only when the parent (``parent``: its name, default read from
    /proc) is systemd itself: the unit's ExecStart.
    """
    found = next((name for name in SERVICE_ENVIRONMENT if environ.get(name)), None)
    if found is None:
        return None
    if parent is None:
        try:
            parent = Path(f"/proc/{os.getppid()}/comm").read_text().strip()
        except OSError:  # no /proc: no way to tell, so not a service
            return None
    return found if parent == "systemd" else None


def check_link(args: argparse.Namespace) -> None:
    """A real table's port, or the virtual table only when asked for (issue 24).

    A config file or a service describes a real table: without a port it
    would referee a virtual match and report nothing wrong, so that is a
    usage error naming the key.  The README's first command (no config, no
    port, a terminal) and ``--virtual`` still play the virtual table.
    """
    if args.virtual and args.port is not None:
        raise UsageError(f"--virtual and --port {args.port}: one or the other")
    if args.port is not None or args.virtual:
        return
    device = (
        "the hub's device (firmware-host ports lists them; a /dev/serial/by-id/ name "
        "survives a replug), or --virtual for the built-in virtual table"
    )
    if getattr(args, "config", None) is not None:
        raise UsageError(f"{args.config}: [link] port is not set: a table's config names {device}")
    service = service_manager()
    if service is not None:
        raise UsageError(f"no --port under a service (${service} is set): give it {device}")


def add_selection_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--type NAME`` and ``--node N``, repeatable: the selection decode and monitor share."""
    parser.add_argument(
        "--type",
        action="append",
        metavar="NAME",
        help="only these message types (repeatable; e.g. CUSHION_HIT)",
    )
    parser.add_argument(
        "--node",
        action="append",
        type=int_in(0, 255),
        metavar="N",
        help=f"only {what} from these nodes (repeatable; 0 the hub, 3 the cue, ...)",
    )


def wanted_types(names: list[str] | None) -> set[str] | None:
    """``--type`` names, checked against the catalogue (upper-cased); None: every type."""
    from protocol.catalogue import BY_NAME

    if not names:
        return None
    unknown = [name for name in names if name.upper() not in BY_NAME]
    if unknown:
        raise UsageError(f"--type {unknown[0]}: no such message (see `firmware-host dump`)")
    return {name.upper() for name in names}


def add_link_arguments(parser: argparse.ArgumentParser) -> None:
    """``--port`` (needed: a frame goes to a table), ``--baud`` and ``--seq``."""
    group = add_port_arguments(parser, default="none, a table is needed")
    group.add_argument(
        "--seq",
        type=int_in(0, 0xFFFF),
        default=0,
        help="the sequence number of the first frame, 0 to 65535 (default 0)",
    )
