"""Shared fixtures: organizations, users and workflows on the real (test) Postgres."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.db import connection

from tests import citus
from tests.factories import make_org, make_user, make_workflow

if citus.ENABLED:
    from tests.citus import django_db_setup  # noqa: F401 - the run's database, distributed on every node

# The `processes` fixture (real worker and web processes, stopped by PID) for every tier that needs it.
pytest_plugins = ["tests.workers.processes", "tests.sharding.recording"]

# The tiers (markers in pyproject.toml) by folder, so a new test in a tier's folder is in the tier:
# `pytest -m "not browser and not processes and not pgbouncer and not chain"` runs without Chromium,
# PgBouncer, ganache or extra processes.
TIERS = {"browser": "browser", "ops": "processes", "workers": "processes", "faults": "processes",
         "pgbouncer": "pgbouncer", "chain": "chain", "mcp": "processes", "hosts": "hosts", "ha": ("ha", "processes")}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(item.fspath).resolve()
        folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else None
        tiers = TIERS.get(folder) or ()
        for tier in (tiers,) if isinstance(tiers, str) else tiers:
            item.add_marker(getattr(pytest.mark, tier))
    if citus.ENABLED:
        citus.skip_single_server(items)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """One test database per pytest process, so runs started side by side (two developers'
    shells, CI and a local run on a shared server) never drop each other's database; and
    commits that do not wait for the disk."""
    from django.conf import settings

    default = settings.DATABASES["default"]
    # KEEPERSTATE_TEST_DB_NAME: a name chosen by a parent process (the PgBouncer test drops it).
    name = os.environ.get("KEEPERSTATE_TEST_DB_NAME") or f"test_keeperstate_{os.getpid()}"
    default.setdefault("TEST", {})["NAME"] = name
    # Tests need no crash durability: not waiting for each commit's WAL flush keeps the suite's
    # speed independent of the shared machine's disk. Locks, constraints and visibility are
    # unchanged.
    options = default.setdefault("OPTIONS", {})
    options["options"] = f"{options.get('options', '')} -c synchronous_commit=off".strip()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Users here have passwords only to log in; Django's default hasher (PBKDF2, a million
    rounds) takes about half a second per user created and per login, which added minutes to
    the suite. Processes a test starts (serve, workers) keep the default: their users are their
    own."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def waited_runs_pool():
    """Waited webhooks run in a pool of this process (keeperstate.executions.inprocess): after a
    test, its threads' database connections are closed, so none outlives the test database."""
    yield
    from keeperstate.executions import inprocess

    inprocess.stop()


@pytest.fixture
def org():
    return make_org("acme")


@pytest.fixture
def other_org():
    return make_org("globex")


@pytest.fixture
def user(org):
    return make_user("alice", org)


@pytest.fixture
def workflow(org, user):
    return make_workflow(org, user=user)


@pytest.fixture
def scope(workflow):
    from keeperstate.state.store import StateScope

    return StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)


@pytest.fixture
def monitor(org, user):
    """The reference block monitor (keeperstate.demo), saved in alice's organization."""
    from keeperstate.workflows.examples import block_monitor_graph

    nodes, edges = block_monitor_graph()
    return make_workflow(org, name="Block monitor", user=user, nodes=nodes, edges=edges)


@pytest.fixture
def foreign_workflow(other_org):
    """A workflow of another organization (globex), which alice must not see."""
    from keeperstate.workflows.examples import block_monitor_graph

    nodes, edges = block_monitor_graph()
    return make_workflow(other_org, name="Globex monitor", user=make_user("bob", other_org), nodes=nodes, edges=edges)


@pytest.fixture
def database_down(transactional_db):
    """Call it to make the next connections fail as if Postgres were down (no socket at the
    address): for the pages and answers of an outage. Restored after the test."""
    saved = {key: connection.settings_dict[key] for key in ("HOST", "PORT")}

    def down():
        connection.close()
        connection.settings_dict.update(HOST="/nonexistent-keeperstate-socket-dir", PORT="")

    yield down
    # Restored here, before the database fixture's own teardown needs a connection again.
    connection.close()
    connection.settings_dict.update(saved)


@pytest.fixture
def server():
    """A real HTTP server on 127.0.0.1 (tests/egress/server.py) for the HTTP Request tests."""
    from tests.egress.server import LocalServer

    started = LocalServer().start()
    yield started
    started.stop()


@pytest.fixture
def allow_server(settings, server):
    """The local server's address is allowed (as host:port only); every other private address is not."""
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}"]
    return server


@pytest.fixture
def allow_nothing(settings):
    settings.KEEPERSTATE_HTTP_ALLOW = []


@pytest.fixture
def client_as_alice(user):
    """Alice logged in, through Django's test client (it skips the CSRF check)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def csrf_client(user):
    """A logged-in client that, like a browser, must send the CSRF token."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client
