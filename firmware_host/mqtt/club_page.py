"""The club's page (``firmware-host club``): every table at once, from the broker.

The live page's server (:class:`~firmware_host.web.server.WebServer`, aiohttp,
its look and its event stream) with another page and feed: the feed is the
broker's messages (:class:`~.club.Club`, one persistent session, each message
once), sent on to every browser without waiting.  A referee's control is a
POST to ``/command``: published to that table's command topic, answered with
the table's own outcome (its token checked there, not here: the club page
never holds the tables' tokens).
"""

from __future__ import annotations

import asyncio
import copy
import math
import time
import uuid
from typing import Any

from aiohttp import web

from ..untrusted import Refused
from ..web.feed import Broadcast
from ..web.server import WebServer, json_body
from .club import Club

SHOWN = ("verdict", "state", "lamp", "health", "online", "command/result")  # not every event
RESULT_S = 5.0  # a table answers a command within this, or the page says it did not
PER_CLIENT = 4  # commands one address may have waiting for an answer
WAITING = 64  # commands the page may have waiting, from everyone


class ClubFeed(Broadcast):
    """The broker's messages for the page: each table's latest, and the stream."""

    def __init__(self) -> None:
        super().__init__()
        self.club: Club | None = None
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}  # command id -> answer

    def message(self, table: str, kind: str, message: dict[str, Any]) -> None:
        """From the broker (paho's thread).  A command's result is kept only for a command
        this page is waiting for: anyone may publish results, and none is kept for long."""
        if kind == "command/result":
            with self._lock:
                waiting = self._waiting.pop(message.get("id") or "", None)
            if waiting is not None:
                waiting.get_loop().call_soon_threadsafe(_answer, waiting, message)
        if kind in SHOWN:
            self._send({"table": table, "kind": kind, "message": message})

    def expect(self, command_id: str) -> asyncio.Future[dict[str, Any]]:
        """The table's answer to a command about to be sent (on the web server's loop)."""
        future = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiting[command_id] = future
        return future

    def forget(self, command_id: str) -> None:
        with self._lock:
            self._waiting.pop(command_id, None)

    @property
    def waiting(self) -> int:
        """Commands sent and not answered yet."""
        with self._lock:
            return len(self._waiting)

    def snapshot(self) -> dict[str, Any]:
        assert self.club is not None
        tables = self.club.snapshot()
        return {
            "tables": {
                t: {k: m for k, m in kinds.items() if k in SHOWN} for t, kinds in tables.items()
            }
        }

    def health_now(self) -> dict[str, Any]:
        assert self.club is not None
        club = self.club
        connected = club.connected.is_set()
        problems = []
        if not club.feed_alive():
            problems.append(f"the broker feed has stopped ({club.feed_error}): restart the page")
        elif not connected:
            problems.append(f"broker {club.url} not connected")
        return copy.deepcopy(
            {
                "broker": str(club.url),
                "connected": connected,
                "tables": sorted(club.snapshot()),
                "refused": club.refused,
                "problems": problems,
            }
        )


class ClubServer(WebServer):
    PAGE = (__package__, "club.html")

    def __init__(self, feed: ClubFeed, host: str, port: int) -> None:
        super().__init__(feed, host, port)  # type: ignore[arg-type]
        self.club_feed = feed
        self._busy: dict[str, int] = {}  # address -> its commands waiting for an answer

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/command", self.command)

    async def command(self, request: web.Request) -> web.Response:
        """``{"table", "key", "arg", "token"}`` → the table's outcome (or 504: no answer).

        Waiting costs no thread (a future the broker's answer resolves), so a
        table that never answers delays no one else's command.  Per address:
        at most ``PER_CLIENT`` commands waiting, and ``Attempts.free`` wrong
        tokens a minute (the table says which are wrong), then 429."""
        peer = request.remote or "unknown"
        wait_s = self.attempts.wait_s(peer)
        if wait_s:
            self.refusals.add(peer, "too many wrong tokens")
            return _refuse(429, f"too many wrong tokens: wait {wait_s:.0f} s", wait_s)
        try:
            body = await json_body(request)
            table, key, token, arg = _command_fields(body)
        except Refused as exc:
            return _refuse(400, f"bad request: {exc}")
        club = self.club_feed.club
        assert club is not None
        if table not in club.snapshot():
            return _refuse(404, f"no table {table}")
        if self._busy.get(peer, 0) >= PER_CLIENT or self.club_feed.waiting >= WAITING:
            self.refusals.add(peer, "too many commands waiting")
            return _refuse(429, "too many commands waiting for an answer", RESULT_S)
        command_id = uuid.uuid4().hex
        answer = self.club_feed.expect(command_id)
        self._busy[peer] = self._busy.get(peer, 0) + 1
        started = time.monotonic()
        try:
            club.command(table, key, arg, token, command_id)
            result = await asyncio.wait_for(answer, RESULT_S)
        except TimeoutError:
            return web.json_response(
                {"id": command_id, "ok": False, "error": f"table {table} did not answer"},
                status=504,
            )
        finally:
            self.club_feed.forget(command_id)
            self._busy[peer] -= 1
            if not self._busy[peer]:
                del self._busy[peer]
        result = {**result, "round_trip_ms": round((time.monotonic() - started) * 1e3, 1)}
        refused = str(result.get("error", "")).startswith("refused")
        if refused:
            self.attempts.failed(peer)
            self.refusals.add(peer, f"table {table}: {result['error']}")
        elif result.get("ok"):
            self.attempts.succeeded(peer)
        return web.json_response(
            result, status=200 if result.get("ok") else 403 if refused else 422
        )


def _command_fields(body: dict[str, Any]) -> tuple[str, str, str, int]:
    table, key, token, arg = (body.get(k) for k in ("table", "key", "token", "arg"))
    if not all(isinstance(v, str) for v in (table, key, token)):
        raise Refused('"table", "key" and "token" must be strings')
    arg = 0 if arg is None else arg
    if isinstance(arg, bool) or not isinstance(arg, int):
        raise Refused('"arg" must be an integer')
    return table, key, token, arg  # type: ignore[return-value]


def _refuse(status: int, error: str, retry_s: float | None = None) -> web.Response:
    headers = {"Retry-After": str(math.ceil(retry_s))} if retry_s else None
    return web.json_response({"ok": False, "error": error}, status=status, headers=headers)


def _answer(future: asyncio.Future[dict[str, Any]], message: dict[str, Any]) -> None:
    if not future.done():  # (the request gave up waiting)
        future.set_result(message)
