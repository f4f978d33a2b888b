"""Shared fixtures: the ICD's golden vectors from ../shared (or $FIRMWARE_HOST_SHARED)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(
    os.environ.get("FIRMWARE_HOST_SHARED", Path(__file__).resolve().parents[2] / "shared")
)


@pytest.fixture(scope="session")
def vectors() -> dict[str, Any]:
    path = SHARED / "ICD-vectors.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: the golden vectors come with ../shared")
    return json.loads(path.read_text())
