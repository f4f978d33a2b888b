"""What a page's server holds per client: token attempts, connections, names (docs/security.md).

A club's network is shared, and anyone on it can reach the pages.  The
referee token is checked in constant time, but a guesser was free to try
1 300 tokens a second: :class:`Attempts` lets each address ``free`` wrong
tokens a window, then answers 429 until the window ends, and every refusal is
logged with its address (:class:`~firmware_host.untrusted.Refusals`).
:class:`Connections` caps the connections and closes idle ones,
:func:`connection_budget` sizes the cap from the file-descriptor limit, and
:func:`host_allowed` refuses a ``Host`` that is not this machine (DNS
rebinding).

>>> attempts = Attempts(free=2, window_s=60, clock=lambda: 0.0)
>>> for _ in range(3):
...     attempts.failed("10.0.0.5")
>>> attempts.wait_s("10.0.0.5"), attempts.wait_s("10.0.0.6")
(60.0, 0.0)
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import resource
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..untrusted import Refusals

FREE = 10  # wrong tokens an address may try in a window
WINDOW_S = 60.0
ADDRESSES = 4096  # addresses remembered; the oldest is forgotten first
RESERVE_FDS = 128  # descriptors left to the daemon whatever the browsers do
MAX_NOFILE = 65_536  # the soft limit is raised at most this far
MIN_CONNECTIONS = 16


class Attempts:
    """Wrong tokens per address in a window; past ``free``, the address waits (see above)."""

    def __init__(
        self,
        free: int = FREE,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free = free
        self.window_s = window_s
        self.clock = clock
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()  # window start, n
        self._lock = threading.Lock()

    def wait_s(self, address: str) -> float:
        """0 if ``address`` may try a token now, else how long until it may."""
        with self._lock:
            started, count = self._failures.get(address, (0.0, 0))
            left = started + self.window_s - self.clock()
            return left if count >= self.free and left > 0 else 0.0

    def failed(self, address: str) -> None:
        with self._lock:
            now = self.clock()
            started, count = self._failures.pop(address, (now, 0))
            if now - started >= self.window_s:
                started, count = now, 0
            self._failures[address] = (started, count + 1)
            while len(self._failures) > ADDRESSES:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)


class Connections:
    """Every TCP connection the server holds: at most ``limit``, and none idle for long.

    aiohttp keeps a connection as long as its peer trickles bytes (no time
    limit on a request's headers) and an idle keep-alive one for an hour: 400
    slow connections once took every file descriptor a 256-fd daemon had,
    stopping its recording.  Here the protocol factory refuses a connection
    past ``limit`` (a 503 and close, logged with the address), and a sweep
    once a second closes a connection that has been outside a request for
    ``idle_s`` (from its opening, or its last request's end): a slow sender
    never gets its request in, an event stream is inside its request and
    stays.  Only aiohttp's public parts are used (``Server.connections``,
    ``RequestHandler.force_close``, ``Request.protocol``).
    """

    def __init__(self, limit: int, idle_s: float, refusals: Refusals) -> None:
        self.limit = limit
        self.idle_s = idle_s
        self.refusals = refusals
        self._since: dict[Any, float] = {}  # handler -> opened, or its last request ended
        self._busy: dict[Any, int] = {}  # handler -> requests in progress on it
        self.refused = 0

    @property
    def open(self) -> int:
        return len(self._since)

    def factory(self, server: web.Server) -> Callable[[], asyncio.BaseProtocol]:
        """The protocol factory for ``loop.create_server``: ``server``'s, capped."""

        def make() -> asyncio.BaseProtocol:
            if len(self._since) >= self.limit:
                self.refused += 1
                return _Busy(self.refusals)
            handler = server()
            self._since[handler] = time.monotonic()
            return handler

        return make

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Marks the connection busy while a request of it is handled."""
        conn = request.protocol
        self._busy[conn] = self._busy.get(conn, 0) + 1
        try:
            return await handler(request)
        finally:
            self._busy[conn] -= 1
            if not self._busy[conn]:
                del self._busy[conn]
                if conn in self._since:
                    self._since[conn] = time.monotonic()

    def sweep(self, server: web.Server) -> None:
        """Forget closed connections; close those idle too long (call it once a second)."""
        now = time.monotonic()
        live = set(server.connections)
        for conn, since in list(self._since.items()):
            if conn not in live and now - since > 2.0:  # closed (or never made)
                del self._since[conn]
            elif conn in live and conn not in self._busy and now - since > self.idle_s:
                conn.force_close()


class _Busy(asyncio.Protocol):
    """A connection past the cap: told so in one response, then closed."""

    def __init__(self, refusals: Refusals) -> None:
        self.refusals = refusals

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.refusals.add(peer[0] if peer else "unknown", "too many connections")
        assert isinstance(transport, asyncio.Transport)
        transport.write(BUSY)
        transport.close()


BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 22\r\nConnection: close\r\n\r\ntoo many connections\r\n"
)


def connection_budget(wanted: int, reserve: int = RESERVE_FDS) -> int:
    """How many connections the server may hold without taking the daemon's own descriptors.

    The soft ``RLIMIT_NOFILE`` is raised to the hard one first (a process
    starts at 1 024 however high the unit's ``LimitNOFILE`` lets it go); the
    budget leaves ``reserve`` for what the daemon opens later (recording
    parts, the spool, the status file, its children's pipes).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > MAX_NOFILE:
        hard = max(soft, MAX_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    in_use = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
    return max(MIN_CONNECTIONS, min(wanted, soft - in_use - reserve))


def host_names(listening: str) -> frozenset[str]:
    """The names a browser may call this server by: this machine's, and the one it listens
    on; any IP address is accepted too (see :func:`host_allowed`)."""
    names = {"localhost", socket.gethostname(), socket.getfqdn(), listening}
    return frozenset(n.lower().rstrip(".") for n in names if n)


def host_allowed(host: str, names: frozenset[str]) -> bool:
    """Is a request's ``Host`` this server?  A page read by a name that is not this
    machine's is DNS rebinding (a hostile site's name resolved to the club's address):
    refused.  An IP address cannot be rebound.

    >>> names = frozenset({"localhost", "table-3"})
    >>> [host_allowed(h, names) for h in ("table-3:8080", "10.0.0.5:80", "[::1]:8080",
    ...                                   "evil.example:8080", "localhost")]
    [True, True, True, False, True]
    """
    if host.startswith("["):  # [v6]:port
        name = host[1 : host.find("]")] if "]" in host else host
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name.lower().rstrip(".") in names
