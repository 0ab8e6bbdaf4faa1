"""What one workflow may hold (DESIGN.md §8): at most 500 nodes, 1,000 edges and 1 MB of graph JSON
(WORKFLOW_TOO_LARGE, nothing stored) on every way in, and the newest 100 versions kept (issue 39,
item 8: a 10,000-node import was accepted, every save kept a 2 MB version and the versions list
answered 5 MB)."""

from __future__ import annotations

import pytest

from keeperstate.engine.graph import MAX_EDGES, MAX_GRAPH_BYTES, MAX_NODES
from keeperstate.workflows.models import Workflow, WorkflowVersion
from keeperstate.workflows.services import workflow_update
from keeperstate.workflows.versions import MAX_VERSIONS
from tests.api.conftest import token_client
from tests.factories import make_workflow
from tests.security.mcp_in_process import call_tool, token_of

pytestmark = pytest.mark.django_db


def trigger():
    return {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
            "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual"}}}


def gets(count: int, *, label: str = "Get") -> tuple[list, list]:
    """A trigger and count - 1 State Gets fanned out from it."""
    nodes = [trigger()] + [
        {"id": f"g{i}", "type": "action", "position": {"x": 0, "y": 10 * i},
         "data": {"label": f"{label} {i}", "type": "action", "config": {"actionType": "State Get", "key": "k"}}}
        for i in range(1, count)]
    return nodes, [{"id": f"e{i}", "source": "trigger", "target": f"g{i}"} for i in range(1, count)]


def too_many_nodes():
    return gets(MAX_NODES + 1)


def too_many_edges():
    nodes, _ = gets(2)
    return nodes, [{"id": f"e{i}", "source": "trigger", "target": "g1"} for i in range(MAX_EDGES + 1)]


def too_many_bytes():
    return gets(3, label="x" * (MAX_GRAPH_BYTES // 2))


OVERSIZED = {"nodes": too_many_nodes, "edges": too_many_edges, "bytes": too_many_bytes}


@pytest.fixture
def api(user):
    return token_client(user)


@pytest.mark.parametrize("past", OVERSIZED)
def test_a_graph_past_a_limit_is_refused_on_create_and_nothing_is_stored(api, past):
    nodes, edges = OVERSIZED[past]()

    response = api.post("/api/workflows/", {"name": "Big", "nodes": nodes, "edges": edges}, format="json")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "WORKFLOW_TOO_LARGE"
    assert body["details"]["limits"] == {"nodes": MAX_NODES, "edges": MAX_EDGES, "bytes": MAX_GRAPH_BYTES}
    assert "500 nodes, 1,000 edges" in body["detail"]
    assert not Workflow.objects.exists()
    assert not WorkflowVersion.objects.exists()


def test_a_graph_at_the_limits_is_saved(api):
    nodes, edges = gets(MAX_NODES)

    response = api.post("/api/workflows/", {"name": "Wide", "nodes": nodes, "edges": edges}, format="json")

    assert response.status_code == 201
    assert len(response.json()["nodes"]) == MAX_NODES


@pytest.mark.parametrize("way", ["put", "patch", "import", "validate"])
def test_every_api_way_in_refuses_a_graph_past_the_limits(api, monitor, way):
    nodes, edges = too_many_nodes()
    before = (monitor.nodes, monitor.edges)
    graph = {"nodes": nodes, "edges": edges}

    if way == "put":
        response = api.put(f"/api/workflows/{monitor.id}/", {"name": "Big", **graph}, format="json")
    elif way == "patch":
        response = api.patch(f"/api/workflows/{monitor.id}/", graph, format="json")
    elif way == "import":
        response = api.post("/api/workflows/import/", {"name": "Big", **graph}, format="json")
    else:
        response = api.post("/api/workflows/validate/", graph, format="json")

    if way == "validate":
        assert response.json()["valid"] is False
        assert [e["code"] for e in response.json()["errors"]] == ["WORKFLOW_TOO_LARGE"]
    else:
        assert (response.status_code, response.json()["code"]) == (400, "WORKFLOW_TOO_LARGE")
    monitor.refresh_from_db()
    assert (monitor.nodes, monitor.edges) == before
    assert Workflow.objects.count() == 1


@pytest.mark.parametrize("tool", ["create_workflow", "update_workflow", "validate_workflow"])
def test_the_mcp_tools_refuse_a_graph_past_the_limits(user, monitor, tool):
    nodes, edges = too_many_edges()
    arguments = {"nodes": nodes, "edges": edges}
    if tool == "create_workflow":
        arguments["name"] = "Big"
    if tool == "update_workflow":
        arguments["workflowId"] = str(monitor.id)

    called = call_tool(token_of(user), tool, arguments)

    if tool == "validate_workflow":
        assert [e["code"] for e in called["answer"]["errors"]] == ["WORKFLOW_TOO_LARGE"]
    else:
        assert called["isError"] is True
        assert called["answer"]["code"] == "WORKFLOW_TOO_LARGE"
    assert Workflow.objects.count() == 1


def test_a_graph_stored_before_the_limits_is_neither_duplicated_nor_restored(api, org, user, monitor):
    nodes, edges = too_many_nodes()
    old = make_workflow(org, user=user, name="Old", nodes=nodes, edges=edges)  # stored unvalidated
    WorkflowVersion.objects.create(workflow=monitor, number=9, name="Old", nodes=nodes, edges=edges, changes={},
                                   summary="kept before the limits")

    duplicated = api.post(f"/api/workflows/{old.id}/duplicate/", {}, format="json")
    restored = api.post(f"/api/workflows/{monitor.id}/versions/9/restore/")

    assert (duplicated.status_code, duplicated.json()["code"]) == (400, "WORKFLOW_TOO_LARGE")
    assert (restored.status_code, restored.json()["code"]) == (400, "WORKFLOW_TOO_LARGE")
    assert Workflow.objects.count() == 2
    monitor.refresh_from_db()
    assert len(monitor.nodes) < MAX_NODES


def test_only_the_newest_100_versions_are_kept(api, org, user):
    workflow = make_workflow(org, user=user, name="Saved 0", nodes=gets(2)[0], edges=gets(2)[1])
    saves = MAX_VERSIONS + 5

    for n in range(1, saves + 1):
        workflow_update(workflow, user=user, name=f"Saved {n}")

    numbers = sorted(WorkflowVersion.objects.filter(workflow=workflow).values_list("number", flat=True))
    # the graph before versions (1), then one per save: 106 made, the newest 100 kept
    assert numbers == list(range(saves + 2 - MAX_VERSIONS, saves + 2))
    page = api.get(f"/api/workflows/{workflow.id}/versions/").json()
    assert page["count"] == MAX_VERSIONS
    assert [v["number"] for v in page["results"]] == list(range(saves + 1, saves - 9, -1))  # 10 to a page
