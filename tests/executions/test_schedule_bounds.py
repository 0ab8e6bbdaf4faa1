"""A Schedule's interval is bounded (DESIGN.md §11: at most 31,536,000 seconds, 365 days), checked at
save on every way in; a graph stored before the bound never makes activation fail (issue 39, item 3:
an interval of 9999999999999 was saved, then activation answered 500 "year 318857 is out of range")."""

from __future__ import annotations

import pytest

from keeperstate.engine.schedules import MAX_INTERVAL
from keeperstate.workflows.models import Workflow
from tests.api.conftest import token_client
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow
from tests.security.mcp_in_process import call_tool, token_of

pytestmark = pytest.mark.django_db

TOO_LONG = [MAX_INTERVAL + 1, 9999999999999, "315360000000", "9" * 23, 10**30]


@pytest.fixture
def api(user):
    return token_client(user)


def interval_findings(body):
    return [(e["nodeId"], e["field"], e["code"]) for e in body["details"]["errors"]]


@pytest.mark.parametrize("interval", TOO_LONG)
def test_an_interval_past_365_days_is_refused_on_create(api, interval):
    nodes, edges = counter_graph("Schedule", interval=interval)

    response = api.post("/api/workflows/", {"name": "Rare", "nodes": nodes, "edges": edges}, format="json")

    assert response.status_code == 400
    assert interval_findings(response.json()) == [("trigger", "interval", "SCHEDULE_INVALID")]
    assert "31,536,000" in response.json()["details"]["errors"][0]["message"]
    assert not Workflow.objects.exists()


def test_365_days_is_the_longest_interval_and_it_activates(api):
    nodes, edges = counter_graph("Schedule", interval=MAX_INTERVAL)

    created = api.post("/api/workflows/", {"name": "Yearly", "nodes": nodes, "edges": edges}, format="json")
    activated = api.patch(f"/api/workflows/{created.json()['id']}/", {"active": True}, format="json")

    assert created.status_code == 201
    assert (activated.status_code, activated.json()["active"]) == (200, True)
    assert activated.json()["nextRunAt"] is not None


@pytest.mark.parametrize("way", ["patch", "import"])
def test_every_api_way_in_refuses_it(api, org, user, way):
    workflow = make_workflow(org, user=user, name="Counter", nodes=counter_graph("Schedule", interval=60)[0],
                             edges=counter_graph("Schedule", interval=60)[1])
    nodes, edges = counter_graph("Schedule", interval=9999999999999)

    if way == "patch":
        response = api.patch(f"/api/workflows/{workflow.id}/", {"nodes": nodes, "edges": edges, "active": True},
                             format="json")
    else:
        response = api.post("/api/workflows/import/", {"name": "Rare", "nodes": nodes, "edges": edges},
                            format="json")

    assert response.status_code == 400
    assert interval_findings(response.json()) == [("trigger", "interval", "SCHEDULE_INVALID")]
    workflow.refresh_from_db()
    assert workflow.nodes[0]["data"]["config"]["interval"] == 60
    assert not workflow.active


def test_mcp_update_workflow_refuses_it(org, user):
    workflow = make_workflow(org, user=user, name="Counter", nodes=counter_graph("Schedule", interval=60)[0],
                             edges=counter_graph("Schedule", interval=60)[1])
    nodes, edges = counter_graph("Schedule", interval="315360000000")

    called = call_tool(token_of(user), "update_workflow", {"workflowId": str(workflow.id), "nodes": nodes,
                                                           "edges": edges, "active": True})

    assert called["isError"] is True
    assert interval_findings(called["answer"]) == [("trigger", "interval", "SCHEDULE_INVALID")]
    workflow.refresh_from_db()
    assert not workflow.active


@pytest.mark.parametrize("way", ["api", "mcp"])
def test_a_workflow_stored_with_a_huge_interval_activates_without_a_schedule_instead_of_a_500(org, user, way):
    # given a graph stored before the bound (make_workflow skips validation)
    nodes, edges = counter_graph("Schedule", interval=9999999999999)
    workflow = make_workflow(org, user=user, name="Old", nodes=nodes, edges=edges)

    if way == "api":
        response = token_client(user).patch(f"/api/workflows/{workflow.id}/", {"active": True}, format="json")
        assert response.status_code == 200
        assert (response.json()["active"], response.json()["nextRunAt"]) == (True, None)
    else:
        called = call_tool(token_of(user), "update_workflow", {"workflowId": str(workflow.id), "active": True})
        assert called["isError"] is False
        assert called["answer"]["nextRunAt"] is None
