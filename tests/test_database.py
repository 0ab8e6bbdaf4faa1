"""Database selection and the embedded Postgres, exercised in real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from django.db import DatabaseError, connection

from keeperstate.ops import database
from keeperstate.ops.embedded.base import DatabaseWrapper, fill_address
from keeperstate.ops.env import InvalidEnvironment
from tests.ops.serving import alive, own_embedded_server, pid_list, postmaster_pid, stop_embedded_postgres, wait_until

ROOT = Path(__file__).resolve().parent.parent
PROBE = "from django.db import connection; connection.ensure_connection(); print('connected')"


def manage(*args: str, data_dir: Path | str) -> subprocess.Popen:
    return python("manage.py", *args, data_dir=data_dir)


def python(*args: str, data_dir: Path | str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["KEEPERSTATE_DATA_DIR"] = str(data_dir)
    return subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """Its output once it exits; killed (by its pid) if it does not within ``timeout``."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=10)
        raise


def postgres_processes(data_dir: Path) -> list[int]:
    """Postgres servers running on a folder under ``data_dir``."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "postgres" and str(data_dir) in " ".join(process.info["cmdline"] or []):
            found.append(process.pid)
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "import django; import keeperstate.settings"],
        ["-c", "from keeperstate.wsgi import application"],  # settings, apps and the whole site loaded
        ["manage.py", "--help"],
        ["manage.py", "check"],
    ],
    ids=["import settings", "load the WSGI application", "manage.py --help", "manage.py check"],
)
def test_loading_settings_and_the_site_starts_no_database(tmp_path, args):
    data_dir = tmp_path / "data"

    process = python(*args, data_dir=data_dir)
    _out, err = finish(process, 120)

    assert process.returncode == 0, err
    assert not (data_dir / "postgres").exists()
    assert postgres_processes(tmp_path) == []


@own_embedded_server
def test_a_command_that_needs_the_database_starts_the_embedded_server_and_stops_it_after(tmp_path):
    data_dir = tmp_path / "data"
    try:
        process = manage("showmigrations", "keeperstate", data_dir=data_dir)
        out, err = finish(process, 240)

        assert process.returncode == 0, err
        assert "[ ] 0001_" in out  # it read the (new, empty) database
        assert (data_dir / "postgres" / "PG_VERSION").exists()
        assert pid_list(data_dir) == []
        server = postmaster_pid(data_dir)
        wait_until(lambda: server is None or not alive(server), 30, "the embedded Postgres to stop")
        assert postgres_processes(tmp_path) == []
    finally:
        stop_embedded_postgres(data_dir)


def test_an_embedded_server_that_cannot_start_fails_the_command_in_one_line(tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "postgres").mkdir(parents=True)
    (data_dir / "postgres" / "PG_VERSION").write_text("9\n")  # initdb is skipped; the start fails

    process = manage("showmigrations", data_dir=data_dir)
    out, err = finish(process, 120)

    assert process.returncode == 1
    assert out == ""
    assert err.strip().splitlines() == [err.strip()], err
    assert err.startswith(f"KeeperState cannot start: Could not start the embedded Postgres in {data_dir}")
    assert "DATABASE_URL" in err
    assert pid_list(data_dir) == []


def test_several_processes_start_the_embedded_postgres_at_once(tmp_path):
    processes = [manage("shell", "-c", PROBE, data_dir=tmp_path) for _ in range(4)]

    outcomes = [p.communicate(timeout=120) for p in processes]

    assert [p.returncode for p in processes] == [0, 0, 0, 0], outcomes
    assert all(out.strip().endswith("connected") for out, _err in outcomes)
    assert (tmp_path / "postgres" / "PG_VERSION").exists()
    assert len((tmp_path / "secret_key").read_text().strip()) >= 50  # one whole key, not a torn write
    assert not list(tmp_path.glob("secret_key.*"))  # no drafts left behind


def test_a_failed_start_says_why_in_one_line():
    process = manage("check", data_dir="/proc/keeperstate-cannot-be-here")

    _out, err = process.communicate(timeout=60)

    assert process.returncode == 1
    assert err.strip().splitlines() == [err.strip()]
    assert err.startswith("KeeperState cannot start: Cannot create the data folder")
    assert "KEEPERSTATE_DATA_DIR" in err


def test_database_url_wins_over_the_embedded_server(monkeypatch):
    from keeperstate.ops import database

    monkeypatch.setenv("DATABASE_URL", "postgresql://ks:secret@db.example:6543/keeperstate")

    config = database.database_config()

    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == ("db.example", 6543, "keeperstate", "ks")
    assert not database.using_embedded()


def test_prepared_statements_are_on_unless_switched_off(monkeypatch):
    from keeperstate.ops import database

    monkeypatch.delenv("KEEPERSTATE_DB_PREPARED_STATEMENTS", raising=False)
    options = database.database_config().get("OPTIONS", {})
    assert (options.get("server_side_binding"), options.get("prepare_threshold")) == (True, 5)

    monkeypatch.setenv("KEEPERSTATE_DB_PREPARED_STATEMENTS", "false")
    options = database.database_config().get("OPTIONS", {})
    assert "server_side_binding" not in options
    assert "prepare_threshold" not in options


@pytest.mark.django_db
def test_a_statement_sent_a_fifth_time_is_prepared_on_the_connection():
    from django.db import connection

    from keeperstate.accounts.access import _WORKFLOW_FOR_USER_SQL

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                           ['%FROM "workflow" w%'])
            return cursor.fetchone()[0]

    before = prepared()
    with connection.cursor() as cursor:
        for _ in range(6):
            cursor.execute(_WORKFLOW_FOR_USER_SQL, ["00000000-0000-0000-0000-000000000000", 0])
    assert prepared() == before + 1


def test_without_database_url_the_embedded_backend_is_configured_without_an_address(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)

    config = database.database_config()

    assert config["ENGINE"] == database.EMBEDDED_ENGINE == "keeperstate.ops.embedded"
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == ("", "", "postgres", "postgres")
    assert database.using_embedded()


def test_a_database_url_that_is_not_postgres_is_refused_without_showing_its_password(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "mysql://ks:hunter2@db.example/keeperstate")

    with pytest.raises(InvalidEnvironment) as refused:
        database.database_config()

    assert str(refused.value) == (
        "DATABASE_URL must be a postgresql:// URL such as postgresql://user@host:5432/db (got 'mysql')"
    )


def test_a_server_that_cannot_start_is_a_database_error_with_its_one_sentence(monkeypatch):
    def cannot_start():
        raise database.StartupError("Could not start the embedded Postgres in /x (it is broken).")

    monkeypatch.setattr(database, "_server", None)  # as in a process that has not connected yet
    monkeypatch.setattr(database, "_start_embedded_server", cannot_start)
    probe = DatabaseWrapper({**connection.settings_dict, "HOST": "", "PORT": ""}, alias="probe")

    with pytest.raises(database.EmbeddedServerUnavailable) as failed, probe.wrap_database_errors:
        probe.connect()  # what ensure_connection does, which pytest-django blocks outside django_db

    # A database error: a request meets the 503 of an outage; manage.py prints the sentence.
    assert isinstance(failed.value, DatabaseError)
    assert isinstance(failed.value, database.StartupError)
    assert str(failed.value) == "Could not start the embedded Postgres in /x (it is broken)."
    assert probe.settings_dict["HOST"] == ""  # the next connection tries again


def test_a_host_set_already_is_left_as_it_is():
    settings_dict = {"HOST": "/nonexistent-keeperstate-socket-dir", "PORT": ""}

    fill_address(settings_dict)  # would start a server if it had to

    assert settings_dict == {"HOST": "/nonexistent-keeperstate-socket-dir", "PORT": ""}


@own_embedded_server
@pytest.mark.django_db
def test_the_first_connection_fills_in_the_embedded_servers_address():
    connection.ensure_connection()
    filled = connection.settings_dict
    probe = DatabaseWrapper({**filled, "HOST": "", "PORT": ""}, alias="probe")

    params = probe.get_connection_params()

    assert filled["HOST"].startswith("/")  # the socket folder
    assert (params["host"], params["port"]) == (filled["HOST"], filled["PORT"])
    assert (probe.settings_dict["HOST"], probe.settings_dict["PORT"]) == (filled["HOST"], filled["PORT"])
    assert database.database_url({**filled, "HOST": "", "PORT": ""}) == database.database_url(filled)


def test_a_database_url_gets_the_service_backend(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/keeperstate")

    assert database.database_config()["ENGINE"] == database.POSTGRES_ENGINE == "keeperstate.ops.postgres"


def health_check() -> tuple[bool, int]:
    """What Django does before a request reuses the connection: whether it was kept, and how many
    health checks the connection has sent as a query so far."""
    connection.health_check_done = False
    kept = connection.connection
    connection.close_if_health_check_failed()
    return connection.connection is kept and kept is not None, connection.health_check_queries


@pytest.mark.django_db(transaction=True)
def test_a_quiet_kept_connection_is_checked_without_a_round_trip():
    connection.ensure_connection()
    _kept, sent_before = health_check()

    kept, sent = health_check()

    assert kept
    assert sent == sent_before  # nothing to read on the socket: no SELECT 1


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_closed_is_found_by_its_health_check_and_replaced():
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with database_connection() as other:  # the server ends our backend, as a restart would
        other.execute("SELECT pg_terminate_backend(%s::integer)", [pid])
    wait_until(lambda: _readable(connection.connection), 10, "the server's notice to arrive")
    sent_before = connection.health_check_queries

    kept, sent = health_check()

    assert not kept  # closed by the check, which asked the server
    assert connection.connection is None
    assert sent == sent_before + 1
    with connection.cursor() as cursor:  # and the next statement opens a new connection
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert connection.connection.info.backend_pid != pid


def database_connection():
    import psycopg

    return psycopg.connect(database.database_url(connection.settings_dict), autocommit=True)


def _readable(raw) -> bool:
    import select

    return bool(select.select([raw.fileno()], [], [], 0)[0])
CLUSTER = {"HOST": "127.0.0.1,127.0.0.1,127.0.0.1", "PORT": "5451,5452,5453"}


@pytest.mark.parametrize("url", [
    # libpq's spelling, and the query's; target_session_attrs given or added
    "postgresql://ks@127.0.0.1:5451,127.0.0.1:5452,127.0.0.1:5453/keeperstate?target_session_attrs=read-write",
    "postgresql://ks@127.0.0.1:5451,127.0.0.1:5452,127.0.0.1:5453/keeperstate",
    "postgresql://ks@/keeperstate?host=127.0.0.1,127.0.0.1,127.0.0.1&port=5451,5452,5453&target_session_attrs=read-write",
    "postgresql://ks@/keeperstate?host=127.0.0.1,127.0.0.1,127.0.0.1&port=5451,5452,5453",
], ids=["libpq", "libpq-added", "query", "query-added"])
def test_a_cluster_url_in_either_spelling_lists_its_hosts_and_writes_only_to_the_primary(monkeypatch, url):
    monkeypatch.setenv("DATABASE_URL", url)

    config = database.database_config()

    assert {key: config[key] for key in CLUSTER} == CLUSTER
    assert (config["NAME"], config["USER"], config["OPTIONS"]["target_session_attrs"]) == ("keeperstate", "ks",
                                                                                            "read-write")
    # and a child process given the same database gets the same hosts back
    monkeypatch.setenv("DATABASE_URL", database.database_url(config))
    assert {key: database.database_config()[key] for key in CLUSTER} == CLUSTER


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://ks:hunter2@h1:5451,h2:5452/keeperstate?target_session_attrs=any",
     "DATABASE_URL lists several hosts with target_session_attrs=any: use read-write (or leave it out), so that "
     "only the primary is written to"),
    ("postgresql://ks:hunter2@h1:5451,h2:port/keeperstate",
     "DATABASE_URL's ports must be numbers, one per host, as in postgresql://user@h1:5432,h2:5432/db"),
    ("postgresql://ks:hunter2@/keeperstate?host=h1,h2,h3&port=5451,5452",
     "DATABASE_URL lists 3 host(s) and 2 port(s): give one port for all hosts or one per host, as in "
     "postgresql://user@h1:5432,h2:5432,h3:5432/db"),
    ("postgres:/ks:hunter2@h1:5432",
     "DATABASE_URL must be a postgresql:// URL such as postgresql://user@host:5432/db (got 'no scheme')"),
])
def test_a_wrong_cluster_url_is_refused_in_one_line_without_its_password(monkeypatch, url, message):
    monkeypatch.setenv("DATABASE_URL", url)

    with pytest.raises(InvalidEnvironment) as refused:
        database.database_config()

    assert str(refused.value) == message
    assert "hunter2" not in str(refused.value)


@pytest.mark.django_db
def test_a_cluster_url_connects_to_the_writable_host_of_its_list(monkeypatch):
    # given the suite's own server listed after an address where nothing listens
    from django.db import connection

    from tests.ops.serving import free_port

    real = connection.settings_dict
    if real["ENGINE"] == database.EMBEDDED_ENGINE:
        from keeperstate.ops.embedded.base import fill_address

        fill_address(real)
    host = real["HOST"] or "127.0.0.1"
    monkeypatch.setenv("DATABASE_URL", database.database_url({**real, "HOST": f"127.0.0.1,{host}",
                                                               "PORT": f"{free_port()},{real['PORT'] or 5432}"}))
    config = {**database.database_config(), "NAME": real["NAME"]}

    # when a connection is made with it, as Django makes one
    import psycopg

    params = {"host": config["HOST"], "port": config["PORT"], "dbname": config["NAME"], "user": config["USER"],
              "password": config["PASSWORD"] or None, **{k: v for k, v in config["OPTIONS"].items()
                                                         if k == "target_session_attrs"}}
    with psycopg.connect(**params, connect_timeout=5) as conn:
        # then it is on the server that takes writes
        assert conn.execute("SELECT NOT pg_is_in_recovery()").fetchone() == (True,)
