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
import threading
import time
from typing import Any

from aiohttp import web

from ..web.feed import Broadcast
from ..web.server import WebServer
from .club import Club

SHOWN = ("verdict", "state", "lamp", "health", "online", "command/result")  # not every event
RESULT_S = 5.0  # a table answers a command within this, or the page says it did not


class ClubFeed(Broadcast):
    """The broker's messages for the page: each table's latest, and the stream."""

    def __init__(self) -> None:
        super().__init__()
        self.club: Club | None = None
        self._results: dict[str, dict[str, Any]] = {}
        self._answered = threading.Condition(self._lock)

    def message(self, table: str, kind: str, message: dict[str, Any]) -> None:
        """From the broker (paho's thread)."""
        if kind == "command/result" and isinstance(message.get("id"), str):
            with self._answered:
                self._results[message["id"]] = message
                self._answered.notify_all()
        if kind in SHOWN:
            self._send({"table": table, "kind": kind, "message": message})

    def result(self, command_id: str, timeout_s: float) -> dict[str, Any] | None:
        """The table's outcome of a command (blocking: call it from an executor)."""
        with self._answered:
            self._answered.wait_for(lambda: command_id in self._results, timeout_s)
            return self._results.pop(command_id, None)

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

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/command", self.command)

    async def command(self, request: web.Request) -> web.Response:
        """``{"table", "key", "arg", "token"}`` → the table's outcome (or 504: no answer)."""
        try:
            body = await request.json()
            table, key, token = (str(body[k]) for k in ("table", "key", "token"))
            arg = int(body.get("arg", 0))
        except (ValueError, KeyError, TypeError):
            return web.json_response({"ok": False, "error": "bad request"}, status=400)
        club = self.club_feed.club
        assert club is not None
        if table not in club.snapshot():
            return web.json_response({"ok": False, "error": f"no table {table}"}, status=404)
        command_id = club.command(table, key, arg, token)
        started = time.monotonic()
        result = await asyncio.get_running_loop().run_in_executor(
            None, self.club_feed.result, command_id, RESULT_S
        )
        if result is None:
            return web.json_response(
                {"id": command_id, "ok": False, "error": f"table {table} did not answer"},
                status=504,
            )
        result = {**result, "round_trip_ms": round((time.monotonic() - started) * 1e3, 1)}
        refused = str(result.get("error", "")).startswith("refused")
        return web.json_response(
            result, status=200 if result.get("ok") else 403 if refused else 422
        )
