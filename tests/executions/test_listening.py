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
