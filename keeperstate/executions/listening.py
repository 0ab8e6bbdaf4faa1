"""The worker's connector: Procrastinate's psycopg connector, with a job listener that outlives
the database.

Procrastinate's own listener (3.10) gives up when the database is gone: after a restart its
LISTEN connection is dead, and a reconnect attempt made while Postgres is still starting raises
out of the listener, so the worker is left polling for jobs once a second (a webhook's run
went from 0.13 s to 0.5–1.0 s until the worker was restarted). This listener reconnects every
``RETRY_SECONDS`` until the database answers, LISTENs again, and wakes the worker once at each
(re)connection for the jobs queued while nobody listened. A connection that stops answering
(a cut network, where no reset ever arrives) is found by a check every ``CHECK_SECONDS`` bounded
by the same time. Its pool checks the connections it lends without a round trip while they are
quiet (keeperstate.ops.postgres).

Its queries outlive a failover too. Procrastinate's worker sends each of its own (fetch a job,
finish it, beat its heart) once: one that meets the database going away (a primary killed in
the middle of it) raised out of the worker's loop, and the worker process died with a traceback
and was started again by ``serve``. Here a query that meets an outage is sent again on a new
connection until the database answers (``OUTAGE_SECONDS`` at most), with the outage's one log
line (keeperstate.ops.availability). Sending one again is safe for what the worker asks: reads,
heartbeats and deletes of its own rows repeat harmlessly, and a job whose fetch committed but
whose answer was lost is left ``doing`` with its execution still ``queued``, which housekeeping
queues again (``requeue_orphaned_runs``). (A finish whose commit landed just before its answer
was lost is refused when sent again, as a job not found: the job is gone either way.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, LiteralString, TypeVar

import psycopg
import psycopg_pool
from procrastinate import connector, exceptions, sql, utils
from procrastinate.psycopg_connector import PsycopgConnector

from keeperstate.ops import availability
from keeperstate.ops.postgres.base import quiet

logger = logging.getLogger("keeperstate.worker")
T = TypeVar("T")

RETRY_SECONDS = 0.5
CHECK_SECONDS = 2.0
# How long a query of the worker waits for the database through an outage (a failover takes about
# ten seconds); past that it raises, and the worker stops and is started again.
OUTAGE_SECONDS = 120.0
# What Procrastinate's worker does on this notification: look for jobs now.
WAKE_UP = json.dumps({"type": "job_inserted", "job_id": 0})


class ListeningConnector(PsycopgConnector):
    async def execute_query_async(self, query: LiteralString, **arguments: Any) -> None:
        return await _through_outage(super().execute_query_async, query, arguments)

    async def execute_query_one_async(self, query: LiteralString, **arguments: Any) -> dict[str, Any]:
        return await _through_outage(super().execute_query_one_async, query, arguments)

    async def execute_query_all_async(self, query: LiteralString, **arguments: Any) -> list[dict[str, Any]]:
        return await _through_outage(super().execute_query_all_async, query, arguments)

    async def listen_notify(self, on_notification: connector.Notify, channels: Iterable[str]) -> None:
        channels = list(channels)
        lost = False
        while True:
            try:
                await self._listen(on_notification, channels)
            except (psycopg.Error, exceptions.ConnectorException, OSError, TimeoutError) as exc:
                if not lost:
                    logger.warning("job notifications lost (%s); listening again as soon as the database answers",
                                   type(exc).__name__)
                lost = True
                await asyncio.sleep(RETRY_SECONDS)
                continue

    async def _listen(self, on_notification: connector.Notify, channels: list[str]) -> None:
        async with asyncio.timeout(CHECK_SECONDS * 2):
            opened = self._get_standalone_connection()
            connection = await opened.__aenter__()
        try:
            for channel in channels:
                listen = self._make_dynamic_query(query=sql.queries["listen_queue"], channel_name=channel)
                await connection.execute(listen)
            logger.info("listening for jobs on %s", ", ".join(channels))
            for channel in channels:  # jobs queued while nobody listened
                await on_notification(channel=channel, payload=WAKE_UP)
            while True:
                async for notification in utils.gen_with_timeout(
                    aiterable=connection.notifies(), timeout=CHECK_SECONDS, raise_timeout=False
                ):
                    await on_notification(channel=notification.channel, payload=notification.payload)
                async with asyncio.timeout(CHECK_SECONDS):
                    await connection.execute("SELECT 1")
        finally:
            await _close_quietly(opened)


async def _through_outage(execute: Callable[..., Awaitable[T]], query: LiteralString, arguments: dict[str, Any]) -> T:
    """``execute(query, **arguments)``, sent again while the database is unavailable (see above)."""
    deadline = time.monotonic() + OUTAGE_SECONDS
    while True:
        try:
            return await execute(query, **arguments)
        except exceptions.ConnectorException as exc:
            if not availability.unavailable(exc) or time.monotonic() > deadline:
                raise
            availability.noticed(exc, "the worker's job queue")
        await asyncio.sleep(RETRY_SECONDS)


async def _close_quietly(opened: Any) -> None:
    try:
        async with asyncio.timeout(CHECK_SECONDS):
            await opened.__aexit__(None, None, None)
    except (psycopg.Error, OSError, TimeoutError):
        pass  # the connection was already dead


def worker_connector() -> ListeningConnector:
    """The worker's connector on Django's database (what Procrastinate's ``get_worker_connector``
    builds, with this listener)."""
    from procrastinate.contrib.django import utils as django_utils
    from procrastinate.contrib.django.settings import settings as procrastinate_settings

    return ListeningConnector(kwargs=django_utils.connector_params(procrastinate_settings.DATABASE_ALIAS),
                              configure=_autocommit, pool_factory=_pool)


def _pool(**kwargs: Any) -> psycopg_pool.AsyncConnectionPool:
    """Procrastinate's pool, checking the connections it lends as Django's are checked
    (keeperstate.ops.postgres): Procrastinate's check sends an empty query on every checkout, two
    round trips per job (its fetch and its finish each take a connection)."""
    return psycopg_pool.AsyncConnectionPool(**{**kwargs, "check": _check})


async def _check(connection: psycopg.AsyncConnection[Any]) -> None:
    known = quiet(connection)
    if known is False:
        raise psycopg.OperationalError("the connection is closed")
    if known is None:
        await psycopg_pool.AsyncConnectionPool.check_connection(connection)


async def _autocommit(connection: psycopg.AsyncConnection[Any]) -> None:
    """Each query Procrastinate sends through the pool is one statement (fetch a job, finish it,
    beat its heart): in autocommit it is one round trip, where the pool's default of a
    transaction wrapped it in BEGIN and COMMIT (three). (Procrastinate's own connections for
    LISTEN are autocommit already; passing ``autocommit`` in the pool's ``kwargs`` would clash
    with theirs.)"""
    await connection.set_autocommit(True)
