"""A secret stands only where it leaves the run (DESIGN.md §13): an HTTP Request's URL, headers and
body. Anywhere else the validator refuses it at every save, and the runner at run time before the
secret is read, with SECRET_NOT_ALLOWED_HERE: so no function of a secret (``lower(…)``, a key built
from it, a comparison) is ever computed inside a run, where redaction of the exact value cannot
follow it (issue 39, item 2)."""

from __future__ import annotations

import json

import pytest

from keeperstate.engine.validation import validate_graph
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.store import secret_put
from keeperstate.secrets.vault import SecretVault
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow, WorkflowVersion
from tests.api.conftest import token_client
from tests.egress.test_http_request import chain
from tests.factories import make_workflow
from tests.security.mcp_in_process import call_tool, token_of

pytestmark = pytest.mark.django_db

VALUE = "Sk-Live-7E3C1D9B2A"
SECRET = "<<@__secrets:Secrets.API_KEY>>"
CODE = "SECRET_NOT_ALLOWED_HERE"

# The probe of issue 39: the secret lower-cased by Set Fields, then stored.
LOWERED = chain(
    ("fields", "Fields", {"actionType": "Set Fields", "fields": f"auth = lower({SECRET})"}),
    ("save", "Save", {"actionType": "State Set", "key": "k", "value": "<<@fields:Fields.auth>>"}),
)


@pytest.fixture
def api_key(org):
    return secret_put(organization=org, name="API_KEY", value=VALUE)[0]


@pytest.fixture
def never_read(monkeypatch):
    """Fails the test if any secret's value is read."""
    def read(self, name):
        raise AssertionError(f"the secret {name} was read")

    monkeypatch.setattr(SecretVault, "value", read)


def findings(nodes, edges):
    return {(f.node_id, f.field, f.code) for f in validate_graph(nodes, edges).errors}


PLACES = [
    ("Condition", "condition", {"condition": f'lower({SECRET}) == "sk"'}),
    ("Set Fields", "fields", {"fields": f"auth = upper({SECRET})"}),
    ("Set Fields", "fields", {"fields": [{"name": "n", "expression": f"length({SECRET})"}]}),
    ("For Each", "items", {"items": f"range(1, length({SECRET}))"}),
    ("State Set", "key", {"key": f"seen:{SECRET}", "value": 1}),
    ("State Set", "value", {"key": "k", "value": SECRET}),
    ("State Get", "key", {"key": SECRET}),
    ("State Increment", "by", {"key": "k", "by": SECRET}),
    ("State Delete", "key", {"key": SECRET}),
    ("HTTP Request", "query", {"url": "https://api.example.com/", "query": {"key": SECRET}}),
    ("HTTP Request", "note", {"url": "https://api.example.com/", "note": SECRET}),
    ("HTTP Request", "extra", {"url": "https://api.example.com/", "extra": {SECRET: 1}}),
]


@pytest.mark.parametrize(("action", "field", "config"), PLACES, ids=[f"{a}.{f}" for a, f, _ in PLACES])
def test_the_validator_refuses_a_secret_outside_an_egress_field(action, field, config):
    nodes, edges = chain(("a", "A", {"actionType": action, **config}))

    assert ("a", field, CODE) in findings(nodes, edges)


def test_the_validator_refuses_a_secret_in_a_label_the_trigger_or_an_edge():
    nodes, edges = chain(("a", "A", {"actionType": "State Get", "key": "k"}))
    nodes[0]["data"]["config"]["sampleInput"] = {"token": SECRET}
    nodes[1]["data"]["label"] = f"Get {SECRET}"
    edges[0]["id"] = SECRET

    found = findings(nodes, edges)

    assert {("trigger", "sampleInput", CODE), ("a", "label", CODE), (None, None, CODE)} <= found


def test_the_egress_fields_take_a_secret():
    nodes, edges = chain(("call", "Call", {
        "actionType": "HTTP Request", "method": "POST", "url": f"https://api.example.com/v1?key={SECRET}",
        "headers": {"Authorization": f"Bearer {SECRET}"}, "body": f'{{"token": "{SECRET}"}}'}))

    assert validate_graph(nodes, edges).valid


def test_the_issue_probe_is_refused_by_the_api_on_save_and_nothing_is_stored(api_key, user, org):
    nodes, edges = LOWERED
    api = token_client(user)

    response = api.post("/api/workflows/", {"name": "Leak", "nodes": nodes, "edges": edges}, format="json")

    assert (response.status_code, response.json()["code"]) == (400, "WORKFLOW_INVALID")
    assert (response.json()["details"]["errors"][0]["code"], response.json()["details"]["errors"][0]["field"]) == (
        CODE, "fields")
    assert not Workflow.objects.exists()


@pytest.mark.parametrize("way", ["put", "patch", "import", "validate", "name"])
def test_every_api_way_in_refuses_it(api_key, user, org, monitor, way):
    nodes, edges = LOWERED
    api = token_client(user)
    before = (monitor.name, monitor.nodes, monitor.edges)

    if way == "put":
        response = api.put(f"/api/workflows/{monitor.id}/", {"name": "M", "nodes": nodes, "edges": edges},
                           format="json")
    elif way == "patch":
        response = api.patch(f"/api/workflows/{monitor.id}/", {"nodes": nodes, "edges": edges}, format="json")
    elif way == "import":
        response = api.post("/api/workflows/import/", {"name": "Leak", "nodes": nodes, "edges": edges},
                            format="json")
    elif way == "validate":
        response = api.post("/api/workflows/validate/", {"nodes": nodes, "edges": edges}, format="json")
    else:
        response = api.patch(f"/api/workflows/{monitor.id}/", {"name": f"Monitor {SECRET}"}, format="json")

    body = response.json()
    if way == "validate":
        assert body["valid"] is False
        assert body["errors"][0]["code"] == CODE
    elif way == "name":
        assert (response.status_code, body["code"], body["field"]) == (400, CODE, "name")
    else:
        assert (response.status_code, body["details"]["errors"][0]["code"]) == (400, CODE)
    monitor.refresh_from_db()
    assert (monitor.name, monitor.nodes, monitor.edges) == before
    assert Workflow.objects.count() == 1


def test_restoring_a_version_kept_before_the_rule_is_refused(api_key, user, monitor):
    nodes, edges = LOWERED
    WorkflowVersion.objects.create(workflow=monitor, number=7, name="Leak", nodes=nodes, edges=edges, changes={},
                                   summary="kept before the rule")
    api = token_client(user)

    response = api.post(f"/api/workflows/{monitor.id}/versions/7/restore/")

    assert (response.status_code, response.json()["details"]["errors"][0]["code"]) == (400, CODE)


@pytest.mark.parametrize("tool", ["create_workflow", "update_workflow", "validate_workflow"])
def test_the_mcp_tools_refuse_it(api_key, user, monitor, tool):
    nodes, edges = LOWERED
    arguments = {"nodes": nodes, "edges": edges}
    if tool == "create_workflow":
        arguments["name"] = "Leak"
    if tool == "update_workflow":
        arguments["workflowId"] = str(monitor.id)
    answer = call_tool(token_of(user), tool, arguments)["answer"]

    report = answer if tool == "validate_workflow" else answer["details"]
    assert report["errors"][0]["code"] == CODE
    assert Workflow.objects.count() == 1


def test_a_stored_graph_computing_with_a_secret_fails_at_run_before_the_secret_is_read(api_key, org, user,
                                                                                     never_read):
    # given the probe stored by a path that skips validation (a graph saved before the rule)
    nodes, edges = LOWERED
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["fields"]["code"] == CODE
    assert execution.node_results["fields"]["error"].count("<<@__secrets:Secrets.NAME>>") == 1
    assert not WorkflowState.objects.exists()
    assert VALUE.lower() not in json.dumps(execution.node_results)


@pytest.mark.parametrize(("action", "field", "config"), PLACES, ids=[f"{a}.{f}" for a, f, _ in PLACES])
def test_the_runner_refuses_it_in_every_place(api_key, org, user, never_read, action, field, config):
    nodes, edges = chain(("a", "A", {"actionType": action, **config}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["a"]["code"] == CODE
    assert not WorkflowState.objects.exists()


def test_a_direct_node_execution_refuses_it(user):
    api = token_client(user)

    response = api.post("/api/execute/node/", {"actionType": "Set Fields", "config": {
        "fields": f"a = lower({SECRET})"}, "input": {}}, format="json")

    assert response.json()["code"] == CODE
