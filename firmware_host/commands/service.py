"""Print the systemd unit that runs the daemon beside a table (docs/service.md).

service install prints a unit file with this installation's paths filled in:
Type=notify (READY once the port is open, WATCHDOG pings from the pipeline
thread, so a stalled pipeline is restarted), Restart=always but not after a
configuration error (exit status 2), a stop by systemctl (SIGTERM, 143) counted
a success, a dedicated unprivileged user in the dialout group (the serial
device), and a state directory for the status file, the recordings and the
numba cache, which is compiled before the daemon starts (ExecStartPre, once per
install or upgrade).  Nothing is written: save it as
/etc/systemd/system/firmware-host.service.

service install --udev prints a udev rule instead, for
/etc/udev/rules.d/60-firmware-host.rules: USB serial ports in group dialout,
left alone by ModemManager, and an FTDI adapter's latency timer at 1 ms
(16 ms by default, added to every lamp command's ACK).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys

from ..cli.args import finite_float

EXAMPLES = """\
  firmware-host service install --config /etc/firmware-host/table.toml \\
      | sudo tee /etc/systemd/system/firmware-host.service
  sudo useradd --system --groups dialout --home-dir /var/lib/firmware-host firmware-host
  sudo systemctl daemon-reload && sudo systemctl enable --now firmware-host
  firmware-host service install --udev | sudo tee /etc/udev/rules.d/60-firmware-host.rules
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
ExecStartPre=-{python} -m firmware_host.live.warmup
TimeoutStartSec=infinity
ExecStart={python} -m firmware_host run --config {config} --status %S/firmware-host/status.json
WatchdogSec={watchdog}
# Always back, but not after a configuration error (2: the config says what is wrong);
# a stop (SIGTERM, SIGINT: 128 + signal) is a success, not a failure
Restart=always
RestartSec=2
RestartPreventExitStatus=2
SuccessExitStatus=130 143
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


UDEV = """\
# firmware-host: the table's USB serial port (docs/service.md)
# Save as /etc/udev/rules.d/60-firmware-host.rules, then plug the hub in again, or:
#   udevadm control --reload && udevadm trigger --action=add --subsystem-match=usb-serial
#   udevadm trigger --action=change --subsystem-match=tty
# USB serial ports: read and written by group dialout (the service's SupplementaryGroups),
# and ModemManager leaves them alone (it probes a new serial port with AT commands)
ACTION=="add|change", SUBSYSTEM=="tty", KERNEL=="ttyUSB[0-9]*|ttyACM[0-9]*", \\
  GROUP="dialout", MODE="0660", ENV{ID_MM_DEVICE_IGNORE}="1"
# FTDI adapters: the latency timer at 1 ms (16 ms by default: added to every lamp's ACK)
ACTION=="add", SUBSYSTEM=="usb-serial", DRIVER=="ftdi_sio", ATTR{latency_timer}="1"
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
        "--udev",
        action="store_true",
        help="print the udev rule for the serial port instead (dialout, no ModemManager, "
        "the FTDI latency timer at 1 ms)",
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
    if args.udev:
        sys.stdout.write(UDEV)
        return 0
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
