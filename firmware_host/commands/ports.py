"""List the serial ports this machine has: device, VID:PID, serial number, description.

The first step with a new table: plug the hub in and see which device it
became (a USB UART shows its VID:PID and serial number; the hub's CDC-ACM
port is usually /dev/ttyACM0).  Each port's stable name follows on the next
line: its /dev/serial/by-id/ link, which stays the same when the device comes
back as another ttyUSB number; give that one as --port or [link] port.  From
pyserial's list_ports.  `--json` gives one object per port (`by_id`: the
stable name, or null).  Pseudo-terminals (the virtual table) are not listed.
"""

from __future__ import annotations

import argparse
import os

EXAMPLES = """\
  firmware-host ports
  firmware-host ports --json | jq -r .device
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per port")


def run(args: argparse.Namespace) -> int:
    import sys

    from serial.tools import list_ports

    from ..jsonout import dumps
    from ..link.transport import by_id_names

    stable = by_id_names()
    ports = []
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        vid_pid = f"{port.vid:04X}:{port.pid:04X}" if port.vid is not None else None
        ports.append(
            {
                "device": port.device,
                "vid_pid": vid_pid,
                "serial_number": port.serial_number,
                "description": port.description,
                "by_id": stable.get(os.path.realpath(port.device)),
            }
        )
    if args.json:
        sys.stdout.writelines(dumps(p) + "\n" for p in ports)
        return 0
    if not ports:
        sys.stdout.write("no serial ports found (is the hub plugged in and powered?)\n")
        return 0
    sys.stdout.write(f"{'device':<20} {'VID:PID':<10} {'serial number':<20} description\n")
    for p in ports:
        sys.stdout.write(
            f"{p['device']:<20} {p['vid_pid'] or '-':<10} {p['serial_number'] or '-':<20} "
            f"{p['description']}\n"
        )
        if p["by_id"]:
            sys.stdout.write(f"    stable name: {p['by_id']}\n")
    return 0
