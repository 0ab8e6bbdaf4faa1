"""Builder pages and the editor's JSON endpoints: login, organization scope, CSRF, services."""

from __future__ import annotations

import json

import pytest

from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow

pytestmark = pytest.mark.django_db


def post_json(client, url, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def url(workflow, action=""):
    return f"/builder/workflows/{workflow.id}/" + (f"{action}/" if action else "")


# --- pages ------------------------------------------------------------------------------


def test_root_redirects_to_the_builder(client):
    assert client.get("/")["Location"] == "/builder/"


def test_login_page_renders_and_logs_in(client, user):
    page = client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})

    assert page.status_code == 200
    assert b'name="username"' in page.content
    assert response["Location"] == "/builder/"


def test_pages_require_login(client, monitor):
    for path in ("/builder/", url(monitor), "/builder/palette/", "/builder/forms/State%20Get/"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/?next="), path


def test_workflow_list_shows_only_the_users_organizations(client_as_alice, monitor, foreign_workflow):
    page = client_as_alice.get("/builder/").content.decode()

    assert "Block monitor" in page
    assert "Globex monitor" not in page


def test_creating_a_workflow_opens_it_with_a_manual_trigger(client_as_alice, org):
    response = client_as_alice.post("/builder/", {"name": "Block monitor", "organization": org.pk})

    workflow = Workflow.objects.get(name="Block monitor")
    assert response["Location"] == url(workflow)
    assert workflow.organization == org
    assert [n["type"] for n in workflow.nodes] == ["trigger"]


def test_creating_a_workflow_in_another_organization_is_refused(client_as_alice, other_org):
    response = client_as_alice.post("/builder/", {"name": "Sneaky", "organization": other_org.pk})

    assert response.status_code == 400
    assert not Workflow.objects.filter(name="Sneaky").exists()


def test_creating_a_workflow_needs_a_name(client_as_alice, org):
    response = client_as_alice.post("/builder/", {"name": "", "organization": org.pk})

    assert response.status_code == 400
    assert b"This field is required" in response.content


def test_editor_renders_palette_graph_and_catalogue(client_as_alice, monitor):
    response = client_as_alice.get(url(monitor))
    page = response.content.decode()

    assert response.status_code == 200
    assert 'id="workflow-graph"' in page
    assert 'id="builder-catalogue"' in page
    assert 'data-entry-id="State Set"' in page
    assert "csrftoken" in response.cookies


def test_another_organizations_workflow_is_not_found(client_as_alice, foreign_workflow):
    assert client_as_alice.get(url(foreign_workflow)).status_code == 404


def test_a_soft_deleted_workflow_is_not_found(client_as_alice, monitor):
    monitor.soft_delete()

    assert client_as_alice.get(url(monitor)).status_code == 404


# --- save -------------------------------------------------------------------------------


def test_save_stores_the_normalised_graph_and_name(client_as_alice, monitor):
    nodes, edges = monitor.nodes, monitor.edges
    nodes[0]["data"]["config"]["sampleInput"] = '{"block": 100}'
    nodes[3]["data"]["config"]["ttl"] = " 3600 "

    response = post_json(client_as_alice, url(monitor, "save"), {"name": "Monitor v2", "nodes": nodes, "edges": edges})

    assert response.status_code == 200, response.json()
    monitor.refresh_from_db()
    assert monitor.name == "Monitor v2"
    assert monitor.nodes[0]["data"]["config"]["sampleInput"] == {"block": 100}
    assert monitor.nodes[3]["data"]["config"]["ttl"] == 3600
    assert monitor.nodes[3]["data"]["config"]["expectedVersion"] == "<<@state-get-1:State Get.version>>"
    assert response.json()["workflow"]["nodes"] == monitor.nodes


def test_save_refuses_an_invalid_graph_with_findings_at_node_and_field(client_as_alice, monitor):
    nodes = monitor.nodes
    nodes[3]["data"]["config"]["ttl"] = "12abc"
    del nodes[3]["data"]["config"]["key"]

    response = post_json(client_as_alice, url(monitor, "save"), {"nodes": nodes, "edges": monitor.edges})

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "WORKFLOW_INVALID"
    assert {(e["nodeId"], e["field"]) for e in body["report"]["errors"]} == {("state-set-1", "ttl"),
                                                                              ("state-set-1", "key")}
    monitor.refresh_from_db()
    assert "key" in monitor.nodes[3]["data"]["config"]


def test_save_refuses_an_empty_name(client_as_alice, monitor):
    response = post_json(client_as_alice, url(monitor, "save"), {"name": "  "})

    assert response.status_code == 400
    assert response.json()["field"] == "name"


# --- validate ---------------------------------------------------------------------------


def test_validate_reports_a_reference_to_a_deleted_node(client_as_alice, monitor):
    nodes = [n for n in monitor.nodes if n["id"] != "state-get-1"]
    edges = [{"id": "e1", "source": "trigger", "target": "condition-1"},
             {"id": "e3", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"}]

    response = post_json(client_as_alice, url(monitor, "validate"), {"nodes": nodes, "edges": edges})

    assert response.status_code == 200
    errors = response.json()["errors"]
    assert {(e["nodeId"], e["field"], e["code"]) for e in errors} == {
        ("condition-1", "condition", "REFERENCE_MISSING_NODE"),
        ("state-set-1", "expectedVersion", "REFERENCE_MISSING_NODE"),
    }


def test_validate_answers_a_valid_graph(client_as_alice, monitor):
    response = post_json(client_as_alice, url(monitor, "validate"), {"nodes": monitor.nodes, "edges": monitor.edges})

    assert response.json() == {"valid": True, "errors": [], "warnings": []}


# --- run --------------------------------------------------------------------------------


def test_run_twice_moves_the_cursor(client_as_alice, monitor):
    first = post_json(client_as_alice, url(monitor, "run"), {"input": {"block": 100}})
    second = post_json(client_as_alice, url(monitor, "run"), {"input": {"block": 101}})

    assert first.status_code == 200
    assert first.json()["execution"]["nodeResults"]["state-set-1"]["data"]["version"] == 1
    execution = second.json()["execution"]
    assert execution["status"] == "success"
    assert execution["nodeResults"]["state-set-1"]["data"] == {
        "key": "cursor", "version": 2, "created": False, "expiresAt": None,
    }
    cursor = WorkflowState.objects.get(workflow=monitor, key="cursor")
    assert (cursor.value, cursor.version) == (101, 2)


def test_run_reports_a_version_conflict_at_the_node(client_as_alice, monitor):
    nodes = monitor.nodes
    nodes[3]["data"]["config"]["expectedVersion"] = 7
    monitor.nodes = nodes
    monitor.save()

    execution = post_json(client_as_alice, url(monitor, "run"), {"input": {"block": 1}}).json()["execution"]

    assert execution["status"] == "error"
    result = execution["nodeResults"]["state-set-1"]
    assert result["code"] == "STATE_VERSION_CONFLICT"
    assert result["details"] == {"expected": 7, "current": 0}


def test_run_refuses_an_input_that_is_not_an_object(client_as_alice, monitor):
    response = post_json(client_as_alice, url(monitor, "run"), {"input": [1]})

    assert response.status_code == 400
    assert response.json()["code"] == "INPUT_INVALID"


# --- scope, login and CSRF on every JSON endpoint ---------------------------------------


@pytest.mark.parametrize("action", ["save", "validate", "run"])
def test_json_endpoints_hide_another_organizations_workflow(client_as_alice, foreign_workflow, action):
    response = post_json(client_as_alice, url(foreign_workflow, action), {"nodes": [], "edges": [], "input": {}})

    assert response.status_code == 404
    foreign_workflow.refresh_from_db()
    assert foreign_workflow.executions.count() == 0


@pytest.mark.parametrize("action", ["save", "validate", "run"])
def test_json_endpoints_require_login(client, monitor, action):
    response = post_json(client, url(monitor, action), {})

    assert response.status_code == 401


@pytest.mark.parametrize("action", ["save", "validate", "run"])
def test_json_endpoints_enforce_csrf(csrf_client, monitor, action):
    body = {"nodes": monitor.nodes, "edges": monitor.edges, "input": {"block": 1}}

    refused = post_json(csrf_client, url(monitor, action), body)
    csrf_client.get(url(monitor))
    token = csrf_client.cookies["csrftoken"].value
    accepted = post_json(csrf_client, url(monitor, action), body, HTTP_X_CSRFTOKEN=token)

    assert refused.status_code == 403
    assert accepted.status_code == 200


def test_form_post_enforces_csrf(csrf_client):
    response = csrf_client.post("/builder/forms/State%20Get/", {"key": "cursor"})

    assert response.status_code == 403
