"""The execution service: one lifecycle for every run (DESIGN.md §11)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from keeperstate.engine import runner
from keeperstate.executions import service
from keeperstate.executions.housekeeping import interrupt_stale_runs, release_idempotency_keys
from keeperstate.executions.lifecycle import claim_to_run
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import WorkflowDeletedDuringRun, run_queued, start_run
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_hard_delete
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

Status = WorkflowExecution.Status


@pytest.fixture
def counter(org, user):
    nodes, edges = counter_graph()
    return make_workflow(org, name="Counter", user=user, nodes=nodes, edges=edges)


def runs_counted(workflow) -> int:
    row = WorkflowState.objects.filter(workflow=workflow, key="runs").first()
    return row.value if row else 0


def test_a_run_now_records_its_whole_lifecycle(counter, user):
    execution = start_run(counter, {"n": 1}, trigger="manual", user=user).execution

    execution.refresh_from_db()
    assert (execution.status, execution.trigger, execution.triggered_by, execution.error_code) == (
        "success", "manual", user, None
    )
    assert execution.queued_at <= execution.started_at <= execution.finished_at
    assert execution.node_results["count"]["data"]["value"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_record_is_committed_running_before_any_action_runs(counter, monkeypatch):
    seen = {}
    original = runner.run_node

    def look_from_another_connection(graph, node_id, *args, **kwargs):
        execution_id = args[-1].execution_id

        def look():
            seen["status"] = WorkflowExecution.objects.filter(pk=execution_id).values_list("status", flat=True).first()
            connection.close()

        thread = threading.Thread(target=look)
        thread.start()
        thread.join(timeout=30)
        return original(graph, node_id, *args, **kwargs)

    monkeypatch.setattr(runner, "run_node", look_from_another_connection)

    start_run(counter, {}, trigger="api")

    assert seen["status"] == "running"


def test_an_error_outside_any_action_ends_the_run_as_error(counter, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug in routing")

    monkeypatch.setattr(service, "run_graph", broken)

    execution = start_run(counter, {}, trigger="api").execution

    execution.refresh_from_db()
    assert (execution.status, execution.error_code) == ("error", "RUN_INTERNAL_ERROR")
    assert "internal error" in execution.error
    assert execution.finished_at is not None


def test_a_run_that_loses_its_database_keeps_what_it_recorded_and_is_later_interrupted(org, user, monkeypatch):
    nodes, edges = counter_graph()
    nodes.append({**nodes[1], "id": "count-2", "data": {**nodes[1]["data"], "label": "Count again"}})
    edges.append({"id": "e2", "source": "count", "target": "count-2"})
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    original = runner.run_node

    def database_gone_at_the_second_action(graph, node_id, *args, **kwargs):
        if node_id == "count-2":
            raise OperationalError("server closed the connection unexpectedly")
        return original(graph, node_id, *args, **kwargs)

    monkeypatch.setattr(runner, "run_node", database_gone_at_the_second_action)

    with pytest.raises(OperationalError):
        start_run(workflow, {}, trigger="api")

    execution = WorkflowExecution.objects.get(workflow=workflow)
    assert execution.status == "running"
    assert set(execution.node_results) == {"trigger", "count"}
    assert interrupt_stale_runs(timezone.now()) == 0  # its heartbeat is fresh

    assert interrupt_stale_runs(timezone.now() + timedelta(seconds=61)) == 1

    execution.refresh_from_db()
    assert (execution.status, execution.error_code) == ("interrupted", "RUN_INTERRUPTED")
    assert set(execution.node_results) == {"trigger", "count"}
    assert "not run again" in execution.error


def test_a_repeated_idempotency_key_returns_the_first_execution(counter, other_org):
    first = start_run(counter, {}, trigger="api", idempotency_key="retry-1")
    again = start_run(counter, {}, trigger="api", idempotency_key="retry-1")

    assert (first.replayed, again.replayed) == (False, True)
    assert again.execution.pk == first.execution.pk
    assert counter.executions.count() == 1
    assert runs_counted(counter) == 1


def test_an_idempotency_key_is_kept_per_workflow(counter, org, user):
    nodes, edges = counter_graph()
    other = make_workflow(org, name="Other", user=user, nodes=nodes, edges=edges)

    first = start_run(counter, {}, trigger="api", idempotency_key="k")
    second = start_run(other, {}, trigger="api", idempotency_key="k")

    assert second.replayed is False
    assert first.execution.pk != second.execution.pk


def test_idempotency_keys_are_released_after_a_day(counter):
    start_run(counter, {}, trigger="api", idempotency_key="k")

    assert release_idempotency_keys(timezone.now() + timedelta(hours=23)) == 0
    assert release_idempotency_keys(timezone.now() + timedelta(hours=25)) == 1

    assert start_run(counter, {}, trigger="api", idempotency_key="k").replayed is False


@pytest.mark.parametrize("key", ["", "   ", "x" * 201, "line\nbreak"])
def test_a_bad_idempotency_key_is_refused(key):
    with pytest.raises(service.IdempotencyKeyInvalid) as caught:
        service.check_idempotency_key(key)

    assert caught.value.code == "IDEMPOTENCY_KEY_INVALID"


def queued_jobs(execution) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status FROM procrastinate_jobs WHERE task_name = 'keeperstate.run_execution' "
            "AND args->>'execution_id' = %s",
            [str(execution.pk)],
        )
        return [row[0] for row in cursor.fetchall()]


def test_a_background_run_is_queued_with_its_job_in_the_same_transaction(counter):
    execution = start_run(counter, {}, trigger="webhook", background=True).execution

    assert (execution.status, execution.started_at) == ("queued", None)
    assert queued_jobs(execution) == ["todo"]
    assert runs_counted(counter) == 0


def test_a_queued_run_is_started_once_and_never_again(counter):
    execution = start_run(counter, {}, trigger="webhook", background=True).execution

    ran = run_queued(execution.pk)
    again = run_queued(execution.pk)

    assert ran is not None
    assert ran.status == "success"
    assert again is None
    assert runs_counted(counter) == 1


def test_a_worker_claims_a_queued_run_and_reads_it_with_its_workflow_in_one_statement(
    counter, django_assert_num_queries
):
    execution = start_run(counter, {"block": 7}, trigger="webhook", background=True).execution
    now = timezone.now()

    with django_assert_num_queries(1):
        claimed = claim_to_run(execution.pk, now)
        assert claimed is not None
        assert (claimed.workflow.pk, claimed.workflow.name, claimed.workflow.nodes) == (
            counter.pk, counter.name, counter.nodes)
    assert (claimed.pk, claimed.status, claimed.started_at, claimed.heartbeat_at, claimed.input) == (
        execution.pk, "running", now, now, {"block": 7})
    stored = WorkflowExecution.objects.get(pk=execution.pk)
    assert (stored.status, stored.started_at, stored.heartbeat_at) == ("running", now, now)
    assert claim_to_run(execution.pk, timezone.now()) is None  # running: nobody claims it again


def test_an_interrupted_run_is_never_started_again(counter):
    execution = start_run(counter, {}, trigger="webhook", background=True).execution
    WorkflowExecution.objects.filter(pk=execution.pk).update(status=Status.INTERRUPTED)

    assert run_queued(execution.pk) is None
    assert runs_counted(counter) == 0


def test_a_queued_run_of_a_workflow_deleted_meanwhile_does_not_run(counter):
    execution = start_run(counter, {}, trigger="webhook", background=True).execution
    counter.soft_delete()

    run_queued(execution.pk)

    execution.refresh_from_db()
    assert (execution.status, execution.error_code) == ("error", "WORKFLOW_DELETED")
    assert runs_counted(counter) == 0


def test_a_workflow_hard_deleted_during_its_run_answers_a_coded_conflict(counter, monkeypatch):
    original = runner.run_node

    def delete_then_run(*args, **kwargs):
        workflow_hard_delete(counter)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "run_node", delete_then_run)

    with pytest.raises(WorkflowDeletedDuringRun) as caught:
        start_run(counter, {}, trigger="api")

    assert (caught.value.code, caught.value.status_code) == ("WORKFLOW_DELETED", 409)


@pytest.mark.django_db(transaction=True)
def test_a_state_write_and_the_record_of_it_commit_together(counter, monkeypatch):
    # given: the database goes away just after the increment, before the run's record of it
    original = service._finish

    def lose_the_database(execution, outcome):
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(service, "_finish", lose_the_database)

    # when
    with pytest.raises(OperationalError):
        start_run(counter, {}, trigger="api")

    # then: no increment without its record
    monkeypatch.setattr(service, "_finish", original)
    assert runs_counted(counter) == 0
    assert counter.executions.get().status == "running"  # until housekeeping interrupts it

    # and a run that can record commits both
    start_run(counter, {}, trigger="api")
    assert runs_counted(counter) == 1
    assert counter.executions.filter(status="success").count() == 1
