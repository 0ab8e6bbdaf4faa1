"""The service's database backend: Django's postgresql backend with a health check that costs
no round trip while the connection is quiet, a transaction's BEGIN sent with its first statement,
and a last write answered with the COMMIT.

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

A write whose answer nobody reads before the commit (a run's record, written at its end) may be
sent without waiting, in a pipeline the COMMIT ends (``answer_with_commit``): the write and the
COMMIT are one round trip, and an error in the write is raised by the commit, which rolls the
transaction back, as it would have been. A statement sent in between waits for the held answer
first, so the order of answers and errors is psycopg's.

A statement that must run before a transaction but not in it (the organization's run counted
before a run in one commit: in the run's transaction its counter row would stay locked until the
commit) may be sent ahead of it (``send_ahead``): in the pipeline of the transaction's BEGIN and
first statement, behind a sync of its own, so it commits on its own and the three are one round
trip; or alone, before a BEGIN sent alone; or, when no transaction came, when its answer is asked
for. Its answer, or its error, is kept for the caller (``Ahead.rows``), never raised into the
transaction's statement.
"""

from __future__ import annotations

import hashlib
import select
from collections import deque
from typing import Any

import psycopg
from django.db.backends.postgresql import base as postgresql
from django.db.backends.utils import debug_transaction  # type: ignore[attr-defined]
from psycopg import errors, pq
from psycopg._queries import PostgresQuery
from psycopg.abc import PQGen
from psycopg.adapt import Transformer

_IDLE = pq.TransactionStatus.IDLE
_FAILED = pq.ExecStatus.FATAL_ERROR
_NO_SUCH_STATEMENT = "26000"  # invalid_sql_statement_name: a prepared statement the session lacks


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


class Ahead:
    """A statement sent ahead of this connection's next transaction, in an implicit transaction of
    its own (Connection.send_ahead), and its answer: its rows, or the error the server answered."""

    def __init__(self, conn: Connection, query: str, params: Any):
        self.conn, self.query, self.params = conn, query, params
        self.sent = False
        self.name = b""  # its prepared statement's, once queued
        self._result: Any = None
        self._error: psycopg.Error | None = None

    def sql(self) -> str:
        """The statement with its parameters bound, as text (for the simple protocol, and to show)."""
        return psycopg.ClientCursor(self.conn).mogrify(self.query, self.params)

    def rows(self) -> list[tuple[str | None, ...]]:
        """Its rows, each value as Postgres's text; raises the error the server answered. Sent now,
        alone, when it has not gone yet (no transaction came): then outside any transaction, so
        call this outside a pipeline."""
        if self._error is not None and self._error.sqlstate == _NO_SUCH_STATEMENT:
            # Its prepared statement was gone from the session (DEALLOCATE ALL by another hand):
            # refused before it ran, so it is sent again, alone, as text, and prepared again next time.
            self.conn.ahead_prepared.discard(self.name)
            self.sent, self._error = False, None
        if not self.sent:
            self.withdraw()
            with self.conn.lock:
                self.conn.wait(self.conn._ahead_alone(self))
        if self._error is not None:
            raise self._error
        result, encoding = self._result, self.conn.pgconn._encoding
        return [
            tuple(None if (value := result.get_value(row, column)) is None else bytes(value).decode(encoding)
                  for column in range(result.nfields))
            for row in range(result.ntuples)
        ]

    def withdraw(self) -> None:
        """Not to be sent with the next transaction any more (its caller is done, or sends it now)."""
        if self.conn._ahead is self:
            self.conn._ahead = None

    def _answered(self, result: Any) -> None:
        if result.status == _FAILED:
            if self._error is None:  # a failed PREPARE's error, not its statement's that follows
                self._error = errors.error_from_result(result, encoding=self.conn.pgconn._encoding)
        else:
            self._result = result

    # How psycopg's pipeline hands a statement its results (as to a cursor): an error is kept here,
    # for ``rows`` to raise, not raised into the statements sent after it.
    def _check_results(self, results: list[Any]) -> None:
        pass

    def _set_results(self, results: list[Any]) -> None:
        self._answered(results[0])


class _Prepared:
    """Where psycopg's pipeline hands a PREPARE's answer: a refusal is the statement's error, and
    its name is not taken for prepared."""

    def __init__(self, ahead: Ahead, names: set[bytes], name: bytes):
        self.ahead, self.names, self.name = ahead, names, name

    def _check_results(self, results: list[Any]) -> None:
        pass

    def _set_results(self, results: list[Any]) -> None:
        if results[0].status == _FAILED:
            self.names.discard(self.name)
            self.ahead._answered(results[0])


class Connection(psycopg.Connection[Any]):
    """psycopg's connection, whose BEGIN may go with the transaction's first statement (and with a
    statement sent ahead of the transaction), and whose last write may wait for its answer until
    the COMMIT."""

    begin_rides = False  # set by a cursor for one execute sent in a pipeline with the BEGIN
    begins_alone = 0  # BEGINs sent on their own, each a round trip (keeperstate.ops.round_trips)
    hold_next = False  # the next statement's answer comes with the COMMIT (answer_with_commit)
    answers_held = 0  # statements sent so (keeperstate.ops.round_trips): no round trip of their own
    holds_ended = 0  # held answers waited for before the COMMIT, each a round trip
    _held: Any = None  # the pipeline the held statement was sent in, ended by the commit
    _ahead: Ahead | None = None  # a statement to send before the next transaction (send_ahead)
    aheads_sent = 0  # statements sent so (keeperstate.ops.round_trips)
    aheads_alone = 0  # of them, those sent on their own, each a round trip
    recent_aheads: deque[Ahead]  # the last few sent, for a count to show them

    @property
    def ahead_prepared(self) -> set[bytes]:
        """The names of the statements sent ahead that this session has prepared (kept on the
        connection from its first use: psycopg builds it, with no __init__ of ours)."""
        return self.__dict__.setdefault("_ahead_names", set())

    def send_ahead(self, query: str, params: Any) -> Ahead:
        """Send ``query`` with ``params`` before this connection's next transaction, committed on
        its own: with the transaction's BEGIN and first statement when they ride together (one
        round trip for the three; prepared, as the service's statements are), else alone before
        the BEGIN, or when its answer is asked for. Replaces a statement still waiting to go."""
        self._ahead = Ahead(self, query, params)
        return self._ahead

    def _start_query(self) -> PQGen[None]:
        if not self._autocommit and self.pgconn.transaction_status == _IDLE:
            ahead, self._ahead = self._ahead, None
            if self.begin_rides:
                # Queued in the cursor's pipeline, whose sync follows the statement: no wait here.
                if ahead is not None:
                    self._queue_ahead(ahead)  # and the BEGIN behind it
                else:
                    yield from self._exec_command(self._get_tx_start_command())
                return
            if ahead is not None:
                yield from self._ahead_alone(ahead)
            self.begins_alone += 1
        yield from super()._start_query()

    def _queue_ahead(self, ahead: Ahead) -> None:
        """Into the cursor's pipeline, before its statement: this one (prepared the first time on
        this session), a sync, which ends its implicit transaction (a BEGIN before that sync would
        take it into the transaction), then the BEGIN. Given to libpq at once, before psycopg reads
        any answer: none of them waits."""
        pipeline = self._pipeline
        assert pipeline is not None  # entered by the cursor for its statement, nothing queued yet
        query = PostgresQuery(Transformer(self))
        query.convert(ahead.query, ahead.params)
        shape = hashlib.blake2b(query.query + repr(query.types).encode(), digest_size=8)
        name = ahead.name = b"_ks_ahead_" + shape.hexdigest().encode()
        names = self.ahead_prepared
        if name not in names:
            names.add(name)
            self.pgconn.send_prepare(name, query.query, param_types=query.types)
            pipeline.result_queue.append((_Prepared(ahead, names, name), None))  # type: ignore[arg-type]
        self.pgconn.send_query_prepared(name, query.params, param_formats=query.formats)
        pipeline.result_queue.append((ahead, None))  # type: ignore[arg-type]
        self.pgconn.pipeline_sync()
        pipeline.result_queue.append(None)
        self.pgconn.send_query_params(self._get_tx_start_command(), None)
        pipeline.result_queue.append(None)
        self._sent(ahead)

    def _deallocate(self, name: bytes | None) -> PQGen[None]:
        # psycopg sends DEALLOCATE ALL when it sees a rollback or a DROP: the statements prepared
        # to go ahead are gone from the session too.
        if name is None:
            self.ahead_prepared.clear()
        yield from super()._deallocate(name)

    def _ahead_alone(self, ahead: Ahead) -> PQGen[None]:
        """Send the statement on its own (the simple protocol, outside any transaction) and wait."""
        self._sent(ahead)
        self.aheads_alone += 1
        try:
            result = yield from self._exec_command(ahead.sql())
        except psycopg.Error as exc:
            ahead._error = exc
        else:
            ahead._answered(result)

    def _sent(self, ahead: Ahead) -> None:
        ahead.sent = True
        self.aheads_sent += 1
        self.__dict__.setdefault("recent_aheads", deque(maxlen=8)).append(ahead)

    def commit_held(self) -> None:
        """COMMIT the transaction whose last statement's answer is held: queued behind it in its
        pipeline, whose one sync brings both answers (psycopg's commit() would sync twice)."""
        held, self._held = self._held, None
        error = None
        try:
            with self.lock:
                self.wait(self._exec_command(b"COMMIT"))  # queued: nothing is sent yet
        except BaseException as exc:
            error = exc
        _leave(held, error)

    def end_held(self) -> None:
        """Wait for a held answer before the COMMIT (another statement comes, or a rollback):
        raises the held statement's error, if any."""
        held, self._held = self._held, None
        if held is not None:
            _leave(held, None)


def _leave(pipeline: Any, error: BaseException | None) -> None:
    """Leave a pipeline, which syncs and raises the first error of what it sent, unless ``error``
    is on its way already: then that one is raised (psycopg would log the other as a warning; on
    a lost connection, once per request, both saying the same)."""
    try:
        pipeline.__exit__(None, None, None)
    except psycopg.Error:
        if error is None:
            raise
    if error is not None:
        raise error


class _BeginWithFirstStatement(psycopg.Cursor[Any]):
    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None,  # type: ignore[override]
                binary: bool | None = None) -> Any:
        conn = self._conn
        if not isinstance(conn, Connection):
            return super().execute(query, params, prepare=prepare, binary=binary)
        hold, conn.hold_next = conn.hold_next, False
        if conn._held is not None:
            # Statements are answered in order: this one waits for the held answer first.
            conn.holds_ended += 1
            conn.end_held()
        if conn._autocommit or conn._pipeline is not None:
            return super().execute(query, params, prepare=prepare, binary=binary)
        opens = conn.pgconn.transaction_status == _IDLE
        if not hold and not (opens and params):
            # A statement without parameters goes by the simple protocol, which allows several
            # commands in one string; a pipeline does not.
            return super().execute(query, params, prepare=prepare, binary=binary)
        # In a pipeline: with the BEGIN when it opens the transaction; left open when its answer
        # is held, for the COMMIT to end (DatabaseWrapper._commit); else ended here, one sync.
        pipeline = conn.pipeline()
        pipeline.__enter__()
        conn.begin_rides = True
        error = None
        try:
            super().execute(query, params, prepare=prepare, binary=binary)
        except BaseException as exc:
            error = exc
        finally:
            conn.begin_rides = False
        if hold and error is None:
            conn._held = pipeline
            conn.answers_held += 1
        else:
            _leave(pipeline, error)
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
            # psycopg.connect() builds its own class and takes no other; this one adds methods and
            # a few flags and counters, no slots, so the instance may become one.
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

    def answer_with_commit(self) -> None:
        """Send the next statement of this transaction without waiting for its answer: it comes
        back with the COMMIT, one round trip for both, and an error in it is raised by the commit
        (which then rolls the transaction back). A statement sent before the commit waits for it
        first, as psycopg would. For a write whose answer the caller does not read (a run's record
        at its end); outside a transaction, or when not on the service's cursor, nothing changes."""
        raw = self.connection
        if self.in_atomic_block and isinstance(raw, Connection) and raw.cursor_factory is _RIDING:
            raw.hold_next = True

    def send_ahead(self, sql: str, params: Any) -> Ahead | None:
        """Send ``sql`` before this connection's next transaction and in none (Connection.send_ahead):
        in one round trip with that transaction's BEGIN and first statement where they ride
        together. None inside a transaction already, or off the service's cursor: the caller sends
        it as usual."""
        self.close_if_health_check_failed()  # as a cursor would first: a replaced connection loses it
        self.ensure_connection()
        raw = self.connection
        if self.in_atomic_block or not isinstance(raw, Connection) or raw.cursor_factory is not _RIDING:
            return None
        return raw.send_ahead(sql, params)

    def _commit(self) -> None:
        raw = self.connection
        if raw is None or raw._held is None:
            return super()._commit()  # type: ignore[misc]
        with debug_transaction(self, "COMMIT"), self.wrap_database_errors:
            raw.commit_held()
        return None

    def _rollback(self) -> None:
        raw = self.connection
        if raw is not None and raw._held is not None:
            try:
                raw.end_held()
            except psycopg.Error:
                pass  # the held statement's own error: rolled back with the rest
        return super()._rollback()  # type: ignore[misc]

