"""Retry of a failed or interrupted execution, and Test step (one node with an earlier run's
upstream outputs), both through the execution service."""

from __future__ import annotations

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.state.store import StateScope, state_get

pytestmark = pytest.mark.django_db

Status = WorkflowExecution.Status


def failed_run(workflow, status=Status.ERROR, run_input=None):
    return WorkflowExecution.objects.create(workflow=workflow, status=status, input=run_input or {"block": 5},
                                            error="Node failed", error_code="HTTP_TIMEOUT")


def cursor(workflow):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key="cursor")


@pytest.mark.parametrize("status", [Status.ERROR, Status.INTERRUPTED])
def test_retry_runs_the_same_input_as_a_new_linked_execution(api, monitor, status):
    first = failed_run(monitor, status)

    response = api.post(f"/api/executions/{first.id}/retry/")

    assert response.status_code == 201, response.json()
    retry = response.json()
    assert retry["id"] != str(first.id)
    assert retry["retryOf"] == str(first.id)
    assert retry["input"]["block"] == 5
    assert retry["status"] == "success"
    assert retry["trigger"] == "api"
    first.refresh_from_db()
    assert first.status == status  # the first is left as it was
    assert cursor(monitor).value == 5


def test_retry_can_be_queued(api, monitor):
    first = failed_run(monitor)

    response = api.post(f"/api/executions/{first.id}/retry/?async=true")

    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    assert response.json()["retryOf"] == str(first.id)


@pytest.mark.parametrize("status", [Status.SUCCESS, Status.SKIPPED, Status.RUNNING, Status.QUEUED])
def test_only_a_failed_or_interrupted_run_is_retried(api, monitor, status):
    other = failed_run(monitor, status)

    response = api.post(f"/api/executions/{other.id}/retry/")

    assert response.status_code == 409
    assert response.json()["code"] == "RUN_NOT_RETRYABLE"
    assert monitor.executions.count() == 1


def test_retry_of_another_organizations_run_is_404(api, foreign_workflow):
    foreign = failed_run(foreign_workflow)

    assert api.post(f"/api/executions/{foreign.id}/retry/").status_code == 404


def test_test_step_reads_the_chosen_runs_upstream_outputs(api, monitor):
    # given a run that wrote the cursor 100 and then one that saw block 100 again
    run_workflow(monitor, {"block": 100})
    source = run_workflow(monitor, {"block": 150})

    # when the Condition is tested with that run's outputs
    response = api.post(f"/api/workflows/{monitor.id}/test-step/",
                        {"node": "condition-1", "sourceExecution": str(source.id)})

    # then it reads that run's trigger input and State Get output (block 150 > cursor 100)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["result"]["success"] is True
    assert body["handle"] == "true"
    assert body["wroteState"] is False
    assert body["sourceExecution"] == str(source.id)
    assert monitor.executions.count() == 2  # a test step is not an execution


def test_a_writing_step_asks_first_and_then_writes_in_the_workflows_scope(api, monitor):
    source = run_workflow(monitor, {"block": 100})
    WorkflowExecution.objects.filter(pk=source.pk).update(input={"block": 120})  # as if that run saw 120
    url = f"/api/workflows/{monitor.id}/test-step/"

    refused = api.post(url, {"node": "state-set-1", "sourceExecution": str(source.id)})
    assert refused.status_code == 409
    assert refused.json()["code"] == "STEP_WOULD_WRITE"
    assert cursor(monitor).value == 100  # nothing written

    # the source run read version 0 (no cursor yet); the cursor is at version 1 now: a conflict
    conflict = api.post(url, {"node": "state-set-1", "sourceExecution": str(source.id), "allowWrites": True})
    assert conflict.status_code == 200
    assert conflict.json()["result"]["code"] == "STATE_VERSION_CONFLICT"
    assert conflict.json()["wroteState"] is True

    later = run_workflow(monitor, {"block": 100})  # State Get sees version 1
    WorkflowExecution.objects.filter(pk=later.pk).update(input={"block": 120})
    wrote = api.post(url, {"node": "state-set-1", "sourceExecution": str(later.id), "allowWrites": True})
    assert wrote.json()["result"]["success"] is True
    assert cursor(monitor).value == 120


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"node": "trigger"}, 400, "STEP_NOT_RUNNABLE"),
    ({"node": "nope"}, 400, "NODE_NOT_FOUND"),
    ({"node": "condition-1", "sourceExecution": "00000000-0000-0000-0000-000000000000"}, 404, "NOT_FOUND"),
    ({"node": "condition-1", "allowWrites": "yes"}, 400, None),
    ({}, 400, None),
])
def test_test_step_refusals(api, monitor, body, status, code):
    response = api.post(f"/api/workflows/{monitor.id}/test-step/", body)

    assert response.status_code == status, response.json()
    if code:
        assert response.json()["code"] == code


def test_test_step_source_must_be_a_run_of_this_workflow(api, monitor, workflow):
    other_run = run_workflow(workflow, {})

    response = api.post(f"/api/workflows/{monitor.id}/test-step/",
                        {"node": "condition-1", "sourceExecution": str(other_run.id)})

    assert response.status_code == 404


def test_an_http_request_is_tested_without_allow_writes_and_writes_no_state(api, workflow, allow_server):
    from keeperstate.workflows.services import workflow_update
    from tests.executions.graphs import trigger

    nodes = [trigger(), {"id": "fetch", "type": "action", "position": {"x": 0, "y": 120},
                         "data": {"label": "Fetch", "type": "action",
                                  "config": {"actionType": "HTTP Request", "method": "GET",
                                             "url": f"{allow_server.url}/block"}}}]
    workflow_update(workflow, nodes=nodes, edges=[{"id": "e1", "source": "trigger", "target": "fetch"}])

    response = api.post(f"/api/workflows/{workflow.id}/test-step/", {"node": "fetch"})

    assert response.status_code == 200
    assert response.json()["result"]["success"] is True
    assert response.json()["wroteState"] is False  # it reaches another server, never this state
