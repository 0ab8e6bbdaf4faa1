"""Pinned data stands in for a node's output in runs started from the editor only: a manual run
(the editor's Run and Retry) and Test step use it; a scheduled, webhook, API or error-workflow
run runs every node whatever is pinned (keeperstate.executions.service.uses_pins)."""

from __future__ import annotations

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, run_now, run_queued, run_step, run_workflow
from keeperstate.state.store import StateScope, state_get
from tests.api.conftest import token_client
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db(transaction=True)

Trigger = WorkflowExecution.Trigger
PIN = {"value": 99, "version": 7, "created": False}


def pinned_graph():
    """Trigger → Head (State Increment of "head", pinned at 99) → Copy (State Set "copy" = Head's value)."""
    nodes = [
        trigger(),
        {"id": "head", "type": "action", "position": {"x": 0, "y": 120},
         "data": {"label": "Head", "type": "action", "config": {"actionType": "State Increment", "key": "head"},
                  "pinnedData": PIN}},
        {"id": "copy", "type": "action", "position": {"x": 0, "y": 240},
         "data": {"label": "Copy", "type": "action",
                  "config": {"actionType": "State Set", "key": "copy", "value": "<<@head:Head.value>>"}}},
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "head"}, {"id": "e2", "source": "head", "target": "copy"}]
    return nodes, edges


@pytest.fixture
def pinned(org, user):
    nodes, edges = pinned_graph()
    return make_workflow(org, name="Pinned", user=user, nodes=nodes, edges=edges)


def started(workflow, way):
    """A run as it starts that way: queued and run as a worker does (schedule, webhook, error), or
    now (the API's execute)."""
    if way == Trigger.API:
        return run_now(workflow, {}, trigger=way).execution
    queued = queue_run(workflow, {}, trigger=way).execution
    return run_queued(queued.id, queued.organization_id)


def value(workflow, key):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key=key).value


def test_a_manual_run_takes_the_pinned_output_and_does_not_run_the_node(pinned):
    execution = run_workflow(pinned, {}, trigger=Trigger.MANUAL)

    assert execution.status == "success"
    assert execution.node_results["head"] == {"success": True, "data": PIN, "pinned": True}
    assert value(pinned, "copy") == 99
    assert value(pinned, "head") is None  # the increment never ran


@pytest.mark.parametrize("way", [Trigger.SCHEDULE, Trigger.WEBHOOK, Trigger.API, Trigger.ERROR])
def test_scheduled_webhook_api_and_error_runs_run_every_node_whatever_is_pinned(pinned, way):
    execution = started(pinned, way)

    assert execution.status == "success"
    assert execution.node_results["head"] == {"success": True, "data": {"value": 1, "version": 1, "created": True}}
    assert value(pinned, "head") == 1
    assert value(pinned, "copy") == 1


def test_the_api_runs_every_node_and_the_editors_session_uses_the_pin(pinned, user, client_as_alice):
    by_token = token_client(user).post(f"/api/workflows/{pinned.id}/execute/", {"input": {}}, format="json")
    by_session = client_as_alice.post(f"/api/workflows/{pinned.id}/execute/", {"input": {}},
                                      content_type="application/json")

    assert by_token.json()["trigger"] == "api"
    assert "pinned" not in by_token.json()["nodeResults"]["head"]
    assert by_session.json()["trigger"] == "manual"
    assert by_session.json()["nodeResults"]["head"]["pinned"] is True
    assert value(pinned, "head") == 1  # the API's run incremented once; the editor's did not


def test_test_step_reads_the_pins_of_the_other_nodes(pinned):
    step = run_step(pinned, "copy", source=None, allow_writes=True)

    assert step.result == {"success": True, "data": {"key": "copy", "version": 1, "created": True, "expiresAt": None}}
    assert value(pinned, "copy") == 99


def test_a_pinned_condition_follows_the_branch_its_pinned_result_names(org, user):
    nodes = [
        trigger(),
        {"id": "check", "type": "action", "position": {"x": 0, "y": 120},
         "data": {"label": "Check", "type": "action", "config": {"actionType": "Condition", "condition": "1 > 2"},
                  "pinnedData": {"result": True}}},
        {"id": "yes", "type": "action", "position": {"x": 0, "y": 240},
         "data": {"label": "Yes", "type": "action", "config": {"actionType": "State Set", "key": "branch",
                                                                "value": "true"}}},
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "check"},
             {"id": "e2", "source": "check", "target": "yes", "sourceHandle": "true"}]
    workflow = make_workflow(org, name="Branch", user=user, nodes=nodes, edges=edges)

    assert run_workflow(workflow, {}).node_results["yes"]["success"] is True
    assert started(workflow, Trigger.SCHEDULE).node_results["yes"] == {"skipped": True}
