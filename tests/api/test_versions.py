"""Workflow versions: every save of a new name or graph keeps one (who, when, what changed);
Restore saves an earlier one again, as a new version."""

from __future__ import annotations

import copy

import pytest

from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import WorkflowVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def created(api):
    nodes, edges = block_monitor_graph()
    response = api.post("/api/workflows/", {"name": "Monitor", "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.json()
    return response.json()


def versions(api, workflow_id) -> list[dict]:
    response = api.get(f"/api/workflows/{workflow_id}/versions/")
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_creating_keeps_version_one(api, created):
    [first] = versions(api, created["id"])

    assert first["number"] == 1
    assert first["createdBy"] == "alice"
    assert first["summary"] == "First version: 4 node(s)"


def test_each_save_keeps_a_version_with_a_summary_and_diff(api, created):
    nodes = copy.deepcopy(created["nodes"])
    edges = [e for e in created["edges"] if e["id"] != "e3"]
    nodes = [n for n in nodes if n["id"] != "state-set-1"]
    nodes[2]["data"]["label"] = "Is it new?"
    nodes[0]["position"] = {"x": 40, "y": 0}

    api.patch(f"/api/workflows/{created['id']}/", {"nodes": nodes, "edges": edges})
    api.patch(f"/api/workflows/{created['id']}/", {"name": "Monitor 2"})
    api.patch(f"/api/workflows/{created['id']}/", {"name": "Monitor 2"})  # unchanged: no version
    api.patch(f"/api/workflows/{created['id']}/", {"active": True})  # a switch is not a version

    latest, graph, first = versions(api, created["id"])
    assert [latest["number"], graph["number"], first["number"]] == [3, 2, 1]
    assert latest["summary"] == "Renamed to Monitor 2"
    assert graph["summary"] == "Removed State Set; changed Is it new?; moved 1 node(s); 1 connection removed"
    assert graph["changes"]["nodes"]["removed"] == [{"id": "state-set-1", "label": "State Set"}]
    assert graph["changes"]["nodes"]["changed"] == [{"id": nodes[2]["id"], "label": "Is it new?", "fields": [
        {"field": "label", "from": created["nodes"][2]["data"]["label"], "to": "Is it new?"}]}]
    assert graph["changes"]["edges"]["removed"][0]["id"] == "e3"
    assert [n["id"] for n in graph["nodes"]] == [n["id"] for n in nodes]


def test_restore_saves_an_earlier_version_again_as_a_new_one(api, created):
    workflow_id = created["id"]
    api.patch(f"/api/workflows/{workflow_id}/", {"nodes": created["nodes"][:3], "edges": created["edges"][:2]})

    response = api.post(f"/api/workflows/{workflow_id}/versions/1/restore/")

    assert response.status_code == 200, response.json()
    assert [n["id"] for n in response.json()["nodes"]] == [n["id"] for n in created["nodes"]]
    latest = versions(api, workflow_id)[0]
    assert latest["number"] == 3
    assert latest["summary"] == "Restored version 1: Added State Set; 1 connection added"


def test_restoring_a_missing_version_is_404(api, created):
    response = api.post(f"/api/workflows/{created['id']}/versions/9/restore/")

    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


def test_versions_of_another_organization_are_404(api, foreign_workflow):
    assert api.get(f"/api/workflows/{foreign_workflow.id}/versions/").status_code == 404
    assert api.post(f"/api/workflows/{foreign_workflow.id}/versions/1/restore/").status_code == 404


def test_a_refused_save_keeps_no_version(api, created):
    response = api.patch(f"/api/workflows/{created['id']}/", {"nodes": [], "edges": [{"id": "x"}]})

    assert response.status_code == 400
    assert WorkflowVersion.objects.filter(workflow_id=created["id"]).count() == 1


def test_a_workflow_without_versions_keeps_its_graph_before_the_first_save(api, monitor):
    # given a workflow saved by another path (no version yet)
    assert not monitor.versions.exists()

    api.patch(f"/api/workflows/{monitor.id}/", {"name": "Renamed"})

    latest, before = versions(api, monitor.id)
    assert before["summary"] == "The graph before versions were kept: 4 node(s)"
    assert before["name"] == "Block monitor"
    assert latest["summary"] == "Renamed to Renamed"


def test_a_changed_field_is_listed_old_to_new(api, created):
    nodes = copy.deepcopy(created["nodes"])
    nodes[1]["data"]["config"]["key"] = "head"

    api.patch(f"/api/workflows/{created['id']}/", {"nodes": nodes})

    [changed] = versions(api, created["id"])[0]["changes"]["nodes"]["changed"]
    assert changed["fields"] == [{"field": "config.key", "from": "cursor", "to": "head"}]
