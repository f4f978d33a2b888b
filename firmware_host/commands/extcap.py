"""Wireshark's extcap interface: the table's link, live in Wireshark or tshark.

Wireshark runs every program in its extcap folder to learn what it can
capture from (``--extcap-interfaces``, ``--extcap-dlts``,
``--extcap-config``) and to capture (``--capture --fifo PATH``); this
command answers those calls.  ``--install`` puts a small launcher for it
into the extcap folder and the generated dissector into the personal Lua
plugins folder, after which Wireshark lists "Table sensor bus" among its
interfaces: one per serial port pyserial sees (a hub on USB), and one that
asks for any device or pyserial URL (a pseudo-terminal, socket://...).
The packets are those of ``pcap``: the decoder's sequence marks show as
expert info, live.  See docs/link-debugging.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli.args import UsageError, add_baud_argument

EXAMPLES = """\
  firmware-host extcap --install                    # then open Wireshark
  WIRESHARK_EXTCAP_DIR=~/extcap firmware-host extcap --install
  tshark -i firmware-host -o extcap.firmware-host.port:/dev/ttyACM0 -a duration:10
"""

INTERFACE = "firmware-host"  # the one that asks for a port
PORT_PREFIX = "firmware-host-"  # + a serial device's name: the ports pyserial lists
DLT = 147  # LINKTYPE_USER0
LAUNCHER = "firmware-host-extcap"
LUA_DIR = Path("~/.local/lib/wireshark/plugins")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    calls = parser.add_argument_group("Wireshark's calls (extcap protocol)")
    calls.add_argument("--extcap-interfaces", action="store_true", help="list the interfaces")
    calls.add_argument("--extcap-version", metavar="VER", help="Wireshark's version (ignored)")
    calls.add_argument("--extcap-interface", metavar="NAME", help="the interface of this call")
    calls.add_argument("--extcap-dlts", action="store_true", help="the interface's link type")
    calls.add_argument("--extcap-config", action="store_true", help="the interface's options")
    calls.add_argument("--capture", action="store_true", help="capture into --fifo")
    calls.add_argument("--fifo", metavar="PATH", help="where Wireshark reads the capture")
    calls.add_argument("--extcap-capture-filter", metavar="FILTER", help="(not supported)")
    calls.add_argument("--extcap-control-in", metavar="PATH", help="(not used)")
    calls.add_argument("--extcap-control-out", metavar="PATH", help="(not used)")
    calls.add_argument("--port", metavar="URL", help="the device or pyserial URL to capture")
    add_baud_argument(calls)
    parser.add_argument(
        "--install",
        nargs="?",
        const="",
        metavar="DIR",
        help="write the launcher into DIR (default: $WIRESHARK_EXTCAP_DIR, else the extcap "
        "folder tshark -G folders names) and the dissector into --lua-dir",
    )
    parser.add_argument(
        "--lua-dir", metavar="DIR", default=str(LUA_DIR), help="where --install puts the dissector"
    )


def _ports() -> list[tuple[str, str]]:
    """(interface value, display) for each serial port pyserial lists."""
    from serial.tools import list_ports

    out = []
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        name = Path(port.device).name
        out.append((PORT_PREFIX + name, f"Table sensor bus: {port.device} ({port.description})"))
    return out


def _device(interface: str) -> str | None:
    """The device an interface names (None: the one that asks for a port)."""
    if interface == INTERFACE:
        return None
    for value, _ in _ports():
        if value == interface:
            return "/dev/" + value[len(PORT_PREFIX) :]
    raise UsageError(f"--extcap-interface {interface}: no such interface (see --extcap-interfaces)")


def _interfaces() -> str:
    lines = ["extcap {version=1.0}{help=https://www.wireshark.org/docs/man-pages/extcap.html}"]
    lines.append(f"interface {{value={INTERFACE}}}{{display=Table sensor bus (any port or URL)}}")
    lines += [f"interface {{value={value}}}{{display={display}}}" for value, display in _ports()]
    return "\n".join(lines) + "\n"


def _config(interface: str) -> str:
    device = _device(interface)
    port = f"{{default={device}}}" if device else ""
    return (
        f"arg {{number=0}}{{call=--port}}{{display=Port}}{{type=string}}{port}"
        "{tooltip=a serial device or a pyserial URL (socket://host:port, rfc2217://...)}"
        "{required=true}\n"
        "arg {number=1}{call=--baud}{display=Baud rate}{type=integer}{range=50,12000000}"
        "{default=921600}{tooltip=UART baud rate (ignored by USB CDC)}\n"
    )


def extcap_folder() -> str:
    """Where Wireshark looks for extcaps: ``$WIRESHARK_EXTCAP_DIR`` (honoured for a user
    without special privileges), else the folder ``tshark -G folders`` names (the personal
    one where this Wireshark has it, else the global one)."""
    import os
    import shutil
    import subprocess

    if os.environ.get("WIRESHARK_EXTCAP_DIR"):
        return os.environ["WIRESHARK_EXTCAP_DIR"]
    if shutil.which("tshark") is None:
        raise UsageError("--install: no tshark to ask where extcaps go: give the folder (DIR)")
    done = subprocess.run(["tshark", "-G", "folders"], check=False, capture_output=True, text=True)
    folders = done.stdout
    found = dict(line.split(":", 1) for line in folders.splitlines() if ":" in line)
    folder = found.get("Personal Extcap path") or found.get("Extcap path")
    if not folder:
        raise UsageError("--install: tshark names no extcap folder: give the folder (DIR)")
    return folder.strip()


def _install(directory: str, lua_dir: str) -> None:
    """The launcher (this Python, this package) and the generated dissector."""
    from ..linktools.dissector import generate

    target = Path(directory or extcap_folder()).expanduser()
    lua = Path(lua_dir).expanduser()
    try:
        target.mkdir(parents=True, exist_ok=True)
        launcher = target / LAUNCHER
        launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m firmware_host extcap "$@"\n')
        launcher.chmod(0o755)
        lua.mkdir(parents=True, exist_ok=True)
        (lua / "firmware_host.lua").write_text(generate(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--install {target}: {exc.strerror or exc}") from None
    sys.stderr.write(f"extcap launcher: {launcher}\ndissector: {lua / 'firmware_host.lua'}\n")


def run(args: argparse.Namespace) -> int:
    if args.install is not None:
        _install(args.install, args.lua_dir)
        return 0
    if args.extcap_interfaces:
        sys.stdout.write(_interfaces())
        return 0
    if not args.extcap_interface:
        raise UsageError("--extcap-interface NAME: which interface (see --extcap-interfaces)")
    if args.extcap_dlts:
        _device(args.extcap_interface)
        sys.stdout.write(f"dlt {{number={DLT}}}{{name=USER0}}{{display=Table sensor bus}}\n")
        return 0
    if args.extcap_config:
        sys.stdout.write(_config(args.extcap_interface))
        return 0
    if not args.capture:
        raise UsageError("one of --extcap-interfaces, --extcap-dlts, --extcap-config, --capture")
    if not args.fifo:
        raise UsageError("--capture needs --fifo PATH")
    port = args.port or _device(args.extcap_interface)
    if not port:
        raise UsageError(f"--port: the interface {args.extcap_interface} needs a port or URL")
    from ..cli.args import check_port
    from ..linktools.extcap import capture

    check_port(port)
    capture(port, args.baud, args.fifo)
    return 0
