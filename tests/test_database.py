"""Database selection and the embedded Postgres, exercised in real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = "from django.db import connection; connection.ensure_connection(); print('connected')"


def manage(*args: str, data_dir: Path | str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["KEEPERSTATE_DATA_DIR"] = str(data_dir)
    return subprocess.Popen(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


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
