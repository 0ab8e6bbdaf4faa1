"""Every statement a run sends to the execution and state tables names the organization.

On a database sharded by ``organization_id`` (docs/scaling.md) a statement that names it goes to
one shard; one that names a row by id alone goes to every shard. The run path (the API's
execute, a worker's queued run, the heartbeats) is the hot one, so it keeps to the first kind,
and on plain Postgres each of its lookups is the primary key's (organization_id, id). Captured
here from real runs, statement by statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from keeperstate.executions import liveness
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, run_queued
from tests.api.conftest import token_client
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

# The tables that shard with the organization and that a run reads or writes.
SHARDED = re.compile(r'\b"?(workflow_execution|workflow_state(_\w+)?)"?(\s|$)|\bkeeperstate_\w+\(')
NAMES_ORGANIZATION = re.compile(r'"?organization_id"?\s*=\s*(%s|%\(org\)s)|keeperstate_\w+\(%\(org\)s')


def statements_of(action: Callable[[], Any]) -> list[str]:
    sent: list[str] = []

    def note(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(note):
        action()
    return sent


def unrouted(statements: list[str]) -> list[str]:
    """The statements on a sharded table that neither insert (the row carries its organization)
    nor name the organization."""
    return [
        sql for sql in statements
        if SHARDED.search(sql) and not sql.lstrip().upper().startswith("INSERT")
        and not NAMES_ORGANIZATION.search(sql)
    ]


@pytest.fixture
def counter(org, user):
    nodes, edges = counter_graph()
    return make_workflow(org, name="Counter", user=user, nodes=nodes, edges=edges)


def test_an_api_run_names_the_organization_in_each_statement_on_its_execution_and_state(user, monitor, counter):
    api = token_client(user)
    for workflow, run_input in ((monitor, {"block": 7}), (counter, {})):
        api.post(f"/api/workflows/{workflow.id}/execute/", {"input": run_input})  # warm: the first run creates

        statements = statements_of(
            lambda w=workflow, i=run_input: api.post(f"/api/workflows/{w.id}/execute/", {"input": i})
        )

        touched = [sql for sql in statements if SHARDED.search(sql)]
        assert len(touched) >= 2, statements  # the execution's one write, the state's statements
        assert unrouted(statements) == []
    assert WorkflowExecution.objects.filter(status="success").count() == 4


def test_a_queued_run_is_claimed_updated_and_finished_by_its_organization_and_id(counter):
    execution = queue_run(counter, {}, trigger="api").execution

    statements = statements_of(lambda: run_queued(execution.pk, execution.organization_id))

    assert WorkflowExecution.objects.get(pk=execution.pk).status == "success"
    assert any("UPDATE" in sql and "workflow_execution" in sql for sql in statements)
    assert unrouted(statements) == []


def test_a_job_queued_before_jobs_named_the_organization_still_runs(counter):
    # given a job's arguments as an earlier release wrote them: the execution id alone
    execution = queue_run(counter, {}, trigger="api").execution

    # when the worker runs it
    run_queued(str(execution.pk))

    # then the run is claimed by its id and runs once
    assert WorkflowExecution.objects.get(pk=execution.pk).status == "success"
    assert run_queued(str(execution.pk)) is None


def test_the_heartbeat_updates_the_runs_of_each_organization_by_their_key(counter, foreign_workflow):
    # given running executions in two organizations, beating a minute ago
    a_minute_ago = timezone.now() - timezone.timedelta(minutes=1)
    running = [
        WorkflowExecution.objects.create(workflow=w, trigger="api", status="running", input={}, queued_at=a_minute_ago,
                                         started_at=a_minute_ago, heartbeat_at=a_minute_ago)
        for w in (counter, foreign_workflow)
    ]

    # when this process beats for them
    statements = statements_of(lambda: liveness.refresh({e.pk: e.organization_id for e in running}))

    # then each organization's runs got one UPDATE naming it, and both beat now
    assert len(statements) == 2
    assert unrouted(statements) == []
    assert all(e.heartbeat_at > a_minute_ago for e in WorkflowExecution.objects.filter(pk__in=[r.pk for r in running]))
