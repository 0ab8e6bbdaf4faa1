"""Is the database there to write to? One place tells a database that is unavailable (down,
restarting, failing over to another node, a replica reached) from one that refused a statement,
and keeps the log of an outage to two lines per process: one when it begins, one when writes
work again (docs/reliability.md, "Failover").

Every adapter asks ``unavailable(exc)``: the API and the pages answer 503 ``DATABASE_UNAVAILABLE``
with ``Retry-After``, the worker's loops wait, the run path leaves the execution to say what
happened. ``noticed(exc)`` logs the outage's first line (and counts what met it); a new
connection, which with ``target_session_attrs=read-write`` is one to a writable primary, ends it
(``connected``, on Django's ``connection_created``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError

logger = logging.getLogger("keeperstate.database")

# The seconds a client waits before it asks again (Retry-After): a failover takes about ten.
RETRY_AFTER_SECONDS = 2

# SQLSTATEs of a server that cannot serve now, besides a connection that failed (class 08, and the
# driver's OperationalError): a replica reached for a write, a server shutting down or starting,
# too many connections.
_UNAVAILABLE_STATES = frozenset({"25006", "57P01", "57P02", "57P03", "53300"})


def unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (a Django or psycopg error, or one raised from it) means the database
    cannot be written to now, rather than that it refused what was asked."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OperationalError | InterfaceError):
            return True
        sqlstate = getattr(exc, "sqlstate", None)
        if sqlstate and (sqlstate in _UNAVAILABLE_STATES or sqlstate.startswith("08")):
            return True
        # psycopg's own (a pool's timeout waiting for a connection is one), as Procrastinate's
        # connector raises them, wrapped or not
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


class _Outage:
    """This process's view of the database: since when it has been unavailable, and how many
    requests and steps met it meanwhile."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.since: float | None = None
        self.met = 0

    def noticed(self, exc: BaseException, where: str) -> None:
        with self.lock:
            self.met += 1
            if self.since is not None:
                return
            self.since = time.monotonic()
        logger.warning("database unavailable (%s, in %s): answering 503 DATABASE_UNAVAILABLE until it takes writes "
                       "again", _first_line(exc), where)

    def connected(self) -> None:
        with self.lock:
            if self.since is None:
                return
            seconds, met = time.monotonic() - self.since, self.met
            self.since, self.met = None, 0
        logger.warning("database writable again after %.1f s (%d request(s) or step(s) met the outage)", seconds, met)

    @property
    def ongoing(self) -> bool:
        return self.since is not None


OUTAGE = _Outage()


def noticed(exc: BaseException, where: str) -> None:
    """The outage's first line in this process's log; later ones are counted, not logged."""
    OUTAGE.noticed(exc, where)


def connected(sender: Any = None, **kwargs: Any) -> None:
    """A new connection opened (Django's ``connection_created``): writes work again."""
    OUTAGE.connected()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
