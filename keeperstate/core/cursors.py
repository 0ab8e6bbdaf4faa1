"""One cursor per connection for the statements the hot paths send by hand (see kept_cursor)."""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper


def kept_cursor(db: BaseDatabaseWrapper | None = None) -> CursorWrapper:
    """The connection's cursor for the statements written by hand on the hot paths (the state
    store, a run's record, the rate counters, the token lookup), kept from one to the next.

    A new psycopg cursor looks up its dumpers and loaders again for every statement: 30 µs of the
    client's CPU each (measured, docs/benchmarks.md), against a state write of 400–500 µs. The
    kept cursor belongs to one connection (Django's connections are per thread) and is replaced
    when that connection is: after a close, a failed health check or a reconnect. While Django
    logs queries (DEBUG, ``CaptureQueriesContext``), a new cursor each time: it logs through the
    cursor it makes. Not for a ``with`` block, which would close it. ``db``: this thread's default
    connection unless given (not ``django.db.connection``, a proxy that looks the connection up
    again on every attribute read).
    """
    if db is None:
        db = connections[DEFAULT_DB_ALIAS]
    db.close_if_health_check_failed()  # as db.cursor() does, once per request or job
    if db.queries_logged:
        return db.cursor()
    kept = getattr(db, _KEPT_CURSOR, None)
    if kept is not None and db.connection is not None and kept[0] is db.connection:
        return kept[1]
    cursor = db.cursor()
    setattr(db, _KEPT_CURSOR, (db.connection, cursor))
    return cursor


_KEPT_CURSOR = "_keeperstate_kept_cursor"
