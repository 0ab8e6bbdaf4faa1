"""Running workflows through the API, reading executions, and direct node execution."""

from __future__ import annotations

import pytest

from keeperstate.engine.registry import all_actions
from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.examples import block_monitor_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

EXECUTION_KEYS = {
    "id", "workflow", "status", "trigger", "triggeredBy", "input", "nodeResults", "error", "errorCode",
    "queuedAt", "startedAt", "finishedAt", "scheduledFor", "retryOf",
}


def action(node_id: str, label: str, **config) -> dict:
    return {
        "id": node_id,
        "type": "action",
        "position": {"x": 0, "y": 0},
        "data": {"label": label, "type": "action", "config": {"actionType": label, **config}},
    }


def execute(api, workflow_id, run_input) -> dict:
    response = api.post(f"/api/workflows/{workflow_id}/execute/", {"input": run_input})
    assert response.status_code == 201, response.json()
    return response.json()


def test_monitor_created_validated_and_run_twice_advances_the_cursor(api, org):
    # given: the monitor, validated and saved through the API
    nodes, edges = block_monitor_graph()
    assert api.post("/api/workflows/validate/", {"nodes": nodes, "edges": edges}).json()["valid"] is True
    workflow_id = api.post("/api/workflows/", {"name": "Block monitor", "nodes": nodes, "edges": edges}).json()["id"]

    # when: it runs for block 100, then block 101
    first = execute(api, workflow_id, {"block": 100})
    second = execute(api, workflow_id, {"block": 101})

    # then: the second run read the first one's cursor and moved it on by compare-and-set
    assert first["status"] == second["status"] == "success"
    assert first["nodeResults"]["state-set-1"]["data"] == {
        "key": "cursor",
        "version": 1,
        "created": True,
        "expiresAt": None,
    }
    assert second["nodeResults"]["state-get-1"]["data"] == {
        "exists": True,
        "value": 100,
        "version": 1,
        "expiresAt": None,
    }
    assert second["nodeResults"]["state-set-1"]["data"]["version"] == 2
    row = WorkflowState.objects.get(workflow_id=workflow_id, key="cursor")
    assert (row.value, row.version, str(row.updated_by_execution_id)) == (101, 2, second["id"])
    assert second["nodeResults"] == WorkflowExecution.objects.get(pk=second["id"]).node_results  # nothing dropped


def test_execution_has_the_documented_shape(api, monitor, user):
    body = execute(api, monitor.id, {"block": 7})

    assert set(body) == EXECUTION_KEYS
    assert (body["workflow"], body["status"], body["input"], body["error"]) == (
        str(monitor.id),
        "success",
        {"block": 7},
        None,
    )
    assert body["queuedAt"] <= body["startedAt"] <= body["finishedAt"]
    assert (body["trigger"], body["triggeredBy"], body["errorCode"], body["scheduledFor"]) == (
        "api", "alice", None, None
    )
    assert WorkflowExecution.objects.get(pk=body["id"]).triggered_by == user


def test_a_repeated_block_skips_the_write(api, monitor):
    execute(api, monitor.id, {"block": 100})

    again = execute(api, monitor.id, {"block": 100})

    assert again["nodeResults"]["state-set-1"] == {"skipped": True}


def test_version_conflict_is_surfaced_in_node_results(api, org):
    # given: two writes that both trust the version read before either of them
    stale = "<<@get:State Get.version>>"
    nodes = [
        {"id": "trigger", "type": "trigger", "data": {"label": "Trigger", "type": "trigger", "config": {}}},
        action("get", "State Get", key="cursor"),
        action("set-a", "State Set", key="cursor", value="a", expectedVersion=stale),
        action("set-b", "State Set", key="cursor", value="b", expectedVersion=stale),
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "get"},
        {"id": "e2", "source": "get", "target": "set-a"},
        {"id": "e3", "source": "set-a", "target": "set-b"},
    ]
    workflow = make_workflow(org, nodes=nodes, edges=edges)

    # when
    body = execute(api, workflow.id, {})

    # then: the second write lost the race, wrote nothing, and says what it expected and found
    conflict = body["nodeResults"]["set-b"]
    assert body["status"] == "error"
    assert (conflict["success"], conflict["code"], conflict["details"]) == (
        False,
        "STATE_VERSION_CONFLICT",
        {"expected": 0, "current": 1},
    )
    assert "State Get" in conflict["error"]
    assert "set-b" in body["error"]
    assert body["nodeResults"] == WorkflowExecution.objects.get(pk=body["id"]).node_results
    assert WorkflowState.objects.get(workflow=workflow, key="cursor").value == "a"


def test_input_defaults_to_an_empty_object(api, monitor):
    response = api.post(f"/api/workflows/{monitor.id}/execute/", {})

    assert response.status_code == 201
    assert response.json()["input"] == {}


@pytest.mark.parametrize("run_input", [[1, 2], "block 100", None, 5])
def test_input_that_is_not_an_object_is_a_field_error_and_runs_nothing(api, monitor, run_input):
    response = api.post(f"/api/workflows/{monitor.id}/execute/", {"input": run_input})

    assert response.status_code == 400
    assert set(response.json()) == {"input"}
    assert not WorkflowExecution.objects.exists()


def test_input_with_a_nul_character_is_a_field_error(api, monitor):
    response = api.post(f"/api/workflows/{monitor.id}/execute/", {"input": {"note": "a\x00b"}})

    assert response.status_code == 400
    assert response.json() == {"input": ["Text in this field contains the character U+0000; remove it."]}


# reading executions


def test_read_an_execution(api, monitor):
    ran = execute(api, monitor.id, {"block": 3})

    response = api.get(f"/api/executions/{ran['id']}/")

    assert response.status_code == 200
    assert response.json() == ran


def test_executions_of_a_workflow_newest_first_and_paginated(api, monitor):
    runs = [execute(api, monitor.id, {"block": n})["id"] for n in (1, 2, 3)]

    first = api.get(f"/api/workflows/{monitor.id}/executions/?pageSize=2").json()
    rest = api.get(first["next"]).json()

    assert first["count"] == 3
    assert [e["id"] for e in first["results"] + rest["results"]] == runs[::-1]
    assert set(first["results"][0]) == EXECUTION_KEYS


@pytest.mark.parametrize("execution_id", ["00000000-0000-0000-0000-000000000000", "not-a-uuid"])
def test_unknown_execution_is_404(api, execution_id):
    response = api.get(f"/api/executions/{execution_id}/")

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No such execution."}


# direct node execution


def run_node(api, body) -> dict:
    response = api.post("/api/execute/node/", body)
    assert response.status_code == 200, response.json()
    return response.json()


def test_node_runs_with_its_input_as_the_trigger_output(api):
    result = run_node(
        api,
        {
            "actionType": "Condition",
            "config": {"condition": "<<@trigger:Trigger.block>> > 99"},
            "input": {"block": 100},
        },
    )

    assert result == {"success": True, "data": {"result": True}}


STATE_ACTIONS = [definition.id for definition in all_actions() if definition.needs_workflow_context]


@pytest.mark.parametrize("action_type", STATE_ACTIONS)
def test_state_actions_outside_a_workflow_answer_no_workflow_context_and_write_nothing(api, workflow, action_type):
    result = run_node(api, {"actionType": action_type, "config": {"key": "cursor", "value": "1"}})

    assert result["success"] is False
    assert result["code"] == "STATE_NO_WORKFLOW_CONTEXT"
    assert "workflow" in result["error"]
    assert not WorkflowState.objects.exists()


def test_state_action_ignores_a_workflow_named_in_its_config(api, workflow):
    config = {"key": "cursor", "value": "1", "workflowId": str(workflow.id), "organizationId": workflow.organization_id}

    result = run_node(api, {"actionType": "State Set", "config": config})

    assert result["code"] == "STATE_NO_WORKFLOW_CONTEXT"
    assert not WorkflowState.objects.exists()


def test_node_with_an_unresolvable_reference_fails_as_a_node(api):
    result = run_node(api, {"actionType": "Condition", "config": {"condition": "<<@nowhere:Gone.x>> > 1"}})

    assert (result["success"], result["code"]) == (False, "TEMPLATE_UNRESOLVED")


def test_node_with_an_unknown_action_type_is_a_field_error(api):
    response = api.post("/api/execute/node/", {"actionType": "Teleport"})

    assert response.status_code == 400
    assert response.json() == {"actionType": ['"Teleport" is not a valid choice.']}


def test_node_config_must_be_an_object(api):
    response = api.post("/api/execute/node/", {"actionType": "Condition", "config": ["x"]})

    assert response.status_code == 400
    assert set(response.json()) == {"config"}


def test_increment_delete_and_conflict_branch_through_the_api(api, org):
    # given: a workflow that counts runs, claims a lock with a conflict branch, and clears a marker
    trigger = block_monitor_graph()[0][0]
    nodes = [
        trigger,
        action("count", "State Increment", key="runs"),
        action("claim", "State Set", key="lock", value="<<@count:State Increment.value>>", expectedVersion="0",
               onConflict="branch"),
        action("lost", "State Set", key="lost-at", value="<<@claim:State Set.currentValue>>"),
        action("clear", "State Delete", key="marker"),
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "count"},
        {"id": "e2", "source": "count", "target": "claim"},
        {"id": "e3", "source": "claim", "target": "lost", "sourceHandle": "conflict"},
        {"id": "e4", "source": "claim", "target": "clear", "sourceHandle": "success"},
    ]
    created = api.post("/api/workflows/", {"name": "Counter", "nodes": nodes, "edges": edges})
    assert created.status_code == 201, created.json()
    workflow_id = created.json()["id"]

    # when: it runs twice
    first = execute(api, workflow_id, {"block": 1})
    second = execute(api, workflow_id, {"block": 2})

    # then: the counter counted, the first run took the lock, the second took the conflict branch
    assert first["nodeResults"]["count"]["data"] == {"value": 1, "version": 1, "created": True}
    assert first["nodeResults"]["clear"]["data"] == {"deleted": False, "previousVersion": 0}
    assert first["nodeResults"]["lost"] == {"skipped": True}
    assert second["status"] == "success"
    assert second["nodeResults"]["count"]["data"]["value"] == 2
    assert second["nodeResults"]["claim"]["data"]["conflict"] is True
    assert second["nodeResults"]["claim"]["data"]["currentValue"] == 1
    assert second["nodeResults"]["clear"] == {"skipped": True}
    values = dict(WorkflowState.objects.filter(workflow_id=workflow_id).values_list("key", "value"))
    assert values == {"runs": 2, "lock": 1, "lost-at": 1}
