"""``firmware-host run`` with the live page served as before issue 23's last step: aiohttp in a
thread of the daemon's own process (``web/server.py`` on a ``LiveFeed``), for
bench/hostile_load.py to compare with the page's own process in the same run.

    python bench/page_in_process.py run --web 127.0.0.1:0 ...   (as ``python -m firmware_host``)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from firmware_host.commands import run
from firmware_host.jsonout import match_state
from firmware_host.web.feed import LiveFeed
from firmware_host.web.server import WebServer


class InProcess(LiveFeed):
    """The page process's interface (web/process.py) on the server in a thread."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host, self.port = host, port
        self.server: WebServer | None = None

    def launch(self) -> InProcess:
        return self

    def start(self, token: Any = None, press: Any = None) -> int:
        self.server = WebServer(self, self.host, self.port, token, press)
        self.port = self.server.start()
        return self.port

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def line(self, line: dict[str, Any], state: Any = None) -> None:
        super().line(line, match_state(state))

    def state(self, state: Any) -> None:
        super().state(match_state(state))


run._web_modules = lambda: InProcess  # type: ignore[attr-defined]

if __name__ == "__main__":
    from firmware_host.cli import main

    sys.exit(main())
