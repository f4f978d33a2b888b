"""Print the systemd unit that runs the daemon beside a table (docs/service.md).

service install prints a unit file with this installation's paths filled in:
Type=notify (READY once the port is open, WATCHDOG pings from the pipeline
thread, so a stalled pipeline is restarted), Restart=on-failure, a dedicated
unprivileged user in the dialout group (the serial device), and a state
directory for the status file, the recordings and the numba cache, which is
compiled before the daemon starts (ExecStartPre, once per install or upgrade).
Nothing is written: save it as /etc/systemd/system/firmware-host.service.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys

from ..cliutil import finite_float

EXAMPLES = """\
  firmware-host service install --config /etc/firmware-host/table.toml \\
      | sudo tee /etc/systemd/system/firmware-host.service
  sudo useradd --system --groups dialout --home-dir /var/lib/firmware-host firmware-host
  sudo systemctl daemon-reload && sudo systemctl enable --now firmware-host
"""

NOFILE = 2048  # descriptors: the page's connection cap and the daemon's reserve, with room

UNIT = """\
# firmware-host: the referee of a Russian billiards table (docs/service.md)
# Save as /etc/systemd/system/firmware-host.service, then:
#   useradd --system --groups dialout --home-dir /var/lib/firmware-host {user}
#   systemctl daemon-reload && systemctl enable --now firmware-host
[Unit]
Description=firmware-host: referee of a Russian billiards table
After=network.target

[Service]
Type=notify
NotifyAccess=main
User={user}
Group={user}
SupplementaryGroups=dialout
StateDirectory=firmware-host
WorkingDirectory=%S/firmware-host
Environment=NUMBA_CACHE_DIR=%S/firmware-host/numba-cache
# The numba kernels compile once per install or upgrade (minutes on a small board);
# '-': where nothing can be cached the daemon compiles as it starts
ExecStartPre=-{python} -m firmware_host.warmup
TimeoutStartSec=infinity
ExecStart={python} -m firmware_host run --config {config} --status %S/firmware-host/status.json
WatchdogSec={watchdog}
Restart=on-failure
RestartSec=2
# The page holds at most 512 connections, and 128 descriptors stay the daemon's own
# (recording parts, the spool, the status file, its children's pipes): docs/security.md
LimitNOFILE={nofile}
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = sub.add_parser(
        "install", help="print the systemd unit for this installation", description=__doc__
    )
    install.add_argument(
        "--config",
        dest="unit_config",  # not `config`: the CLI would read that file as this command's
        metavar="FILE",
        default="/etc/firmware-host/table.toml",
        help="the config file the service runs with (firmware-host config example)",
    )
    install.add_argument(
        "--user",
        type=_user,
        default="firmware-host",
        help="the unprivileged user the daemon runs as",
    )
    install.add_argument(
        "--watchdog",
        type=finite_float(1, 3600),
        default=10.0,
        metavar="S",
        help="systemd restarts the daemon when its pipeline is silent this long (1 to 3600)",
    )


def _user(name: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", name):
        raise argparse.ArgumentTypeError(f"{name!r}: not a user name (a-z, 0-9, _ and -)")
    return name


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(
        UNIT.format(
            python=shlex.quote(sys.executable),
            config=shlex.quote(args.unit_config),
            user=args.user,
            watchdog=f"{args.watchdog:g}",
            nofile=NOFILE,
        )
    )
    return 0
