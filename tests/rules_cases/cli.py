"""Run ``python -m firmware_host`` as a user would, from the repository root."""

from __future__ import annotations

from proc_util import run_cli as firmware_host

__all__ = ["firmware_host"]
