"""A queued run's job is the one Procrastinate's own deferrer would make.

``defer_run`` calls Procrastinate's SQL function for deferring jobs as a statement written once
(keeperstate/executions/tasks.py), not through Procrastinate's Python deferrer: the row it leaves
must be the deferrer's, field for field, or a worker would read it otherwise.
"""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection, transaction
from procrastinate import manager
from procrastinate import tasks as procrastinate_tasks
from procrastinate.contrib.django.django_connector import DjangoConnector

from keeperstate.executions.tasks import QUEUE, TASK_NAME, defer_run

pytestmark = pytest.mark.django_db

COLUMNS = "queue_name, task_name, priority, lock, queueing_lock, args, scheduled_at, status, attempts, worker_id"


def _job(execution_id: str) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {COLUMNS}, id FROM procrastinate_jobs WHERE args->>'execution_id' = %s",
                       [execution_id])
        rows = cursor.fetchall()
        assert len(rows) == 1, rows
        *fields, job_id = rows[0]
        fields[5] = json.loads(fields[5])  # Django's connection leaves jsonb as text, for JSONField to read
        cursor.execute("SELECT type FROM procrastinate_events WHERE job_id = %s ORDER BY id", [job_id])
        return (*fields, [event for (event,) in cursor.fetchall()])


def test_a_run_s_job_is_the_one_procrastinate_s_deferrer_makes():
    ours, theirs = str(uuid.uuid4()), str(uuid.uuid4())

    defer_run(ours, 7)
    deferrer = manager.JobManager(DjangoConnector())
    procrastinate_tasks.configure_task(name=TASK_NAME, job_manager=deferrer, queue=QUEUE).defer(
        execution_id=theirs, organization_id=7
    )

    mine, reference = _job(ours), _job(theirs)
    assert mine[5] == {"execution_id": ours, "organization_id": 7}
    assert reference[5] == {"execution_id": theirs, "organization_id": 7}
    assert mine[:5] + mine[6:] == reference[:5] + reference[6:]
    assert mine[:5] == (QUEUE, TASK_NAME, 0, None, None)
    assert mine[7:] == ("todo", 0, None, ["deferred"])


def test_a_job_goes_with_the_transaction_that_queued_it():
    execution_id = str(uuid.uuid4())

    with transaction.atomic():
        defer_run(execution_id, 7)
        transaction.set_rollback(True)

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE args->>'execution_id' = %s", [execution_id])
        assert cursor.fetchone() == (0,)
