"""Executions, workflows and versions found by an index, whatever the table holds (migration 0023).

Their primary key is (organization_id, id) for sharding (docs/scaling.md), but a waited webhook,
`/hooks/<id>/`, the API's and admin's pages and a job queued before jobs named the organization
name the id only (the run path names both: ADR 0066). Postgres before 18 (CI's server is 15)
cannot look a second column of an index up without the first: without an index of their own,
those lookups read the whole table.
"""

from __future__ import annotations

import pytest
from django.db import connection

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_now
from keeperstate.workflows.services import workflow_update
from keeperstate.workflows.versions import of_workflow
from tests import citus
from tests.factories import make_workflow
from tests.state.crowding import buffers, reads_of

pytestmark = pytest.mark.django_db

FOUND_BY_ID = ("workflow", "workflow_execution", "workflow_state")


def add_runs(workflow) -> None:
    """20,000 finished runs of ``workflow``, keyed 'key-1'… (an Idempotency-Key each), analyzed."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_execution (id, organization_id, workflow_id, status, trigger, input, node_results,"
            " queued_at, idempotency_key) SELECT gen_random_uuid(), %s, %s, 'success', 'api', '{}', '{}', now(),"
            " 'key-' || g FROM generate_series(1, 20000) g",
            [workflow.organization_id, workflow.id],
        )
        cursor.execute("ANALYZE workflow_execution")


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


@citus.PLAN
def test_a_run_finds_its_execution_by_id_among_many_in_a_few_pages(workflow):
    # given 20,000 runs of a workflow, counted by ANALYZE
    add_runs(workflow)
    one = WorkflowExecution.objects.filter(workflow=workflow).order_by("?").values_list("id", flat=True).first()

    # when one is read and updated by id alone, as the run path's statements do
    lookup = buffers("SELECT status FROM workflow_execution WHERE id = %(id)s", {"id": one})
    update = buffers("UPDATE workflow_execution SET heartbeat_at = now() WHERE id = %(id)s", {"id": one})

    # then each read its index's few pages (4 and 21 with the update's index entries), not the
    # table (286 and 304 on Postgres 15 before migration 0023)
    assert lookup < 10
    assert update < 40


@citus.PLAN
def test_a_repeated_idempotency_key_is_found_by_its_key_not_among_the_workflows_runs(workflow):
    # given 20,000 runs of a workflow, each with its Idempotency-Key
    add_runs(workflow)

    # when a request repeats one of the keys
    started = []
    reads = reads_of(lambda: started.append(run_now(workflow, {}, trigger="api", idempotency_key="key-777")))

    # then the first run is answered, found through the unique key (organization, workflow, key):
    # a few pages, not the workflow's runs (594 on Postgres 15 without the organization)
    assert started[0].replayed
    assert started[0].execution.idempotency_key == "key-777"
    assert max(reads.values()) < 12, reads


@citus.PLAN
def test_a_save_finds_the_workflows_last_version_by_its_key_not_among_all_versions(workflow, user):
    # given its organization holding 20,000 versions (of another workflow: one workflow keeps its
    # newest 100), and the workflow its 99
    other = make_workflow(workflow.organization, name="Other")
    with connection.cursor() as cursor:
        for owner, count in ((other, 20000), (workflow, 99)):
            cursor.execute(
                "INSERT INTO workflow_version (organization_id, workflow_id, number, name, nodes, edges, changes,"
                " summary, created_at) SELECT %s, %s, g, 'Monitor', '[]', '[]', '{}', 'a save', now()"
                " FROM generate_series(1, %s) g",
                [owner.organization_id, owner.id, count],
            )
        cursor.execute("ANALYZE workflow_version")

    # when it is saved with a new name (which keeps a version)
    reads = reads_of(lambda: workflow_update(workflow, user=user, name="Renamed"))

    # then the save numbered the new version after the last, whose lookups read the key
    # (organization, workflow, number): a few pages each, not every version (286 on Postgres 15
    # by the workflow alone)
    assert of_workflow(workflow).order_by("-number").values_list("number", "name").first() == (100, "Renamed")
    assert max(reads.values()) < 12, reads
