"""The store keeps one cursor per connection (keeperstate.state.db.kept_cursor): reused from one
operation to the next, never past its connection, and never while Django logs queries."""

from __future__ import annotations

import pytest
from django.db import close_old_connections, connection
from django.test.utils import CaptureQueriesContext

from keeperstate.core.cursors import kept_cursor
from keeperstate.state.store import state_delete, state_get, state_increment, state_set


@pytest.mark.django_db
def test_every_operation_of_the_store_goes_through_one_cursor(scope):
    state_set(scope=scope, key="cursor", value=1)
    cursor = kept_cursor(connection)
    state_increment(scope=scope, key="cursor")
    state_get(scope=scope, key="cursor")
    state_delete(scope=scope, key="cursor")
    assert kept_cursor(connection) is cursor
    assert not cursor.closed


@pytest.mark.django_db
def test_while_django_logs_queries_the_store_is_seen_statement_by_statement(scope, monkeypatch):
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", True)  # as served
    state_set(scope=scope, key="logged", value=1)  # a kept cursor exists before logging starts
    with CaptureQueriesContext(connection) as queries:
        state_get(scope=scope, key="logged")
        state_set(scope=scope, key="logged", value=2)
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]  # the test's transaction
    assert len(statements) == 2, statements
    assert "keeperstate_set_key" in statements[1]


@pytest.mark.django_db(transaction=True)
def test_a_closed_connection_gets_a_new_cursor_on_its_successor(scope):
    state_set(scope=scope, key="reopened", value=1)
    before = kept_cursor(connection)
    connection.close()
    assert state_get(scope=scope, key="reopened").value == 1  # the old cursor's connection is closed
    assert kept_cursor(connection) is not before


@pytest.mark.django_db(transaction=True)
def test_a_broken_connection_is_replaced_at_the_next_request(scope):
    """What a Postgres restart does to a web process's idle connection: the next request's
    health check finds it unusable, and the store's next statement runs on a new connection.
    (Broken from the client's side, the same through PgBouncer, whose client connection a
    server's restart does not end.)"""
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]
    state_set(scope=scope, key="restart", value=7)
    broken = connection.connection
    broken.close()  # Django still holds it, as it holds one whose server went away
    close_old_connections()  # what Django does at the start of each request
    assert state_get(scope=scope, key="restart").value == 7
    assert connection.connection is not broken
