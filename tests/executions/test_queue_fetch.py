"""A worker's fetch of its next job reads the queue's index in order, whatever the backlog.

Procrastinate's fetch (``procrastinate_fetch_job_v2``) asks for the first waiting job by priority
and id. Planned on the statistics of a queue that was empty when it was last analyzed (the usual
state of a queue that keeps up), Postgres read every waiting job and sorted them to return one:
each fetch cost in proportion to the backlog, so a backlog drained ever slower (ADR 0084). The
fetch now reads the queue's index of waiting jobs from its head.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction

from keeperstate.executions.tasks import QUEUE, defer_run
from tests.test_database import database_connection

# Jobs are committed, as a worker sees them; the test deletes its own (they name no organization).
pytestmark = pytest.mark.django_db(transaction=True)
MARK = 0


def _queue(jobs: int) -> None:
    with transaction.atomic():
        for _ in range(jobs):
            defer_run(str(uuid.uuid4()), MARK)


def _fetch_reads(worker) -> int:
    """One fetch, as a worker sends it on its own connection: the pages it read, its function's
    statements and their triggers' included."""
    plan = worker.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM procrastinate_fetch_job_v2(%s::varchar[], NULL)",
        [[QUEUE]],
    ).fetchone()[0][0]["Plan"]
    assert plan["Actual Rows"] == 1
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]


def test_a_fetch_reads_no_more_pages_with_a_backlog_of_thousands_of_jobs_than_with_ten():
    worker = database_connection()
    try:
        # The statistics of a queue that keeps up: analyzed while empty.
        worker.execute("ANALYZE procrastinate_jobs")
        _queue(10)
        _fetch_reads(worker)  # the session's first fetch plans the function's statements
        shallow = _fetch_reads(worker)
        deep = []
        for _ in range(2):
            _queue(2000)
            deep.append(_fetch_reads(worker))
    finally:
        worker.execute("DELETE FROM procrastinate_jobs WHERE (args->>'organization_id')::bigint = %s", [MARK])
        worker.close()
    # The plan before read every waiting job and sorted them: 33 pages with 10 jobs waiting, 102
    # with 2,010 and 204 with 4,010. From the index, what moves is a page split now and then.
    assert max(deep) <= 2 * shallow, (shallow, deep)
