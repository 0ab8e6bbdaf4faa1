"""The writes on every run's path written once as SQL (keeperstate.core.rows, executions.lifecycle)
store what the ORM would store."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.db.models import signals
from django.utils import timezone

from keeperstate.core.rows import Insert
from keeperstate.core.sharding import OrganizationChanged
from keeperstate.executions import lifecycle
from keeperstate.executions.models import WorkflowExecution

pytestmark = pytest.mark.django_db

INSERT = Insert(WorkflowExecution)


def stored(execution_id: uuid.UUID) -> dict:
    with connection.cursor() as cursor:  # the row as stored, every column
        cursor.execute("SELECT to_jsonb(e) - 'id' FROM workflow_execution e WHERE id = %s", [execution_id])
        return json.loads(cursor.fetchone()[0])  # Django's connection leaves jsonb as text


def an_execution(workflow, user, key: str = "k-1") -> WorkflowExecution:
    now = timezone.now()
    return WorkflowExecution(
        workflow=workflow, organization_id=workflow.organization_id, trigger="api", status="running",
        input={"block": 7, "nested": {"ok": True, "text": "é ✓"}}, idempotency_key=key, triggered_by=user,
        queued_at=now, started_at=now, heartbeat_at=now,
    )


def test_an_insert_written_once_stores_the_row_the_orm_stores(workflow, user):
    # given two executions alike but for their ids
    by_orm, written_once = an_execution(workflow, user), an_execution(workflow, user, key="k-2")
    written_once.queued_at = written_once.started_at = written_once.heartbeat_at = by_orm.queued_at

    # when one is saved by the ORM and one by the statement written once
    by_orm.save(force_insert=True)
    INSERT.save(written_once)

    # then the rows are the same, column by column, and the instance is a saved one
    assert {**stored(by_orm.pk), "idempotency_key": None} == {**stored(written_once.pk), "idempotency_key": None}
    assert not written_once._state.adding
    written_once.error = "noted"
    written_once.save()  # an UPDATE of the saved row, not a second insert
    assert WorkflowExecution.objects.get(pk=written_once.pk).error == "noted"


def test_an_execution_inserted_once_still_refuses_to_change_organization(workflow, user, other_org):
    execution = an_execution(workflow, user)
    INSERT.save(execution)

    execution.organization_id = other_org.id
    with pytest.raises(OrganizationChanged):
        execution.save()


def test_a_model_with_save_receivers_is_saved_by_the_orm_so_they_run(workflow, user):
    seen = []

    def receiver(sender, instance, created, **kwargs):
        seen.append((instance.pk, created))

    signals.post_save.connect(receiver, sender=WorkflowExecution)
    try:
        execution = an_execution(workflow, user)
        INSERT.save(execution)
    finally:
        signals.post_save.disconnect(receiver, sender=WorkflowExecution)

    assert seen == [(execution.pk, True)]
    assert WorkflowExecution.objects.filter(pk=execution.pk).exists()


def test_the_end_of_a_run_moves_it_only_from_the_statuses_it_may_and_stores_the_results(workflow, user):
    execution = an_execution(workflow, user)
    lifecycle.insert(execution)
    results = {"count": {"succeeded": True, "data": {"value": 1, "text": "ü"}}}
    at = timezone.now()

    execution.status, execution.node_results, execution.finished_at = "success", results, at
    moved = lifecycle.end(execution)
    execution.status, execution.node_results, execution.error, execution.error_code = "error", {}, "late", "X"
    again = lifecycle.end(execution)

    row = WorkflowExecution.objects.get(pk=execution.pk)
    assert (moved, again) == (True, False)  # success is final: no move to error from it
    assert (row.status, row.node_results, row.error, row.finished_at) == ("success", results, None, at)


def test_the_end_of_a_run_with_no_row_yet_inserts_it_finished_as_the_orm_would(workflow, user):
    # given two finished executions alike but for their ids and keys
    by_orm, written_once = an_execution(workflow, user), an_execution(workflow, user, key="k-2")
    for execution in (by_orm, written_once):
        execution.queued_at = execution.started_at = execution.heartbeat_at = by_orm.queued_at
        execution.status, execution.node_results, execution.finished_at = "success", {"a": {"b": 1}}, by_orm.queued_at

    by_orm.save(force_insert=True)
    assert lifecycle.end(written_once) is True

    assert {**stored(by_orm.pk), "idempotency_key": None} == {**stored(written_once.pk), "idempotency_key": None}
    assert not written_once._state.adding


def test_an_execution_is_created_only_in_a_status_a_run_starts_in(workflow, user):
    execution = an_execution(workflow, user)
    execution.status = "success"

    with pytest.raises(ValueError, match="an execution starts as one of"):
        lifecycle.insert(execution)


def test_progress_written_once_is_recorded_only_while_running(workflow, user):
    execution = an_execution(workflow, user)
    INSERT.save(execution)
    later = timezone.now() + timezone.timedelta(seconds=5)

    lifecycle.record_progress(execution, {"get": {"succeeded": True, "data": {}}}, later)
    row = WorkflowExecution.objects.get(pk=execution.pk)
    assert (row.node_results, row.heartbeat_at) == ({"get": {"succeeded": True, "data": {}}}, later)

    WorkflowExecution.objects.filter(pk=execution.pk).update(status="interrupted")
    lifecycle.record_progress(execution, {}, later + timezone.timedelta(seconds=5))
    assert WorkflowExecution.objects.get(pk=execution.pk).heartbeat_at == later


def test_the_execution_of_an_idempotency_key_is_read_as_the_orm_reads_it(workflow, user, org):
    from tests.factories import make_workflow

    execution = an_execution(workflow, user, key="retry-7")
    lifecycle.insert(execution)
    other = make_workflow(org, name="Other", user=user)

    found = lifecycle.by_idempotency_key(workflow, "retry-7")

    expected = WorkflowExecution.objects.get(pk=execution.pk)
    columns = [field.attname for field in WorkflowExecution._meta.concrete_fields]
    assert [getattr(found, name) for name in columns] == [getattr(expected, name) for name in columns]
    assert not found._state.adding
    assert lifecycle.by_idempotency_key(workflow, "retry-8") is None
    assert lifecycle.by_idempotency_key(other, "retry-7") is None  # keys are kept per workflow
