"""How a decoded field reads on a terminal: one spelling for ``decode`` and ``monitor``.

>>> field_text("pos_mm", 100), field_text("text", "ok")
('pos_mm=100', "text='ok'")
>>> field_text("balls", [{"ball": 0, "x": 580, "y": 2311, "state": 0}])
'balls[1]=0:580,2311/0'
"""

from __future__ import annotations

from typing import Any


def field_text(name: str, value: Any) -> str:
    """One decoded field as ``name=value`` (a tracker frame's balls as ``ball:x,y/state``)."""
    if name == "balls":
        balls = " ".join(f"{b['ball']}:{b['x']},{b['y']}/{b['state']}" for b in value)
        return f"balls[{len(value)}]={balls}"
    if isinstance(value, str):
        return f"{name}={value!r}"
    return f"{name}={value}"
