"""The state tests, run again through PgBouncer in transaction mode (issue 12.4).

In transaction mode a server connection serves a different client after every transaction, so
nothing may rely on connection options (``-c …``, which PgBouncer does not pass on) or on
session state. The store and its triggers use neither: retention is read from
keeperstate_setting, and a deleter writes its own history event. This test starts Debian's
``pgbouncer`` in front of the database the suite uses and runs ``tests/state`` through it in a
child pytest; it skips only when ``pgbouncer`` is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from keeperstate.ops.database import EMBEDDED_ENGINE
from keeperstate.ops.embedded.base import fill_address
from tests.ops.serving import free_port

pytestmark = pytest.mark.pgbouncer

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30
RUN_TIMEOUT = 1800


def _server() -> dict[str, str]:
    """Host (socket folder or address), port and user of the database the suite runs on."""
    db = settings.DATABASES["default"]
    # The embedded server's address is known once a connection opened (started here if no test has).
    if db["ENGINE"] == EMBEDDED_ENGINE:
        fill_address(db)
    host = db.get("HOST") or db.get("OPTIONS", {}).get("host") or "127.0.0.1"
    return {"host": host, "port": str(db.get("PORT") or 5432), "user": db.get("USER") or "postgres"}


@pytest.fixture
def bouncer():
    """A pgbouncer in transaction mode on a free local port; stopped (by its pid) afterwards."""
    binary = shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.path.exists(p)), None
    )
    if binary is None:
        pytest.skip("pgbouncer is not installed (apt-get install -y pgbouncer; .ci/run does)")
    server = _server()
    port = free_port()
    # Its own folder, readable by the user PgBouncer switches to (pytest's tmp_path is root-only).
    tmp_path = Path(tempfile.mkdtemp(prefix="keeperstate-pgbouncer-"))
    tmp_path.chmod(0o777)
    conf = tmp_path / "pgbouncer.ini"
    lines = [
        "[databases]",
        # The suite's conftest asks for synchronous_commit=off with -c, which PgBouncer cannot pass
        # on (it drops it, below): the pool sets it per server connection instead, so the run
        # through PgBouncer takes as long as the direct one. The service itself sends no option.
        f"* = host={server['host']} port={server['port']} user={server['user']}"
        " connect_query='SET synchronous_commit = off'",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = any",
        "pool_mode = transaction",
        "max_client_conn = 200",
        "default_pool_size = 40",
        "ignore_startup_parameters = extra_float_digits,options",
        "log_connections = 0",
        "log_disconnections = 0",
        f"logfile = {tmp_path / 'pgbouncer.log'}",
        f"pidfile = {tmp_path / 'pgbouncer.pid'}",
    ]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root; become the database socket's owner
        owner = os.stat(server["host"]).st_uid if os.path.isdir(server["host"]) else pwd.getpwnam("nobody").pw_uid
        lines.append(f"user = {pwd.getpwuid(owner).pw_name}")
    conf.write_text("\n".join(lines) + "\n")
    conf.chmod(0o644)
    # Its output goes to the log file only: an unread pipe would fill and stall it.
    process = subprocess.Popen([binary, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (tmp_path / "pgbouncer.log").read_text() if (tmp_path / "pgbouncer.log").exists() else ""
                    pytest.fail(f"pgbouncer did not start: {log[-2000:]}")
                time.sleep(0.1)
        yield {**server, "bouncer_port": str(port), "log": str(tmp_path / "pgbouncer.log")}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(tmp_path, ignore_errors=True)


def test_state_suite_passes_through_pgbouncer_in_transaction_mode(bouncer):
    database = f"test_keeperstate_bouncer_{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgresql://{bouncer['user']}@127.0.0.1:{bouncer['bouncer_port']}/postgres",
        "KEEPERSTATE_TEST_DB_NAME": database,
        # PgBouncer 1.18 in transaction mode cannot keep a connection's prepared statements
        # (README, "Production settings").
        "KEEPERSTATE_DB_PREPARED_STATEMENTS": "false",
    }
    try:
        # --reuse-db: the child creates the database but does not drop it (PgBouncer still holds
        # server connections to it); this test drops it once PgBouncer is gone.
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/state", "-q", "-p", "no:cacheprovider", "--reuse-db"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
        )
    finally:
        _drop_database_later(bouncer, database)
    tail = "\n".join(result.stdout.splitlines()[-30:])
    assert result.returncode == 0, f"tests/state through pgbouncer failed:\n{tail}\n{result.stderr[-2000:]}"
    assert " passed" in tail


_to_drop: list[tuple[dict[str, str], str]] = []


def _drop_database_later(server: dict[str, str], database: str) -> None:
    _to_drop.append((server, database))


@pytest.fixture(autouse=True)
def _drop_child_databases():
    """Drop the child's database directly on the server, after the bouncer fixture stopped."""
    yield
    while _to_drop:
        server, database = _to_drop.pop()
        with psycopg.connect(host=server["host"], port=server["port"], user=server["user"], dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
