"""What state this thread's database transaction is in, for code that keeps one transaction
without savepoints and must know whether it can still commit (a run in one commit)."""

from __future__ import annotations

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


def connection_broken() -> bool:
    """Whether this thread's connection to the database is lost (a restart, a network fault)."""
    raw = connections[DEFAULT_DB_ALIAS].connection
    return raw is None or raw.closed or raw.broken
