"""settings.errorWorkflow: a run that ends in error queues the error workflow (trigger "error")
with the failed execution's summary as its documented input; an error run's own failure starts
nothing; a run that succeeds starts nothing."""

from __future__ import annotations

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, run_now, run_queued, run_workflow
from keeperstate.state.store import StateScope, state_get
from keeperstate.workflows.services import workflow_update
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db(transaction=True)

Trigger = WorkflowExecution.Trigger


def setter(value: str):
    """Trigger → Keep (State Set "kept" = value)."""
    nodes = [
        trigger(),
        {"id": "keep", "type": "action", "position": {"x": 0, "y": 120},
         "data": {"label": "Keep", "type": "action",
                  "config": {"actionType": "State Set", "key": "kept", "value": value}}},
    ]
    return nodes, [{"id": "e1", "source": "trigger", "target": "keep"}]


@pytest.fixture
def handler(org, user):
    """The error workflow: keeps the failed run's code."""
    nodes, edges = setter("<<@trigger:Trigger.errorCode>>")
    return make_workflow(org, name="On error", user=user, nodes=nodes, edges=edges)


@pytest.fixture
def failing(org, user, handler):
    """A workflow whose Keep fails (its input has no block) with TEMPLATE_UNRESOLVED."""
    nodes, edges = setter("<<@trigger:Trigger.block>>")
    workflow = make_workflow(org, name="Failing", user=user, nodes=nodes, edges=edges)
    return workflow_update(workflow, settings={"errorWorkflow": str(handler.id)})


def kept(workflow):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key="kept")


def test_a_failed_run_queues_its_error_workflow_with_the_documented_input(failing, handler):
    failed = run_workflow(failing, {"other": 1})

    error_run = handler.executions.get()
    assert (failed.status, error_run.status, error_run.trigger) == ("error", "queued", "error")
    assert error_run.input == {
        "execution": {
            "id": str(failed.id), "status": "error", "trigger": "manual", "error": failed.error,
            "errorCode": "TEMPLATE_UNRESOLVED", "startedAt": failed.started_at.isoformat(),
            "finishedAt": failed.finished_at.isoformat(), "input": {"other": 1},
        },
        "workflow": {"id": str(failing.id), "name": "Failing"},
        "errorCode": "TEMPLATE_UNRESOLVED",
        "failedNode": {"id": "keep", "label": "Keep", "code": "TEMPLATE_UNRESOLVED",
                       "error": failed.node_results["keep"]["error"]},
    }
    run_queued(error_run.id, error_run.organization_id)  # as a worker does
    assert kept(handler).value == "TEMPLATE_UNRESOLVED"


@pytest.mark.parametrize("way", [Trigger.SCHEDULE, Trigger.WEBHOOK, Trigger.API])
def test_every_way_in_starts_the_error_workflow(failing, handler, way):
    if way == Trigger.API:
        run_now(failing, {}, trigger=way)
    else:  # queued, and run as a worker does
        queued = queue_run(failing, {}, trigger=way).execution
        run_queued(queued.id, queued.organization_id)

    assert handler.executions.get().input["execution"]["trigger"] == way


def test_a_run_that_succeeds_starts_nothing(failing, handler):
    assert run_workflow(failing, {"block": 5}).status == "success"

    assert not handler.executions.exists()


def test_an_error_runs_own_failure_starts_nothing_so_error_workflows_never_loop(failing, handler):
    # the error workflow fails too (no errorCode in a plain input), and names the first as its own
    nodes, edges = setter("<<@trigger:Trigger.nothing>>")
    workflow_update(handler, nodes=nodes, edges=edges, settings={"errorWorkflow": str(failing.id)})
    run_workflow(failing, {})
    error_run = handler.executions.get()

    run_queued(error_run.id, error_run.organization_id)

    error_run.refresh_from_db()
    assert error_run.status == "error"
    assert failing.executions.count() == 1  # the first failure only: nothing came back
    assert handler.executions.count() == 1


def test_a_deleted_error_workflow_starts_nothing_and_the_failure_is_kept(failing, handler, caplog):
    handler.soft_delete()

    failed = run_workflow(failing, {})

    assert failed.status == "error"
    assert WorkflowExecution.objects.filter(trigger=Trigger.ERROR).count() == 0
    assert "its error workflow" in caplog.text
