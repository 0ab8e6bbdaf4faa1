"""POST /api/workflows/validate/: the validator's report for an unsaved graph."""

from __future__ import annotations

import pytest

from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow

pytestmark = pytest.mark.django_db


def validate(api, nodes, edges) -> dict:
    response = api.post("/api/workflows/validate/", {"nodes": nodes, "edges": edges})
    assert response.status_code == 200, response.json()
    return response.json()


def codes(report: dict) -> list[tuple[str | None, str | None, str]]:
    return [(e["nodeId"], e["field"], e["code"]) for e in report["errors"]]


def test_the_monitor_is_valid(api):
    assert validate(api, *block_monitor_graph()) == {"valid": True, "errors": [], "warnings": []}


def test_validate_saves_nothing(api):
    validate(api, *block_monitor_graph())

    assert not Workflow.objects.exists()


def test_a_missing_required_field_is_reported_on_its_node(api):
    nodes, edges = block_monitor_graph()
    del nodes[3]["data"]["config"]["value"]

    assert codes(validate(api, nodes, edges)) == [("state-set-1", "value", "REQUIRED")]


def test_an_unknown_action_is_reported(api):
    nodes, edges = block_monitor_graph()
    nodes[1]["data"]["config"]["actionType"] = "Teleport"

    assert ("state-get-1", "actionType", "UNKNOWN_ACTION") in codes(validate(api, nodes, edges))


def test_a_reference_to_a_node_that_does_not_run_first_is_reported(api):
    nodes, edges = block_monitor_graph()
    nodes[1]["data"]["config"]["key"] = "<<@state-set-1:State Set.key>>"

    assert ("state-get-1", "key", "REFERENCE_NOT_UPSTREAM") in codes(validate(api, nodes, edges))


def test_a_reference_to_a_missing_node_is_reported(api):
    nodes, edges = block_monitor_graph()
    nodes[3]["data"]["config"]["value"] = "<<@gone-1:Gone.value>>"

    assert ("state-set-1", "value", "REFERENCE_MISSING_NODE") in codes(validate(api, nodes, edges))


def test_a_bad_numeric_field_is_reported(api):
    nodes, edges = block_monitor_graph()
    nodes[3]["data"]["config"]["ttl"] = "soon"

    assert ("state-set-1", "ttl", "STATE_INVALID_TTL") in codes(validate(api, nodes, edges))


def test_a_broken_structure_is_reported_not_refused(api):
    nodes, _ = block_monitor_graph()

    report = validate(api, nodes, [{"id": "e1", "source": "trigger", "target": "nowhere"}])

    assert report["valid"] is False
    assert report["errors"][0]["code"] == "WORKFLOW_INVALID"
    assert "nowhere" in report["errors"][0]["message"]


def test_validate_needs_nodes_and_edges(api):
    response = api.post("/api/workflows/validate/", {"nodes": []})

    assert response.status_code == 400
    assert response.json() == {"edges": ["This field is required."]}
