"""The Procrastinate task a worker runs for each queued execution, and how it is queued.

The job carries the execution's id and organization (its primary key, so the worker's claim
goes to the row's own shard on a sharded database); the execution row is the source of truth.
A job that Procrastinate retries (its worker died) runs nothing when the execution had already
started: ``run_queued`` claims only ``queued`` executions.
"""

from __future__ import annotations

import json

from django.db import DatabaseError, close_old_connections
from procrastinate.contrib.django import app

from keeperstate.core.cursors import kept_cursor
from keeperstate.ops import availability

QUEUE = "executions"
TASK_NAME = "keeperstate.run_execution"

# A run's job, written through Django's own connection, inside the caller's transaction, so a job
# exists exactly when its execution row does. (The worker swaps the app's connector for an async
# pool; deferring through the app from its scheduler would commit the job on its own.)
#
# The job is deferred by Procrastinate's own SQL function, the one its Python deferrer calls
# (``defer_jobs`` in procrastinate/sql/queries.sql), as a statement written once with plain
# parameters: the deferrer's job objects and its composite-array parameter cost 0.45 ms of the
# client's CPU per job, this statement 0.09 ms (measured: ADR 0086), on every queued
# run's request. Default priority, no lock, no queueing lock, not scheduled: as ``defer`` made it.
# tests/executions/test_deferred_job.py checks the row against the one Procrastinate's deferrer makes.
_DEFER_SQL = (
    "SELECT procrastinate_defer_jobs_v1(ARRAY[ROW(%s, %s, 0, NULL, NULL, %s::jsonb, NULL)"
    "::procrastinate_job_to_defer_v1])"
)


def defer_run(execution_id: str, organization_id: int) -> None:
    args = json.dumps({"execution_id": execution_id, "organization_id": organization_id})
    kept_cursor().execute(_DEFER_SQL, [QUEUE, TASK_NAME, args])


@app.task(name=TASK_NAME, queue=QUEUE)
def run_execution(execution_id: str, organization_id: int | None = None) -> None:
    # organization_id is None in a job queued before jobs named it: the run is claimed by id alone.
    from keeperstate.executions.service import run_queued

    # Each job runs in a worker thread with its own Django connection; drop one the database
    # closed (a restart) instead of failing the job on it.
    close_old_connections()
    try:
        run_queued(execution_id, organization_id)
    except DatabaseError as exc:
        if not availability.unavailable(exc):
            raise
        # The database went away during the job (a restart, a failover): nothing of the run was
        # kept, and the job ends here as a failed one would (jobs are deleted either way). The
        # execution tells what happened: still queued, it is queued again by the worker's recovery
        # loop; started (a run node by node), it is closed as interrupted. The outage is the
        # process's one log line, where a failed job would print its traceback, one per job.
        availability.noticed(exc, f"the queued run of execution {execution_id}")
    finally:
        close_old_connections()
