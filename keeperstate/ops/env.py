"""Settings read from the environment: one reading of a boolean or a number for every module
that needs one before Django's settings exist (keeperstate.ops.database) or while it builds them."""

from __future__ import annotations

import os


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default
