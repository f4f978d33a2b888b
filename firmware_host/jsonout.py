"""JSON as the host writes it for others: stdout lines, the live page, the broker.

Neutral ground for the command line, the page and the publisher alike:
text that is always JSON (:func:`dumps`) and the match state as the page
and the broker show it (:func:`match_state`).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

log = logging.getLogger("firmware_host.cliutil")  # the name logs have always shown


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that never writes NaN or Infinity (they are not JSON).

    A non-finite number is a bug upstream; it is written as ``null`` and logged.
    """
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:
        log.warning("a non-finite number in the output was written as null: %.200r", obj)
        return json.dumps(_finite(obj), allow_nan=False, **kwargs)


def match_state(state: Any) -> dict[str, Any] | None:
    """The referee's match state as the live page and the broker show it (JSON-ready)."""
    if state is None:
        return None
    return {
        "frame": state.frame,
        "to_play": state.to_play,
        "pocketed": {str(p): len(b) for p, b in state.pocketed.items()},
    }
