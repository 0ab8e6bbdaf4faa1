"""``KEEPERSTATE_CITUS=1``: the suite on a distributed database (docs/testing.md, "On Citus").

``DATABASE_URL`` names a database of a Citus coordinator whose workers are added
(``citus_add_node``); its ``pg_dist_node`` says which nodes the cluster has. The run then:

1. keeps a template database on every node, ``keeperstate_citus_template``: created, given the
   citus extension, its nodes added, migrated, and laid out by ``manage.py citus_layout``'s own
   statements (keeperstate/ops/citus.py); built again when the migrations or the layout changed
   (their digest is the database's comment);
2. creates the run's test database on every node from it (``CREATE DATABASE … TEMPLATE``: the
   coordinator's copy holds Citus's metadata, the workers' copies the shards it names), and drops
   it on every node at the end.

Tests that measure something only one server has (a plan, a table's statistics, a trigger's
calls counted on the table the coordinator holds as an empty shell) are marked
``single_server(reason)`` and reported as skipped there with their reason, never silently.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings

ENABLED = os.environ.get("KEEPERSTATE_CITUS", "") not in ("", "0", "false")
TEMPLATE = "keeperstate_citus_template"
ROOT = Path(__file__).resolve().parents[1]
LOCK = 4_207_301  # an advisory lock on the coordinator: one run builds the template at a time


# The reasons shared by many tests, as markers.
PLAN = pytest.mark.single_server(
    "counts the buffers of one server's plan (EXPLAIN ANALYZE); on Citus the coordinator plans no scan of a shard"
)
STATISTICS = pytest.mark.single_server(
    "counts what one server's statistics saw (pg_stat_*); on Citus the coordinator's tables are empty shells "
    "and the shards' counters are on the workers"
)

BENCH = pytest.mark.single_server(
    "bench_state measures one server against plain tables of its own, and drops its organizations with their "
    "workflows in one transaction, which Citus refuses after the workflows' parallel delete (docs/scaling.md, "
    "the benchmarks' own rows)"
)


def skip_single_server(items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker("single_server")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"not applicable on a distributed database: {reason}"))


class Cluster:
    """The coordinator named by the settings and its workers, each reached as the same user."""

    def __init__(self, database: dict[str, Any]):
        self.database = database
        with self.connect(database["HOST"], database["PORT"], database["NAME"]) as conn:
            rows = conn.execute("SELECT groupid, nodename, nodeport FROM pg_dist_node ORDER BY groupid").fetchall()
        if not rows or rows[0][0] != 0:
            raise pytest.UsageError(
                f"KEEPERSTATE_CITUS=1: the database {database['NAME']} is not a Citus coordinator with its workers "
                "added (SELECT citus_set_coordinator_host(…); SELECT citus_add_node(…) for each worker)."
            )
        self.coordinator = (rows[0][1], rows[0][2])
        self.workers = [(host, port) for _group, host, port in rows[1:]]

    @property
    def nodes(self) -> list[tuple[str, int]]:
        return [self.coordinator, *self.workers]

    def connect(self, host: str, port: Any, name: str) -> psycopg.Connection[Any]:
        return psycopg.connect(host=host, port=port, dbname=name, user=self.database["USER"],
                               password=self.database.get("PASSWORD") or None, autocommit=True)

    def on_every_node(self, sql: str) -> None:
        for host, port in self.nodes:
            with self.connect(host, port, "postgres") as conn:
                conn.execute(sql)

    def digest(self) -> str:
        parts = sorted(ROOT.glob("keeperstate/**/migrations/*.py")) + [ROOT / "keeperstate/ops/citus.py"]
        return hashlib.sha256(b"".join(path.read_bytes() for path in parts)).hexdigest()[:16]

    def template_digest(self) -> str | None:
        with self.connect(*self.coordinator, "postgres") as conn:
            row = conn.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [TEMPLATE]
            ).fetchone()
        return row[0] if row else None

    def build_template(self) -> None:
        from django.core.management import call_command
        from django.db import connections

        self.drop(TEMPLATE)
        self.on_every_node(f'CREATE DATABASE "{TEMPLATE}"')
        for host, port in self.nodes:
            with self.connect(host, port, TEMPLATE) as conn:
                conn.execute("CREATE EXTENSION citus")
        with self.connect(*self.coordinator, TEMPLATE) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", self.coordinator)
            for host, port in self.workers:
                conn.execute("SELECT citus_add_node(%s, %s)", [host, port])
        connections["default"].close()
        connections["default"].settings_dict["NAME"] = TEMPLATE
        try:
            call_command("migrate", verbosity=0, interactive=False)
            call_command("citus_layout", verbosity=0)
        finally:
            connections["default"].close()
        # Nobody may be connected to a database being copied, and Citus's daemons connect to every
        # database with its extension: the template takes no connections from now on.
        self.on_every_node(f'ALTER DATABASE "{TEMPLATE}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
        for host, port in self.nodes:
            with self.connect(host, port, "postgres") as conn:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [TEMPLATE])
        with self.connect(*self.coordinator, "postgres") as conn:
            conn.execute(f"COMMENT ON DATABASE \"{TEMPLATE}\" IS '{self.digest()}'")

    def create(self, name: str) -> None:
        with self.connect(*self.coordinator, "postgres") as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", [LOCK])
            try:
                if self.template_digest() != self.digest():
                    self.build_template()
                self.drop(name)
                for host, port in self.nodes:
                    with self.connect(host, port, "postgres") as node:
                        node.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", [LOCK])

    def drop(self, name: str) -> None:
        for host, port in self.nodes:
            with self.connect(host, port, "postgres") as conn:
                if conn.execute("SELECT datistemplate FROM pg_database WHERE datname = %s", [name]).fetchone():
                    conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
                    conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment: Any, django_db_blocker: Any,
                    django_db_modify_db_settings: Any) -> Iterator[None]:
    """The run's database, copied on every node from the distributed template (replaces
    pytest-django's, which would create a plain database on the coordinator alone)."""
    from django.db import connections

    default = settings.DATABASES["default"]
    name = default["TEST"]["NAME"]
    with django_db_blocker.unblock():
        cluster = Cluster(default)
        cluster.create(name)
        connections["default"].close()
        default["NAME"] = name
        connections["default"].settings_dict["NAME"] = name
    yield
    with django_db_blocker.unblock():
        connections.close_all()
        cluster.drop(name)
