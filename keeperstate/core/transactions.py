"""What state this thread's database transaction is in, for code that keeps one transaction
without savepoints and must know whether it can still commit (a run in one commit)."""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import pq


def transaction_aborted() -> bool:
    """Whether this thread's transaction can only be rolled back: a statement in it was refused
    (Postgres then refuses every statement until the rollback), or an error left Django's atomic
    block marked for rollback."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.needs_rollback:
        return True
    raw = db.connection
    return raw is not None and raw.info.transaction_status == pq.TransactionStatus.INERROR


def answer_with_commit() -> None:
    """Send this transaction's next statement without waiting for its answer, which comes with the
    COMMIT, one round trip for both; an error in it is raised by the commit (keeperstate.ops.postgres).
    For a write whose answer nobody reads; on another backend, the statement is sent as usual."""
    hold = getattr(connections[DEFAULT_DB_ALIAS], "answer_with_commit", None)
    if hold is not None:
        hold()


def current_connection() -> Any:
    """This thread's driver connection (None when closed): Django replaces it when it finds it
    lost, so a different one later means the first was lost meanwhile."""
    return connections[DEFAULT_DB_ALIAS].connection


def checked_connection() -> Any:
    """This thread's driver connection as the next statement will use it: checked (Django's health
    check, once per request or job) and open."""
    db = connections[DEFAULT_DB_ALIAS]
    db.close_if_health_check_failed()
    db.ensure_connection()
    return db.connection


def connection_broken() -> bool:
    """Whether this thread's connection to the database is lost (a restart, a network fault)."""
    raw = connections[DEFAULT_DB_ALIAS].connection
    return raw is None or raw.closed or raw.broken
