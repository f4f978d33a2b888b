"""What a page's server holds per client: token attempts, streams, connections (docs/security.md).

A club's network is shared, and anyone on it can reach the pages.  The
referee token is checked in constant time, but a guesser was free to try
1 300 tokens a second: :class:`Attempts` lets each address ``free`` wrong
tokens a window, then answers 429 until the window ends, and every refusal is
logged with its address (:class:`~firmware_host.untrusted.Refusals`).

>>> attempts = Attempts(free=2, window_s=60, clock=lambda: 0.0)
>>> for _ in range(3):
...     attempts.failed("10.0.0.5")
>>> attempts.wait_s("10.0.0.5"), attempts.wait_s("10.0.0.6")
(60.0, 0.0)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

FREE = 10  # wrong tokens an address may try in a window
WINDOW_S = 60.0
ADDRESSES = 4096  # addresses remembered; the oldest is forgotten first


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
