"""The table's referee token: who may press the keypad's keys from the page or the broker.

Anyone on a club's network may watch a table; only the referee may change
its match.  The token is a shared secret: set in the config file
(``[referee] token``) or on the command line, or made at start and printed
once, so that the person who started the daemon can hand it to the referee.
It is compared in constant time, so a guesser learns nothing from timing.

>>> token = RefereeToken("s3cret")
>>> token.check("s3cret"), token.check("guess"), token.check(None)
(True, False, False)
"""

from __future__ import annotations

import hmac
import secrets

MIN_LENGTH = 6  # shorter is guessed by trying, whatever the compare


class RefereeToken:
    def __init__(self, secret: str | None = None) -> None:
        if secret is not None and len(secret) < MIN_LENGTH:
            raise ValueError(f"the referee token must be at least {MIN_LENGTH} characters")
        #: True when the token was made here: the daemon prints it once at start
        self.generated = secret is None
        self.value: str = secrets.token_urlsafe(12) if secret is None else secret

    def check(self, given: str | None) -> bool:
        if not given:
            return False
        return hmac.compare_digest(given.encode(), self.value.encode())
