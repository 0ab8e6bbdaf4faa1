"""What a block of code sends to Postgres, counted on the connection (not timed): statements,
round trips and commits. ``bench_runs`` prints them per run and tests/executions/test_round_trips.py
holds them at their budget (docs/benchmarks.md).

Counted on this thread's Django connection:

- a **statement** is one SQL statement the code sent (Django's execute wrappers see each one),
  transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) left out;
- a **round trip** is one wait for the server: each statement, each savepoint and release (sent
  as statements too), a BEGIN sent on its own before the first statement of a transaction (the
  service's backend sends it with that statement instead, keeperstate.ops.postgres), each
  COMMIT and ROLLBACK (a write whose answer comes with the COMMIT sharing its round trip), and
  Django's health check of a kept connection (``SELECT 1`` at the first use in a request, sent
  past the execute wrappers);
- a **commit** is one that waits for the disk: a transaction's COMMIT, or a statement sent in
  autocommit that writes a logged table (a write to an unlogged table, the rate counters, is
  committed without a WAL flush, ADR 0061, and is counted apart, as ``unlogged_writes``).

A statement the backend sends ahead of a transaction, past Django's cursor (the organization's
run count, keeperstate.ops.postgres ``send_ahead``), is counted too, when the block ends: a
statement in autocommit, and a round trip only when it went alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import pq

_CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b", re.IGNORECASE)
# The table after INSERT INTO, UPDATE (not an upsert's DO UPDATE SET) or DELETE FROM.
_WRITES = re.compile(r'\b(?:INSERT\s+INTO|UPDATE(?!\s+SET\b)|DELETE\s+FROM)\s+"?(\w+)"?', re.IGNORECASE)
# A function call that writes: ours (the store's) and Procrastinate's (a job's defer, fetch, end).
_WRITING_CALL = re.compile(r"^\s*SELECT\s+(?:\*\s+FROM\s+)?(keeperstate_|procrastinate_)\w*\(", re.IGNORECASE)


def _waits(raw: Any) -> tuple[int, int, int] | None:
    """What the service's driver connection counts (keeperstate.ops.postgres): the BEGINs it sent
    on their own, the held answers it waited for before their COMMIT, and the statements it sent
    with their answer held for the COMMIT; None on another connection."""
    if not hasattr(raw, "begins_alone"):
        return None
    return raw.begins_alone, raw.holds_ended, raw.answers_held


def _ahead(raw: Any) -> tuple[int, int]:
    """How many statements the service's driver connection sent ahead of a transaction, and how
    many of them went alone (keeperstate.ops.postgres); nothing on another connection."""
    return getattr(raw, "aheads_sent", 0), getattr(raw, "aheads_alone", 0)


def sent_ahead(raw: Any, count: int) -> list[str]:
    """The last ``count`` statements ``raw`` sent ahead of a transaction, as text."""
    recent = list(getattr(raw, "recent_aheads", ()))
    return [ahead.sql() for ahead in recent[len(recent) - count:]] if count else []


@dataclass
class Sent:
    statements: list[str] = field(default_factory=list)
    round_trips: int = 0
    commits: int = 0
    unlogged_writes: int = 0  # autocommit writes to unlogged tables: committed, not flushed

    def as_dict(self) -> dict[str, int]:
        return {"statements": len(self.statements), "round_trips": self.round_trips, "commits": self.commits,
                "unlogged_writes": self.unlogged_writes}


class counting:  # noqa: N801 - a context manager, used as ``with counting() as sent:``
    """Count what this thread's connection sends to Postgres while the block runs (``Sent``)."""

    def __init__(self, db: BaseDatabaseWrapper | None = None):
        self.db = db if db is not None else connections[DEFAULT_DB_ALIAS]
        self.sent = Sent()
        self._unlogged: frozenset[str] = frozenset()

    def __enter__(self) -> Sent:
        db = self.db
        # Before counting starts, past Django's cursor: its health check is the block's to send.
        db.ensure_connection()
        with db.connection.cursor() as cursor:
            cursor.execute("SELECT relname FROM pg_class WHERE relpersistence = 'u'")
            self._unlogged = frozenset(name for (name,) in cursor.fetchall())
        self._raw, self._ahead_before = db.connection, _ahead(db.connection)
        self._wrapped = db.execute_wrapper(self._execute)
        self._wrapped.__enter__()
        commit, rollback, is_usable = db.commit, db.rollback, db.is_usable
        db.commit = self._ending(commit)  # type: ignore[method-assign]
        db.rollback = self._ending(rollback)  # type: ignore[method-assign]
        db.is_usable = self._health_check(is_usable)  # type: ignore[method-assign]
        return self.sent

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._wrapped.__exit__(kind, exc, tb)
        for name in ("commit", "rollback", "is_usable"):
            self.db.__dict__.pop(name, None)  # the class's own again
        if self.db.connection is self._raw:
            (sent_before, alone_before), (sent_after, alone_after) = self._ahead_before, _ahead(self._raw)
            for sql in sent_ahead(self._raw, sent_after - sent_before):
                self._statement(sql, autocommit=True)
            self.sent.round_trips += alone_after - alone_before

    def _in_transaction(self) -> bool:
        raw = self.db.connection
        return raw is not None and raw.info.transaction_status != pq.TransactionStatus.IDLE

    def _execute(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> (
        Any
    ):
        before = _waits(self.db.connection)
        # On a driver connection that does not count its BEGINs, psycopg sends one alone whenever
        # a statement opens a transaction.
        opens = before is None and not self.db.get_autocommit() and not self._in_transaction()
        try:
            return execute(sql, params, many, context)
        finally:
            after = _waits(self.db.connection)
            if opens:
                self.sent.round_trips += 1
            elif before is not None and after is not None:
                # a BEGIN sent alone, and a held answer waited for, each one more; a statement
                # whose answer comes with the COMMIT, one less (keeperstate.ops.postgres)
                begins_alone, holds_ended, answers_held = (now - then for now, then in zip(after, before, strict=True))
                self.sent.round_trips += begins_alone + holds_ended - answers_held
            self._count(sql)

    def _count(self, sql: str) -> None:
        self.sent.round_trips += 1
        if not _CONTROL.match(sql):
            self._statement(sql, autocommit=self.db.get_autocommit())

    def _statement(self, sql: str, *, autocommit: bool) -> None:
        sent = self.sent
        sent.statements.append(" ".join(sql.split()))
        if autocommit and (tables := self._written(sql)) is not None:
            if tables and tables <= self._unlogged:
                sent.unlogged_writes += 1
            else:
                sent.commits += 1

    @staticmethod
    def _written(sql: str) -> set[str] | None:
        """The tables a statement writes (empty: a writing function call), None if it writes none."""
        tables = {match.group(1) for match in _WRITES.finditer(sql)}
        if tables:
            return tables
        return set() if _WRITING_CALL.match(sql) else None

    def _ending(self, end: Callable[[], None]) -> Callable[[], None]:
        def counted() -> None:
            sends = self._in_transaction()  # psycopg sends nothing for an idle connection
            end()
            if sends:
                self.sent.round_trips += 1
                if end.__name__ == "commit":
                    self.sent.commits += 1

        return counted

    def _health_check(self, is_usable: Callable[[], bool]) -> Callable[[], bool]:
        def counted() -> bool:
            # keeperstate.ops.postgres counts the checks it sends as a query; Django's own sends each
            before = getattr(self.db, "health_check_queries", None)
            usable = is_usable()
            after = getattr(self.db, "health_check_queries", None)
            if before is None or after != before:
                self.sent.round_trips += 1
                self.sent.statements.append("SELECT 1")
            return usable

        return counted
