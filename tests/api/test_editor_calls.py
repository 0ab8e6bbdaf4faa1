"""The editor's calls, which go through the API with its session (DESIGN.md §9): save, validate
and run answer what the editor needs, scoped, logged in and CSRF-checked like every API write.
(These were the builder's own JSON endpoints before the API became the only JSON interface.)"""

from __future__ import annotations

import json

import pytest

from keeperstate.state.models import WorkflowState

pytestmark = pytest.mark.django_db

VALIDATE = "/api/workflows/validate/"


def send(client, method, url, body, **extra):
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **extra)


def url(workflow, action=""):
    return f"/api/workflows/{workflow.id}/" + (f"{action}/" if action else "")


# The editor's three calls: (method, path of a workflow, body).
CALLS = {
    "save": ("patch", lambda wf: url(wf)),
    "validate": ("post", lambda wf: VALIDATE),
    "run": ("post", lambda wf: url(wf, "execute")),
}


# --- save -------------------------------------------------------------------------------


def test_save_stores_the_normalised_graph_and_name(client_as_alice, monitor):
    nodes, edges = monitor.nodes, monitor.edges
    nodes[0]["data"]["config"]["sampleInput"] = '{"block": 100}'
    nodes[3]["data"]["config"]["ttl"] = " 3600 "

    response = send(client_as_alice, "patch", url(monitor), {"name": "Monitor v2", "nodes": nodes, "edges": edges})

    assert response.status_code == 200, response.json()
    monitor.refresh_from_db()
    assert monitor.name == "Monitor v2"
    assert monitor.nodes[0]["data"]["config"]["sampleInput"] == {"block": 100}
    assert monitor.nodes[3]["data"]["config"]["ttl"] == 3600
    assert monitor.nodes[3]["data"]["config"]["expectedVersion"] == "<<@state-get-1:State Get.version>>"
    assert response.json()["nodes"] == monitor.nodes


def test_save_refuses_an_invalid_graph_with_findings_at_node_and_field(client_as_alice, monitor):
    nodes = monitor.nodes
    nodes[3]["data"]["config"]["ttl"] = "12abc"
    del nodes[3]["data"]["config"]["key"]

    response = send(client_as_alice, "patch", url(monitor), {"nodes": nodes, "edges": monitor.edges})

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "WORKFLOW_INVALID"
    assert {(e["nodeId"], e["field"]) for e in body["details"]["errors"]} == {("state-set-1", "ttl"),
                                                                              ("state-set-1", "key")}
    monitor.refresh_from_db()
    assert "key" in monitor.nodes[3]["data"]["config"]


def test_save_refuses_an_empty_name(client_as_alice, monitor):
    response = send(client_as_alice, "patch", url(monitor), {"name": "  "})

    assert response.status_code == 400
    assert "name" in response.json()


# --- validate ---------------------------------------------------------------------------


def test_validate_reports_a_reference_to_a_deleted_node(client_as_alice, monitor):
    nodes = [n for n in monitor.nodes if n["id"] != "state-get-1"]
    edges = [{"id": "e1", "source": "trigger", "target": "condition-1"},
             {"id": "e3", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"}]

    response = send(client_as_alice, "post", VALIDATE, {"nodes": nodes, "edges": edges})

    assert response.status_code == 200
    errors = response.json()["errors"]
    assert {(e["nodeId"], e["field"], e["code"]) for e in errors} == {
        ("condition-1", "condition", "REFERENCE_MISSING_NODE"),
        ("state-set-1", "expectedVersion", "REFERENCE_MISSING_NODE"),
    }


def test_validate_answers_a_valid_graph(client_as_alice, monitor):
    response = send(client_as_alice, "post", VALIDATE, {"nodes": monitor.nodes, "edges": monitor.edges})

    assert response.json() == {"valid": True, "errors": [], "warnings": []}


# --- run --------------------------------------------------------------------------------


def test_run_twice_moves_the_cursor(client_as_alice, monitor):
    first = send(client_as_alice, "post", url(monitor, "execute"), {"input": {"block": 100}})
    second = send(client_as_alice, "post", url(monitor, "execute"), {"input": {"block": 101}})

    assert first.status_code == 201
    assert first.json()["nodeResults"]["state-set-1"]["data"]["version"] == 1
    execution = second.json()
    assert execution["status"] == "success"
    assert execution["nodeResults"]["state-set-1"]["data"] == {
        "key": "cursor", "version": 2, "created": False, "expiresAt": None,
    }
    cursor = WorkflowState.objects.get(workflow=monitor, key="cursor")
    assert (cursor.value, cursor.version) == (101, 2)


def test_a_run_from_the_editor_is_a_manual_run(client_as_alice, monitor):
    execution = send(client_as_alice, "post", url(monitor, "execute"), {"input": {"block": 1}}).json()

    assert (execution["trigger"], execution["triggeredBy"]) == ("manual", "alice")


def test_run_reports_a_version_conflict_at_the_node(client_as_alice, monitor):
    nodes = monitor.nodes
    nodes[3]["data"]["config"]["expectedVersion"] = 7
    monitor.nodes = nodes
    monitor.save()

    execution = send(client_as_alice, "post", url(monitor, "execute"), {"input": {"block": 1}}).json()

    assert execution["status"] == "error"
    result = execution["nodeResults"]["state-set-1"]
    assert result["code"] == "STATE_VERSION_CONFLICT"
    assert result["details"] == {"expected": 7, "current": 0}


def test_run_refuses_an_input_that_is_not_an_object(client_as_alice, monitor):
    response = send(client_as_alice, "post", url(monitor, "execute"), {"input": [1]})

    assert response.status_code == 400
    assert set(response.json()) == {"input"}  # the API's field error (tests/api/test_execute.py)


# --- scope, login and CSRF on every call ------------------------------------------------


@pytest.mark.parametrize("call", ["save", "run"])
def test_calls_hide_another_organizations_workflow(client_as_alice, foreign_workflow, call):
    method, path = CALLS[call]
    response = send(client_as_alice, method, path(foreign_workflow), {"nodes": [], "edges": [], "input": {}})

    assert response.status_code == 404
    foreign_workflow.refresh_from_db()
    assert foreign_workflow.executions.count() == 0


@pytest.mark.parametrize("call", ["save", "validate", "run"])
def test_calls_require_login(client, monitor, call):
    method, path = CALLS[call]
    response = send(client, method, path(monitor), {})

    assert response.status_code == 401


@pytest.mark.parametrize("call", ["save", "validate", "run"])
def test_calls_enforce_csrf(csrf_client, monitor, call):
    method, path = CALLS[call]
    body = {"nodes": monitor.nodes, "edges": monitor.edges, "input": {"block": 1}}

    refused = send(csrf_client, method, path(monitor), body)
    csrf_client.get(f"/builder/workflows/{monitor.id}/")
    token = csrf_client.cookies["csrftoken"].value
    accepted = send(csrf_client, method, path(monitor), body, HTTP_X_CSRFTOKEN=token)

    assert refused.status_code == 403
    assert accepted.status_code in (200, 201)
