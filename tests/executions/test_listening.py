"""The worker's Procrastinate connector (keeperstate/executions/listening.py): its pool's queries."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from keeperstate.executions.listening import worker_connector

pytestmark = pytest.mark.django_db(transaction=True)


def in_a_thread(coroutine: Any) -> Any:
    # After the browser tests Playwright keeps an event loop on the main thread: run ours apart.
    result: dict[str, Any] = {}

    def run() -> None:
        result["value"] = asyncio.run(coroutine)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    return result["value"]


def test_the_workers_pool_sends_each_query_in_autocommit_with_no_transaction_around_it():
    connector = worker_connector()

    async def one_query() -> tuple[bool, str]:
        await connector.open_async()
        try:
            async with connector.pool.connection() as connection:
                await connection.execute("SELECT 1")
                # in a transaction, the statement would leave it open until the pool's COMMIT
                return connection.autocommit, connection.info.transaction_status.name
        finally:
            await connector.close_async()

    assert in_a_thread(one_query()) == (True, "IDLE")


def test_the_workers_pool_checks_a_quiet_connection_without_a_query_and_finds_one_the_server_closed():
    import psycopg
    from django.db import connection as django_connection

    from keeperstate.executions.listening import _check
    from keeperstate.ops.database import database_url

    url = database_url(django_connection.settings_dict)

    async def check_twice() -> tuple[list[str], bool, type | None]:
        connector = worker_connector()
        await connector.open_async()
        try:
            checks_the_pools_way = connector.pool._check is _check
        finally:
            await connector.close_async()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as lent:
            sent: list[str] = []
            original = lent.execute

            async def counted(query, *args, **kwargs):
                sent.append(query)
                return await original(query, *args, **kwargs)

            lent.execute = counted  # type: ignore[method-assign]
            await _check(lent)  # quiet: nothing asked
            with psycopg.connect(url, autocommit=True) as other:  # the server ends it, as a restart would
                other.execute("SELECT pg_terminate_backend(%s::integer)", [lent.info.backend_pid])
            await asyncio.sleep(0.5)
            try:
                await _check(lent)
            except psycopg.OperationalError as exc:
                refused: type | None = type(exc)
            else:
                refused = None
            return sent, checks_the_pools_way, refused

    sent, checks_the_pools_way, refused = in_a_thread(check_twice())

    assert checks_the_pools_way
    assert sent == [""]  # only the second check asked: Procrastinate's own sends "" on every lend
    assert refused is not None  # the pool replaces that connection


def test_a_workers_query_cut_by_the_server_is_sent_again_once_it_answers_with_one_log_line(caplog):
    """A query of Procrastinate's (fetch a job, finish it, beat its heart) that meets the database
    going away (here its backend terminated mid-query, as a killed primary's are) is sent again on
    a new connection: the worker's loop never sees the error, and the log has the outage's one line."""
    import logging

    import psycopg
    from django.db import connection as django_connection

    from keeperstate.ops import availability
    from keeperstate.ops.database import database_url

    url = database_url(django_connection.settings_dict)
    marker = "keeperstate-cut-me"

    def cut_when_it_runs() -> int:
        with psycopg.connect(url, autocommit=True) as other:
            for _ in range(100):
                killed = other.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE query LIKE %s AND query NOT LIKE '%%pg_stat_activity%%'", [f"%{marker}%"],
                ).fetchone()[0]
                if killed:
                    return killed
                other.execute("SELECT pg_sleep(0.05)")
        return 0

    async def cut_query() -> tuple[dict[str, Any], int]:
        connector = worker_connector()
        await connector.open_async()
        try:
            cutter = asyncio.create_task(asyncio.to_thread(cut_when_it_runs))
            # the first time, it runs long enough to be cut; sent again, it finds the cutter gone
            row = await connector.execute_query_one_async(
                f"SELECT pg_sleep(1.5), 'done' AS answer /* {marker} */"  # type: ignore[arg-type]
            )
            return row, await cutter
        finally:
            await connector.close_async()

    availability.OUTAGE.since, availability.OUTAGE.met = None, 0
    try:
        with caplog.at_level(logging.WARNING, logger="keeperstate.database"):
            row, killed = in_a_thread(cut_query())
        assert killed == 1
        assert row["answer"] == "done"
        assert [r.getMessage()[:22] for r in caplog.records] == ["database unavailable ("]
        assert "the worker's job queue" in caplog.records[0].getMessage()
    finally:
        availability.OUTAGE.since, availability.OUTAGE.met = None, 0
