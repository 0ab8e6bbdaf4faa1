"""The execution service: one lifecycle for every run (DESIGN.md §11)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, OperationalError, connection
from django.utils import timezone

from keeperstate.engine import runner
from keeperstate.executions import service
from keeperstate.executions.housekeeping import interrupt_stale_runs, release_idempotency_keys
from keeperstate.executions.lifecycle import claim_to_run
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import WorkflowDeletedDuringRun, queue_run, run_now, run_queued
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_hard_delete
from tests.executions.graphs import counter_graph, counter_then_call_graph
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
    execution = run_now(counter, {"n": 1}, trigger="manual", user=user).execution

    execution.refresh_from_db()
    assert (execution.status, execution.trigger, execution.triggered_by, execution.error_code) == (
        "success", "manual", user, None
    )
    assert execution.queued_at <= execution.started_at <= execution.finished_at
    assert execution.node_results["count"]["data"]["value"] == 1


def status_seen_from_another_connection(execution_id) -> str | None:
    """The execution's status as another connection sees it: what is committed."""
    seen = {}

    def look():
        seen["status"] = WorkflowExecution.objects.filter(pk=execution_id).values_list("status", flat=True).first()
        connection.close()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join(timeout=30)
    return seen["status"]


def watching_each_node(monkeypatch, seen: list) -> None:
    original = runner.run_node

    def look_then_run(graph, node_id, *args, **kwargs):
        seen.append((node_id, status_seen_from_another_connection(args[-1].execution_id)))
        return original(graph, node_id, *args, **kwargs)

    monkeypatch.setattr(runner, "run_node", look_then_run)


@pytest.mark.django_db(transaction=True)
def test_a_run_with_no_egress_node_is_written_once_at_its_end_with_its_writes(counter, monkeypatch):
    seen = []
    watching_each_node(monkeypatch, seen)

    execution = run_now(counter, {}, trigger="api").execution

    assert seen == [("count", None)]  # nothing of the run exists for others while it runs
    assert WorkflowExecution.objects.get(pk=execution.pk).status == "success"
    assert runs_counted(counter) == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_with_an_egress_node_commits_its_record_running_before_any_node_runs(org, user, monkeypatch):
    nodes, edges = counter_then_call_graph()
    workflow = make_workflow(org, name="Counts then calls", user=user, nodes=nodes, edges=edges)
    seen = []
    watching_each_node(monkeypatch, seen)

    execution = run_now(workflow, {}, trigger="api").execution

    assert seen == [("count", "running"), ("call", "running")]
    execution.refresh_from_db()
    assert execution.node_results["call"]["code"] == "HTTP_EGRESS_BLOCKED"  # it ran: loopback is refused
    assert runs_counted(workflow) == 1


@pytest.mark.django_db(transaction=True)
def test_a_run_in_one_commit_that_loses_its_database_leaves_nothing(counter, monkeypatch):
    # given: the run's connection is cut (as by a restart of Postgres) just before its node
    original = runner.run_node

    def cut_then_run(graph, node_id, *args, **kwargs):
        pid = connection.connection.info.backend_pid

        def terminate():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s::integer)", [pid])
            connection.close()

        thread = threading.Thread(target=terminate)
        thread.start()
        thread.join(timeout=30)
        return original(graph, node_id, *args, **kwargs)

    monkeypatch.setattr(runner, "run_node", cut_then_run)

    # when
    with pytest.raises(DatabaseError):
        run_now(counter, {}, trigger="api")

    # then nothing of the run exists: no record, no write (a retry with its Idempotency-Key runs it)
    connection.close()
    monkeypatch.setattr(runner, "run_node", original)
    assert not counter.executions.exists()
    assert runs_counted(counter) == 0
    assert run_now(counter, {}, trigger="api").execution.status == "success"
    assert runs_counted(counter) == 1


def test_a_refused_write_rolls_the_whole_run_back_and_runs_it_again_node_by_node(org, user, settings, monkeypatch):
    # given: a workflow may hold one key, and a run writes two
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 1
    nodes, edges = counter_graph()
    nodes.append({**nodes[1], "id": "second", "data": {**nodes[1]["data"], "label": "Second",
                                                       "config": {"actionType": "State Set", "key": "b",
                                                                  "value": "1"}}})
    edges.append({"id": "e2", "source": "count", "target": "second"})
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    attempts = []
    original = service._NodeByNode.run

    def counted_run(self, workflow):
        attempts.append(self.execution.pk)
        return original(self, workflow)

    monkeypatch.setattr(service._NodeByNode, "run", counted_run)

    # when
    execution = run_now(workflow, {}, trigger="api").execution

    # then: the limit refused the second write, which aborted the run's one transaction; the run
    # went again node by node, and recorded the refusal as its node's failure
    execution.refresh_from_db()
    assert attempts == [execution.pk]
    assert (execution.status, execution.error_code) == ("error", "STATE_KEY_LIMIT")
    assert execution.node_results["count"]["data"] == {"value": 1, "version": 1, "created": True}
    assert runs_counted(workflow) == 1  # the first attempt's increment was rolled back with it
    assert workflow.executions.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_requests_with_one_idempotency_key_in_one_commit_run_once(counter):
    barrier = threading.Barrier(2)
    started = []

    def request():
        barrier.wait(timeout=10)
        try:
            started.append(run_now(counter, {}, trigger="api", idempotency_key="same"))
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(s.replayed for s in started) == [False, True]
    assert len({s.execution.pk for s in started}) == 1
    assert counter.executions.count() == 1
    assert runs_counted(counter) == 1


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_in_one_commit_stays_queued_for_others_until_it_ends(counter, monkeypatch):
    execution = queue_run(counter, {}, trigger="webhook").execution
    seen = []
    watching_each_node(monkeypatch, seen)

    ran = run_queued(execution.pk, execution.organization_id)

    assert seen == [("count", "queued")]  # its claim is in its transaction: a death leaves it queued
    assert (ran.status, WorkflowExecution.objects.get(pk=execution.pk).status) == ("success", "success")
    assert runs_counted(counter) == 1


def test_an_error_outside_any_action_ends_the_run_as_error(counter, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("a bug in routing")

    monkeypatch.setattr(service, "run_graph", broken)

    execution = run_now(counter, {}, trigger="api").execution

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
        run_now(workflow, {}, trigger="api")

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
    first = run_now(counter, {}, trigger="api", idempotency_key="retry-1")
    again = run_now(counter, {}, trigger="api", idempotency_key="retry-1")

    assert (first.replayed, again.replayed) == (False, True)
    assert again.execution.pk == first.execution.pk
    assert counter.executions.count() == 1
    assert runs_counted(counter) == 1


def test_an_idempotency_key_is_kept_per_workflow(counter, org, user):
    nodes, edges = counter_graph()
    other = make_workflow(org, name="Other", user=user, nodes=nodes, edges=edges)

    first = run_now(counter, {}, trigger="api", idempotency_key="k")
    second = run_now(other, {}, trigger="api", idempotency_key="k")

    assert second.replayed is False
    assert first.execution.pk != second.execution.pk


def test_idempotency_keys_are_released_after_a_day(counter):
    run_now(counter, {}, trigger="api", idempotency_key="k")

    assert release_idempotency_keys(timezone.now() + timedelta(hours=23)) == 0
    assert release_idempotency_keys(timezone.now() + timedelta(hours=25)) == 1

    assert run_now(counter, {}, trigger="api", idempotency_key="k").replayed is False


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
    execution = queue_run(counter, {}, trigger="webhook").execution

    assert (execution.status, execution.started_at) == ("queued", None)
    assert queued_jobs(execution) == ["todo"]
    assert runs_counted(counter) == 0


def test_a_queued_run_is_started_once_and_never_again(counter):
    execution = queue_run(counter, {}, trigger="webhook").execution

    ran = run_queued(execution.pk)
    again = run_queued(execution.pk)

    assert ran is not None
    assert ran.status == "success"
    assert again is None
    assert runs_counted(counter) == 1


def test_a_worker_claims_a_queued_run_and_reads_it_with_its_workflow_in_one_statement(
    counter, django_assert_num_queries
):
    execution = queue_run(counter, {"block": 7}, trigger="webhook").execution
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
    execution = queue_run(counter, {}, trigger="webhook").execution
    WorkflowExecution.objects.filter(pk=execution.pk).update(status=Status.INTERRUPTED)

    assert run_queued(execution.pk) is None
    assert runs_counted(counter) == 0


def test_a_queued_run_of_a_workflow_deleted_meanwhile_does_not_run(counter):
    execution = queue_run(counter, {}, trigger="webhook").execution
    counter.soft_delete()

    run_queued(execution.pk)

    execution.refresh_from_db()
    assert (execution.status, execution.error_code) == ("error", "WORKFLOW_DELETED")
    assert runs_counted(counter) == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("graph", [counter_graph, counter_then_call_graph])
def test_a_workflow_hard_deleted_during_its_run_answers_a_coded_conflict(org, user, monkeypatch, graph):
    nodes, edges = graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    original = runner.run_node

    def delete_then_run(*args, **kwargs):
        if Workflow.objects.filter(pk=workflow.pk).exists():
            def delete():
                workflow_hard_delete(Workflow.objects.get(pk=workflow.pk))
                connection.close()

            thread = threading.Thread(target=delete)
            thread.start()
            thread.join(timeout=30)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "run_node", delete_then_run)

    with pytest.raises(WorkflowDeletedDuringRun) as caught:
        run_now(workflow, {}, trigger="api")

    assert (caught.value.code, caught.value.status_code) == ("WORKFLOW_DELETED", 409)
    assert not WorkflowExecution.objects.filter(workflow_id=workflow.pk).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("graph", [counter_graph, counter_then_call_graph])
def test_a_state_write_and_the_record_of_it_commit_together(org, user, monkeypatch, graph):
    # given: the database goes away as the run writes its end, after the increment
    nodes, edges = graph()
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    def lose_the_database(execution, **options):
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(service, "end", lose_the_database)

    # when
    with pytest.raises(OperationalError):
        run_now(workflow, {}, trigger="api")

    # then: no increment without its record. In one commit nothing was kept; node by node the
    # record committed first says the increment, until housekeeping interrupts it
    monkeypatch.undo()
    if graph is counter_graph:
        assert (runs_counted(workflow), workflow.executions.count()) == (0, 0)
    else:
        execution = workflow.executions.get()
        assert (execution.status, runs_counted(workflow)) == ("running", 1)
        assert execution.node_results["count"]["data"]["value"] == 1

    # and a run that can record commits both
    run_now(workflow, {}, trigger="api")
    assert workflow.executions.filter(status__in=["success", "error"]).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_whose_job_was_lost_is_queued_again_unless_a_run_holds_it(counter):
    from keeperstate.executions.housekeeping import requeue_orphaned_runs

    lost, waiting, held, recent = (queue_run(counter, {"n": n}, trigger="webhook").execution for n in range(4))
    with connection.cursor() as cursor:  # the jobs of two of them are gone, as a failed job's are
        for execution in (lost, held, recent):
            cursor.execute("DELETE FROM procrastinate_jobs WHERE args->>'execution_id' = %s", [str(execution.pk)])
    later = timezone.now() + timedelta(seconds=30)
    WorkflowExecution.objects.filter(pk=recent.pk).update(queued_at=later)  # queued just now, seen from then
    blocker_ready, release = threading.Event(), threading.Event()

    def hold() -> None:  # a run in one commit holds its execution's row from its claim to its commit
        from django.db import transaction

        with transaction.atomic():
            WorkflowExecution.objects.select_for_update().get(organization_id=held.organization_id, pk=held.pk)
            blocker_ready.set()
            release.wait(timeout=30)
        connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    blocker_ready.wait(timeout=30)
    try:
        requeued = requeue_orphaned_runs(later)
    finally:
        release.set()
        thread.join(timeout=30)

    assert requeued == 1
    assert (queued_jobs(lost), queued_jobs(waiting), queued_jobs(held), queued_jobs(recent)) == (
        ["todo"], ["todo"], [], [])
    assert run_queued(lost.pk).status == "success"
    assert requeue_orphaned_runs(later) == 1  # the held one, now that nothing holds it


@pytest.mark.django_db(transaction=True)
def test_a_run_in_one_commit_takes_the_exact_usage_path_only_when_it_may_write_several_keys(org, user, monkeypatch):
    from keeperstate.state import store

    seen = []
    original = store._limits

    def noted(exact):
        seen.append(exact)
        return original(exact)

    monkeypatch.setattr(store, "_limits", noted)
    nodes, edges = counter_graph()
    one_writer = make_workflow(org, name="One writer", user=user, nodes=nodes, edges=edges)
    nodes, edges = counter_graph()
    nodes.append({**nodes[1], "id": "again", "data": {**nodes[1]["data"], "config": {
        "actionType": "State Increment", "key": "other"}}})
    edges.append({"id": "e2", "source": "count", "target": "again"})
    two_writers = make_workflow(org, name="Two writers", user=user, nodes=nodes, edges=edges)

    run_now(one_writer, {}, trigger="api")  # creates its key
    one, seen[:] = list(seen), []
    run_now(two_writers, {}, trigger="api")  # creates two keys

    # one key at most: the fast usage check, as a node of a run recorded first; else the exact one,
    # whose locks are taken in one order whatever keys a transaction writes
    assert one
    assert set(one) == {False}
    assert seen
    assert set(seen) == {True}


@pytest.mark.django_db(transaction=True)
def test_a_run_in_one_commit_near_its_organizations_key_budget_goes_again_node_by_node(counter, settings, monkeypatch):
    # near the budget the fast usage check asks to count exactly (KS000), which a transaction
    # without savepoints cannot do in place: the run is rolled back and goes the second way
    settings.KEEPERSTATE_ORG_MAX_KEYS = 10
    node_by_node = []
    original = service._NodeByNode.run
    monkeypatch.setattr(service._NodeByNode, "run", lambda self, wf: node_by_node.append(1) or original(self, wf))

    execution = run_now(counter, {}, trigger="api").execution

    assert node_by_node == [1]
    assert WorkflowExecution.objects.get(pk=execution.pk).status == "success"
    assert runs_counted(counter) == 1
