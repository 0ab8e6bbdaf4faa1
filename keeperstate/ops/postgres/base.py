"""The service's database backend: Django's postgresql backend with a health check that costs
no round trip while the connection is quiet.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS), with a
``SELECT 1``: a round trip on every request, as many as a run's own statement. A server that
closes a connection (a restart, ``pg_terminate_backend``, the machine's Postgres shutting down)
first sends it a message or an end of file, so a connection with nothing to read is one the
server has not closed: only then is the ``SELECT 1`` skipped. Anything to read, between two
requests, is sent on to Django's check, which decides. The worker's pool checks the connections
it lends the same way (keeperstate.executions.listening).
"""

from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base as postgresql
from psycopg import pq


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


class DatabaseWrapper(postgresql.DatabaseWrapper):
    # How many health checks this connection wrapper has sent as queries (keeperstate.ops.round_trips).
    health_check_queries = 0

    def is_usable(self) -> bool:
        if self.connection is None:
            return False
        known = quiet(self.connection)
        if known is not None:
            return known
        self.health_check_queries += 1
        return bool(super().is_usable())
