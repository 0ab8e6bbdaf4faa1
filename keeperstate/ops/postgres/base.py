"""The service's database backend: Django's postgresql backend with a health check that costs
no round trip while the connection is quiet.

Django checks a kept connection before a request reuses it (CONN_HEALTH_CHECKS), with a
``SELECT 1``: a round trip on every request, as many as a run's own statement. A server that
closes a connection (a restart, ``pg_terminate_backend``, the machine's Postgres shutting down)
first sends it a message or an end of file, so a connection with nothing to read is one the
server has not closed: only then is the ``SELECT 1`` skipped. Anything to read, between two
requests, is sent on to Django's check, which decides.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base as postgresql
from psycopg import pq


class DatabaseWrapper(postgresql.DatabaseWrapper):
    # How many health checks this connection wrapper has sent as queries (keeperstate.ops.round_trips).
    health_check_queries = 0

    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            return False
        if raw.info.transaction_status == pq.TransactionStatus.IDLE:
            try:
                readable, _, _ = select.select([raw.fileno()], [], [], 0)
            except (OSError, ValueError):
                return False
            if not readable:
                return True
        self.health_check_queries += 1
        return bool(super().is_usable())
