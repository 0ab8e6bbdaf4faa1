"""Workflows: list, create, read, replace and update, for a member of the organization."""

from __future__ import annotations

import pytest

from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow
from tests.api.conftest import token_client
from tests.factories import make_org, make_user, make_workflow

pytestmark = pytest.mark.django_db


def monitor_body(name: str = "Block monitor") -> dict:
    nodes, edges = block_monitor_graph()
    return {"name": name, "nodes": nodes, "edges": edges}


# list


def test_list_shows_own_workflows_without_graphs_newest_first(api, org, user):
    older = make_workflow(org, name="Older", user=user)
    newer = make_workflow(org, name="Newer", user=user)

    body = api.get("/api/workflows/").json()

    assert body["count"] == 2
    assert [w["id"] for w in body["results"]] == [str(newer.id), str(older.id)]
    assert body["results"][0] == {
        "id": str(newer.id),
        "organization": "acme",
        "name": "Newer",
        "description": "",
        "active": False,
        "nextRunAt": None,
        "createdBy": "alice",
        "createdAt": body["results"][0]["createdAt"],
        "updatedAt": body["results"][0]["updatedAt"],
    }


def test_list_leaves_out_soft_deleted_workflows(api, org, workflow):
    gone = make_workflow(org, name="Gone")
    gone.soft_delete()

    names = [w["name"] for w in api.get("/api/workflows/").json()["results"]]

    assert names == [workflow.name]


def test_list_is_paginated(api, org):
    for i in range(3):
        make_workflow(org, name=f"W{i}")

    first = api.get("/api/workflows/?pageSize=2").json()
    second = api.get(first["next"]).json()

    assert first["count"] == 3
    assert len(first["results"]) == 2
    assert len(second["results"]) == 1
    assert second["next"] is None


@pytest.mark.parametrize("page_size", ["0", "-1", "x", "1.5"])
def test_bad_page_size_is_a_field_error(api, page_size):
    response = api.get(f"/api/workflows/?pageSize={page_size}")

    assert response.status_code == 400
    assert response.json() == {"pageSize": ["A whole number of at least 1."]}


def test_page_past_the_end_is_404(api, workflow):
    response = api.get("/api/workflows/?page=9")

    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


# create


def test_create_with_a_name_only_starts_with_a_manual_trigger(api, org):
    response = api.post("/api/workflows/", {"name": "Fresh"})

    assert response.status_code == 201
    body = response.json()
    assert body["organization"] == "acme"
    assert body["createdBy"] == "alice"
    assert [n["type"] for n in body["nodes"]] == ["trigger"]
    assert body["edges"] == []
    assert Workflow.objects.get(pk=body["id"]).organization == org


def test_create_stores_the_graph_as_given(api):
    body = monitor_body()

    response = api.post("/api/workflows/", body)

    assert response.status_code == 201
    stored = Workflow.objects.get(pk=response.json()["id"])
    assert (stored.nodes, stored.edges) == (body["nodes"], body["edges"])


def test_create_without_a_name_is_a_field_error(api):
    response = api.post("/api/workflows/", {"description": "no name"})

    assert response.status_code == 400
    assert response.json() == {"name": ["This field is required."]}


@pytest.mark.parametrize(("name", "message"), [("", "This field may not be blank."), (42, "Not a valid string.")])
def test_create_with_a_bad_name_is_a_field_error(api, name, message):
    response = api.post("/api/workflows/", {"name": name})

    assert response.status_code == 400
    assert response.json() == {"name": [message]}


def test_create_with_an_invalid_graph_answers_the_validation_report_and_saves_nothing(api):
    body = monitor_body("Broken")
    body["nodes"][1]["data"]["config"]["key"] = ""  # State Get without its required key

    response = api.post("/api/workflows/", body)

    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "WORKFLOW_INVALID"
    assert error["details"]["valid"] is False
    assert {"nodeId": "state-get-1", "field": "key", "code": "REQUIRED"}.items() <= error["details"]["errors"][
        0
    ].items()
    assert not Workflow.objects.filter(name="Broken").exists()


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ("not a list", 'Expected a list of items but got type "str".'),
        ([1], 'Expected a dictionary of items but got type "int".'),
        ([{"id": "t", "data": [1]}], "'data' must be a JSON object."),
        ([{"id": "t", "data": {"config": "x"}}], "'data.config' must be a JSON object."),
        ([{"id": "t", "data": {"config": {"triggerType": []}}}], "'data.config.triggerType' must be text."),
        ([{"id": 7}], "'id' must be text."),
    ],
)
def test_create_with_a_malformed_node_is_a_field_error(api, nodes, message):
    response = api.post("/api/workflows/", {"name": "Malformed", "nodes": nodes, "edges": []})

    assert response.status_code == 400
    errors = response.json()["nodes"]
    assert message in (errors if isinstance(errors, list) else errors["0"])


def test_create_with_a_malformed_edge_is_a_field_error(api):
    nodes, _ = block_monitor_graph()

    response = api.post("/api/workflows/", {"name": "x", "nodes": nodes, "edges": [{"source": "trigger", "target": 3}]})

    assert response.status_code == 400
    assert response.json() == {"edges": {"0": ["'target' must be text."]}}


# read, replace, update


def test_read_answers_the_workflow_with_camel_case_keys(api, workflow):
    body = api.get(f"/api/workflows/{workflow.id}/").json()

    assert set(body) == {
        "id",
        "organization",
        "name",
        "description",
        "active",
        "nextRunAt",
        "webhookUrl",
        "webhookSecret",
        "settings",
        "nodes",
        "edges",
        "createdBy",
        "createdAt",
        "updatedAt",
    }
    assert body["id"] == str(workflow.id)


def test_put_replaces_name_description_and_graph(api, workflow):
    body = {**monitor_body("Replaced"), "description": "watches blocks"}

    response = api.put(f"/api/workflows/{workflow.id}/", body)

    assert response.status_code == 200
    workflow.refresh_from_db()
    assert (workflow.name, workflow.description, workflow.nodes) == ("Replaced", "watches blocks", body["nodes"])


def test_put_needs_the_whole_workflow(api, workflow):
    response = api.put(f"/api/workflows/{workflow.id}/", {"name": "Only a name"})

    assert response.status_code == 400
    assert response.json() == {"nodes": ["This field is required."], "edges": ["This field is required."]}


def test_patch_changes_only_what_is_given(api, monitor):
    graph = (monitor.nodes, monitor.edges)

    response = api.patch(f"/api/workflows/{monitor.id}/", {"name": "Renamed"})

    assert response.status_code == 200
    monitor.refresh_from_db()
    assert monitor.name == "Renamed"
    assert (monitor.nodes, monitor.edges) == graph


def test_patch_with_an_invalid_graph_changes_nothing(api, monitor):
    graph = (monitor.nodes, monitor.edges)
    nodes = [*monitor.nodes, {"id": "second-trigger", "type": "trigger", "data": {"config": {}}}]

    response = api.patch(f"/api/workflows/{monitor.id}/", {"name": "Two triggers", "nodes": nodes})

    assert response.status_code == 400
    assert response.json()["code"] == "WORKFLOW_INVALID"
    monitor.refresh_from_db()
    assert (monitor.name, monitor.nodes, monitor.edges) == ("Block monitor", *graph)


# users in two organizations


@pytest.fixture
def two_org_user(org):
    """carol: a member of acme (joined first) and of initech."""
    user = make_user("carol", org)
    second = make_org("initech")
    user.memberships.create(organization=second, role="member")
    return user


def test_create_goes_to_the_first_organization_by_default(two_org_user):
    response = token_client(two_org_user).post("/api/workflows/", {"name": "Default"})

    assert response.json()["organization"] == "acme"


@pytest.mark.parametrize("by", ["slug", "id"])
def test_create_goes_to_the_organization_named(two_org_user, by):
    initech = two_org_user.memberships.get(organization__slug="initech").organization
    ref = initech.slug if by == "slug" else initech.pk

    response = token_client(two_org_user).post("/api/workflows/", {"name": "There", "organization": ref})

    assert response.status_code == 201
    assert Workflow.objects.get(name="There").organization == initech


def test_list_shows_both_organizations_and_filters_by_one(two_org_user, org):
    client = token_client(two_org_user)
    client.post("/api/workflows/", {"name": "In acme"})
    client.post("/api/workflows/", {"name": "In initech", "organization": "initech"})

    everything = {w["name"] for w in client.get("/api/workflows/").json()["results"]}
    only_initech = [w["name"] for w in client.get("/api/workflows/?organization=initech").json()["results"]]
    by_id = [w["name"] for w in client.get(f"/api/workflows/?organization={org.pk}").json()["results"]]

    assert everything == {"In acme", "In initech"}
    assert only_initech == ["In initech"]
    assert by_id == ["In acme"]
