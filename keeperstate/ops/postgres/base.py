"""The service's database backend: Django's postgresql backend with a health check that costs
no round trip while the connection is quiet, and a transaction's BEGIN sent with its first
statement.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS), with a
``SELECT 1``: a round trip on every request, as many as a run's own statement. A server that
closes a connection (a restart, ``pg_terminate_backend``, the machine's Postgres shutting down)
first sends it a message or an end of file, so a connection with nothing to read is one the
server has not closed: only then is the ``SELECT 1`` skipped. Anything to read, between two
requests, is sent on to Django's check, which decides. The worker's pool checks the connections
it lends the same way (keeperstate.executions.listening).

psycopg opens a transaction by sending ``BEGIN`` on its own and waiting for it, before the
transaction's first statement: a round trip of its own in every transaction (a run in one
commit, a state write, a worker's claim). Here, when that first statement has parameters and is
sent by a cursor's ``execute`` with server-side binding (the service's default: prepared
statements), ``BEGIN`` and the statement go in one pipeline, one round trip; the statement's
rows, row count or error come back as before, and so does the transaction's status (open, or
failed until the rollback). Every other first statement keeps psycopg's own ``BEGIN``: one
without parameters, or bound on the client (prepared statements off), may hold several commands,
which a pipeline refuses; ``executemany``, a named cursor and ``copy`` have their own ways. This
leans on psycopg's ``_start_query``, private: psycopg is pinned (requirements.txt), and
tests/executions/test_round_trips.py fails on a release that changes it (ADR 0082).
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from django.db.backends.postgresql import base as postgresql
from psycopg import pq
from psycopg.abc import PQGen

_IDLE = pq.TransactionStatus.IDLE


def quiet(raw: Any) -> bool | None:
    """Whether a psycopg connection is known usable without asking the server: True when it is
    open, idle and has nothing to read; False when it is closed or broken; None when only a query
    can tell (in a transaction, or something arrived)."""
    if raw.closed or raw.broken:
        return False
    if raw.info.transaction_status != pq.TransactionStatus.IDLE:
        return None
    try:
        readable, _, _ = select.select([raw.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return None if readable else True


class Connection(psycopg.Connection[Any]):
    """psycopg's connection, whose BEGIN may go with the transaction's first statement."""

    begin_rides = False  # set by a cursor for one execute sent in a pipeline with the BEGIN
    begins_alone = 0  # BEGINs sent on their own, each a round trip (keeperstate.ops.round_trips)

    def _start_query(self) -> PQGen[None]:
        if not self._autocommit and self.pgconn.transaction_status == _IDLE:
            if self.begin_rides:
                # Queued in the cursor's pipeline, whose sync follows the statement: no wait here.
                yield from self._exec_command(self._get_tx_start_command())
                return
            self.begins_alone += 1
        yield from super()._start_query()


class _BeginWithFirstStatement(psycopg.Cursor[Any]):
    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,  # type: ignore[override]
                binary: bool | None = None) -> Any:
        conn = self._conn
        if (not params or not isinstance(conn, Connection) or conn._autocommit or conn._pipeline is not None
                or conn.pgconn.transaction_status != _IDLE):
            # No parameters: the simple protocol, which allows several commands in one string.
            return super().execute(query, params, prepare=prepare, binary=binary)
        conn.begin_rides = True
        try:
            with conn.pipeline():  # its end sends BEGIN and the statement, and waits once
                super().execute(query, params, prepare=prepare, binary=binary)
        finally:
            conn.begin_rides = False
        return self


# Django's cursor for server-side binding (prepared statements, the service's default): a statement
# with parameters goes by the extended protocol, as in a pipeline, so it is one command either way.
# Django's other cursor binds on the client and may send several commands in one string, which a
# pipeline refuses: it keeps psycopg's BEGIN.
_SERVER_BINDING = getattr(postgresql, "ServerBindingCursor")  # noqa: B009 - defined for psycopg 3 only
_RIDING = type(_SERVER_BINDING.__name__, (_BeginWithFirstStatement, _SERVER_BINDING), {})


class DatabaseWrapper(postgresql.DatabaseWrapper):
    # How many health checks this connection wrapper has sent as queries (keeperstate.ops.round_trips).
    health_check_queries = 0

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        if params["cursor_factory"] is _SERVER_BINDING:
            params["cursor_factory"] = _RIDING
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        if type(connection) is psycopg.Connection:
            # psycopg.connect() builds its own class and takes no other; this one only adds
            # methods (no state of its own but two counters), so the instance may become one.
            connection.__class__ = Connection
        return connection

    def is_usable(self) -> bool:
        if self.connection is None:
            return False
        known = quiet(self.connection)
        if known is not None:
            return known
        self.health_check_queries += 1
        return bool(super().is_usable())
