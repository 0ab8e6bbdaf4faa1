"""Executions and workflows found by id alone, as Django addresses them (migration 0023).

Their primary key is (organization_id, id) for sharding (docs/scaling.md), but a run's updates,
the worker's claim, heartbeats, a waited webhook, `/hooks/<id>/` and the API's and admin's pages
name the id only. Postgres before 18 (CI's server is 15) cannot look a second column of an index
up without the first: without an index of their own, those lookups read the whole table.
"""

from __future__ import annotations

import pytest
from django.db import connection

from keeperstate.executions.models import WorkflowExecution
from tests.state.crowding import buffers

pytestmark = pytest.mark.django_db

FOUND_BY_ID = ("workflow", "workflow_execution", "workflow_state")


def test_each_table_django_addresses_by_id_has_an_index_led_by_id():
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
             WHERE c.relname = ANY(%s) AND i.indpred IS NULL
               AND (SELECT a.attname FROM pg_attribute a
                     WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) = 'id'
            """,
            [list(FOUND_BY_ID)],
        )
        assert sorted(name for (name,) in cursor.fetchall()) == sorted(FOUND_BY_ID)


def test_a_run_finds_its_execution_by_id_among_many_in_a_few_pages(workflow):
    # given 20,000 runs of a workflow, counted by ANALYZE
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_execution (id, organization_id, workflow_id, status, trigger, input, node_results,"
            " queued_at) SELECT gen_random_uuid(), %s, %s, 'success', 'api', '{}', '{}', now()"
            " FROM generate_series(1, 20000)",
            [workflow.organization_id, workflow.id],
        )
        cursor.execute("ANALYZE workflow_execution")
    one = WorkflowExecution.objects.filter(workflow=workflow).order_by("?").values_list("id", flat=True).first()

    # when one is read and updated by id alone, as the run path's statements do
    lookup = buffers("SELECT status FROM workflow_execution WHERE id = %(id)s", {"id": one})
    update = buffers("UPDATE workflow_execution SET heartbeat_at = now() WHERE id = %(id)s", {"id": one})

    # then each read its index's few pages (4 and 21 with the update's index entries), not the
    # table (286 and 304 on Postgres 15 before migration 0023)
    assert lookup < 10
    assert update < 40
