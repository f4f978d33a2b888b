"""The daemon's web server (``run --web``): the live page, its event stream, health, pictures.

aiohttp, in a thread of its own with its own event loop: one well-kept
library for the HTTP server and server-sent events, with no ASGI server to
run beside it, and nothing of it on the refereeing path (the pipeline thread
only calls :class:`~.feed.LiveFeed`, which never waits).  Every asset is
served from the package: a club's network may have no internet.

* ``/``: the page (``page.html``), ``/style.css`` and ``/common.js`` its look and the
  drawing it shares with the club page;
* ``/events``: server-sent events, a snapshot first, then each change;
* ``/healthz``: the daemon's health (``firmware-host status``'s facts and
  problems), 200 when healthy, 503 when degraded or not known yet;
* ``/shot/N.svg``: a finished shot's picture (``plot``'s, when matplotlib is
  installed);
* ``POST /control``: a referee's key, ``{"key": "new_frame", "arg": 0}`` with
  ``Authorization: Bearer TOKEN``: judged exactly as the keypad's (202);
  without the token 401, with a wrong one 403 (both logged), a bad key or
  arg 400.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

from aiohttp import web

from ..live.referee_token import RefereeToken
from ..untrusted import Refusals, Refused, json_object
from .feed import END, KEEP_SHOTS, LiveFeed
from .guard import Attempts, Connections, connection_budget, host_allowed, host_names

#: a referee's key: (key, arg, source), raising ValueError for a bad one (Daemon.press), or
#: an awaitable that does (the daemon's answer, in web/process.py's page process)
Press = Callable[..., Any]

log = logging.getLogger(__name__)

KEEPALIVE_S = 15.0
MAX_BODY = 4096  # bytes of a POSTed body (a key or a command is under 200)
BODY_S = 10.0  # a body arrives within this
MAX_STREAMS = 64  # event streams (pages open) at once; more are refused with 503
MAX_CONNECTIONS = 512  # TCP connections at once (less where the fd limit is lower)
IDLE_S = 10.0  # a connection outside a request this long is closed (a slow sender's too)
BACKLOG = 16  # connections accepted at once before the cap sees them


class WebServer:
    """The server and its thread; a subclass serves another page from the same parts (the
    club page: ``mqtt/club_page.py``)."""

    PAGE = (__package__, "page.html")  # (package, file) of the page at /

    def __init__(
        self,
        feed: LiveFeed,
        host: str,
        port: int,
        token: RefereeToken | None = None,
        press: Press | None = None,
    ) -> None:
        self.feed = feed
        self.host = host
        self.port = port
        self.token = token
        self.press = press
        self.attempts = Attempts()  # wrong tokens per address
        self.refusals = Refusals(log, "web")  # every refusal, with the client's address
        self.connections = Connections(MAX_CONNECTIONS, IDLE_S, self.refusals)
        self.names = host_names(host)
        self._pictures: OrderedDict[tuple[int, int], str] = OrderedDict()
        self._painter = ThreadPoolExecutor(1, thread_name_prefix="web pictures")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None

    def app(self) -> web.Application:
        app = web.Application(
            middlewares=[self.connections.middleware, self._host_check],
            client_max_size=MAX_BODY,
        )
        app.router.add_get("/", self.page)
        app.router.add_get("/style.css", self.style)
        app.router.add_get("/common.js", self.script)
        app.router.add_get("/events", self.events)
        app.router.add_get("/healthz", self.healthz)
        self.routes(app)
        return app

    def routes(self, app: web.Application) -> None:
        """The live page's own: its shots' pictures and the referee's keys."""
        app.router.add_get("/shot/{number:\\d{1,9}}.svg", self.shot)
        app.router.add_post("/control", self.control)

    def start(self) -> int:
        """Serve from a thread of its own; the port bound (``port`` 0: any free one)."""
        ready = threading.Event()
        self.connections.limit = connection_budget(MAX_CONNECTIONS)

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            runner = web.AppRunner(
                self.app(), handle_signals=False, access_log=None, keepalive_timeout=IDLE_S
            )
            loop.run_until_complete(runner.setup())
            assert runner.server is not None
            try:
                listening = loop.run_until_complete(
                    loop.create_server(
                        self.connections.factory(runner.server),
                        self.host,
                        self.port,
                        backlog=BACKLOG,
                        reuse_address=True,
                    )
                )
            except OSError as exc:  # (a port in use): the loop closed here, not at exit, where
                self._error = exc  # its __del__ printed a traceback after the one-line error
                loop.run_until_complete(runner.cleanup())
                loop.close()
                ready.set()
                return
            self.port = listening.sockets[0].getsockname()[1]
            sweeping = loop.create_task(self._sweep(runner.server))
            ready.set()
            loop.run_forever()
            sweeping.cancel()
            listening.close()
            loop.run_until_complete(runner.cleanup())
            self.refusals.flush()

        self._thread = threading.Thread(target=serve, name="web", daemon=True)
        self._thread.start()
        ready.wait(30)
        if self._error is not None:
            raise self._error
        return self.port

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._painter.shutdown(wait=False, cancel_futures=True)

    async def _sweep(self, server: web.Server) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.connections.sweep(server)

    @web.middleware
    async def _host_check(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """A request for another name than this machine's is DNS rebinding: 421."""
        if not host_allowed(request.host, self.names):
            self.refusals.add(request.remote or "unknown", f"Host {request.host[:80]!r}")
            return web.json_response(
                {"error": f"this server is not {request.host[:80]!r}: use its address"},
                status=421,
            )
        return await handler(request)

    async def page(self, request: web.Request) -> web.Response:
        package, name = self.PAGE
        text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
        return web.Response(text=text, content_type="text/html")

    async def style(self, request: web.Request) -> web.Response:
        """The look the live page and the club page share."""
        return _asset("style.css", "text/css")

    async def script(self, request: web.Request) -> web.Response:
        """What the live page and the club page draw alike (a verdict, the lamp)."""
        return _asset("common.js", "text/javascript")

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: a snapshot, then each change; at most ``MAX_STREAMS`` browsers,
        and one that falls behind is dropped (its page reconnects)."""
        if self.feed.streams >= MAX_STREAMS:
            self.refusals.add(request.remote or "unknown", "too many event streams")
            return web.json_response(
                {"error": f"{MAX_STREAMS} pages are open already"},
                status=503,
                headers={"Retry-After": "10"},
            )
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        try:
            await response.prepare(request)
        except ConnectionResetError:  # gone before its headers went (seen under load): no
            return response  # traceback for one client's leaving
        stream = self.feed.subscribe()
        try:
            snapshot = json.dumps(self.feed.snapshot(), separators=(",", ":"))
            await response.write(f"event: snapshot\ndata: {snapshot}\n\n".encode())
            while not stream.dropped.is_set():
                try:
                    text = await asyncio.wait_for(stream.queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                if not text:  # dropped (Stream.drop)
                    continue
                if text == END:  # the daemon has gone (Stream.end)
                    break
                await response.write(f"data: {text}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.feed.unsubscribe(stream)
        return response

    async def healthz(self, request: web.Request) -> web.Response:
        health = self.feed.health_now()
        if health is None:
            return web.json_response({"problems": ["starting: no status yet"]}, status=503)
        return web.json_response(health, status=503 if health["problems"] else 200)

    async def shot(self, request: web.Request) -> web.Response:
        """A shot's picture: drawn once (one at a time, beside the refereeing), then kept."""
        number = int(request.match_info["number"])
        events = self.feed.shot_events(number)
        if events is None:
            raise web.HTTPNotFound(text=f"shot {number} is not kept (the last 50 are)")
        verdict = self.feed.verdict_of(number)
        key = (number, len(events) + (verdict is not None))
        svg = self._pictures.get(key)
        if svg is None:
            svg = await asyncio.get_running_loop().run_in_executor(
                self._painter, _picture, events, verdict
            )
            if svg is None:
                raise web.HTTPNotFound(text="pictures need matplotlib: pip install '.[view]'")
            self._pictures[key] = svg
            while len(self._pictures) > KEEP_SHOTS:
                self._pictures.popitem(last=False)
        return web.Response(text=svg, content_type="image/svg+xml")

    async def control(self, request: web.Request) -> web.Response:
        """A referee's key from the page; only the token's holder may press, and a guesser is
        held to ``Attempts.free`` wrong tokens a minute (429 after), each refusal logged."""
        if self.press is None or self.token is None:
            raise web.HTTPNotFound(text="this daemon takes no referee controls")
        peer = request.remote or "unknown"
        wait_s = self.attempts.wait_s(peer)
        if wait_s:
            self.refusals.add(peer, "referee control: too many wrong tokens")
            return web.json_response(
                {"error": f"too many wrong tokens: wait {wait_s:.0f} s"},
                status=429,
                headers={"Retry-After": str(math.ceil(wait_s))},
            )
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not given:
            self.refusals.add(peer, "referee control: no token")
            return web.json_response({"error": "the referee token is needed"}, status=401)
        if not self.token.check(given):
            self.attempts.failed(peer)
            self.refusals.add(peer, "referee control: wrong token")
            return web.json_response({"error": "wrong referee token"}, status=403)
        self.attempts.succeeded(peer)
        try:
            body = await json_body(request)
            key, arg = body.get("key"), body.get("arg", 0)
            if not isinstance(key, str):
                raise Refused('"key" must be a string')
            pressed = self.press(key, arg, source=f"page {peer}")
            if inspect.isawaitable(pressed):  # the daemon's answer, from the page's process
                await pressed
        except (Refused, ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"pressed": key, "arg": arg}, status=202)


async def json_body(request: web.Request, max_bytes: int = MAX_BODY) -> dict[str, Any]:
    """A POSTed JSON object, read no further than ``max_bytes`` and for no longer than
    ``BODY_S`` (a body trickled in a byte at a time); else :class:`Refused`."""
    if (request.content_length or 0) > max_bytes:
        raise Refused(f"a body over {max_bytes} bytes")
    raw = b""
    try:
        async with asyncio.timeout(BODY_S):
            while len(raw) <= max_bytes:
                chunk = await request.content.read(max_bytes + 1 - len(raw))
                if not chunk:
                    break
                raw += chunk
    except TimeoutError:
        raise Refused(f"the body took over {BODY_S:g} s") from None
    if len(raw) > max_bytes:
        raise Refused(f"a body over {max_bytes} bytes")
    return json_object(raw, max_bytes)


def _asset(name: str, content_type: str) -> web.Response:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return web.Response(text=text, content_type=content_type)


def _picture(events: list[dict[str, Any]], verdict: dict[str, Any] | None) -> str | None:
    try:
        from ..pictures.plot import draw, inline_svg
        from ..pictures.shots import shots_of
    except ModuleNotFoundError:
        return None
    shots = shots_of(events, [verdict] if verdict else [])
    return inline_svg(draw(next(iter(shots.values())))) if shots else None
