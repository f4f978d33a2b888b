"""systemd's notify protocol (sd_notify(3)): READY, WATCHDOG pings, STATUS, STOPPING.

The protocol is one datagram of ``KEY=value`` lines to the Unix socket named
by ``$NOTIFY_SOCKET`` (a leading ``@`` is the abstract namespace), so it is
written here on the standard library's socket rather than taken from a
package: a dependency for ten lines would be one more thing to install on
a table's board.  Without ``$NOTIFY_SOCKET`` (not started by systemd) every
call does nothing.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class Notifier:
    """Tell the service manager how the daemon is doing.

    ``watchdog_s`` is systemd's ``WatchdogSec`` (``$WATCHDOG_USEC``), None
    when no watchdog is asked for this process.  :meth:`ping` sends WATCHDOG=1
    at most every half of it: it is called from the pipeline thread's loop, so
    a stalled pipeline stops the pings and systemd restarts the service.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_s = _watchdog_s(env)
        self._sock: socket.socket | None = None
        if self.address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._pinged_ns = 0
        self.ready_sent = False

    def send(self, *fields: str) -> bool:
        """One datagram; False if there is no manager or it could not be reached."""
        if self._sock is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self.address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> None:
        self.ready_sent = self.send("READY=1", f"STATUS={status}") or self.ready_sent

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def ping(self, now_ns: int) -> None:
        if self.watchdog_s is None or now_ns - self._pinged_ns < self.watchdog_s * 5e8:
            return
        self._pinged_ns = now_ns
        self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _watchdog_s(env: Mapping[str, str]) -> float | None:
    """``$WATCHDOG_USEC`` in seconds, if it is meant for this process (``$WATCHDOG_PID``)."""
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
        pid = int(env.get("WATCHDOG_PID", "0"))
    except ValueError:
        return None
    if usec <= 0 or (pid and pid != os.getpid()):
        return None
    return usec / 1e6
