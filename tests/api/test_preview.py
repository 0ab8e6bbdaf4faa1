"""POST /api/workflows/<id>/preview/: a field's value computed as the runner would, against the
last run's data with the unsaved graph's pinned data over it; nothing runs, nothing is written,
no secret is shown."""

from __future__ import annotations

import pytest

from keeperstate.executions.service import run_workflow
from keeperstate.state.store import StateScope, state_get
from tests.executions.graphs import trigger
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


def chain_graph(pin=None):
    """Trigger {"start": 3} → Head (State Increment "head") → Range (For Each)."""
    head = {"id": "head", "type": "action", "position": {"x": 0, "y": 120},
            "data": {"label": "Head", "type": "action", "config": {"actionType": "State Increment", "key": "head"}}}
    if pin is not None:
        head["data"]["pinnedData"] = pin
    nodes = [
        trigger(sampleInput={"start": 3}),
        head,
        {"id": "range", "type": "action", "position": {"x": 0, "y": 240},
         "data": {"label": "Range", "type": "action", "config": {"actionType": "For Each", "items": "range(1, 2)"}}},
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "head"}, {"id": "e2", "source": "head", "target": "range"}]
    return nodes, edges


@pytest.fixture
def chain(org, user):
    nodes, edges = chain_graph()
    return make_workflow(org, name="Chain", user=user, nodes=nodes, edges=edges)


ITEMS = "range(number(<<@trigger:Trigger.start>>), <<@head:Head.value>>)"


def preview(api, workflow, value, *, field="items", node="range", nodes=None, edges=None, **extra):
    graph_nodes, graph_edges = (nodes, edges) if nodes is not None else (workflow.nodes, workflow.edges)
    return api.post(f"/api/workflows/{workflow.id}/preview/",
                    {"nodes": graph_nodes, "edges": graph_edges, "node": node, "field": field, "value": value,
                     **extra}, format="json")


def head(workflow):
    return state_get(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id), key="head")


def test_an_expression_is_evaluated_against_the_last_runs_data(api, chain):
    for _ in range(6):
        last = run_workflow(chain, {"start": 3})  # Head's value is 6 in the last run

    response = preview(api, chain, ITEMS)

    assert response.status_code == 200
    assert response.json() == {"result": {"success": True, "data": [3, 4, 5, 6]}, "sourceExecution": str(last.id)}
    assert head(chain).value == 6  # nothing ran


def test_pinned_data_of_the_unsaved_graph_stands_over_the_run(api, chain):
    run_workflow(chain, {"start": 3})
    nodes, edges = chain_graph(pin={"value": 5, "version": 5, "created": False})

    response = preview(api, chain, ITEMS, nodes=nodes, edges=edges)

    assert response.json()["result"] == {"success": True, "data": [3, 4, 5]}


def test_before_any_run_the_sample_input_and_the_pins_are_read(api, chain):
    nodes, edges = chain_graph(pin={"value": 4, "version": 4, "created": False})

    response = preview(api, chain, ITEMS, nodes=nodes, edges=edges)

    assert response.json() == {"result": {"success": True, "data": [3, 4]}, "sourceExecution": None}


def test_a_value_the_run_would_refuse_answers_the_runs_code(api, chain):
    run_workflow(chain, {"start": 3})

    failed = preview(api, chain, "range(1, <<@head:Head.nope>>)").json()["result"]
    broken = preview(api, chain, "range(1,").json()["result"]

    assert (failed["success"], failed["code"]) == (False, "TEMPLATE_UNRESOLVED")
    assert "no field 'nope'" in failed["error"]
    assert (broken["success"], broken["code"]) == (False, "EXPRESSION_INVALID")


def test_a_text_field_is_interpolated(api, chain):
    run_workflow(chain, {"start": 3})

    response = preview(api, chain, "cursor-<<@trigger:Trigger.start>>", field="key", node="head")

    assert response.json()["result"] == {"success": True, "data": "cursor-3"}


def test_a_secret_is_never_shown(api, chain, org):
    from keeperstate.secrets.store import secret_put

    secret_put(organization=org, name="TOKEN", value="s3cret")
    response = preview(api, chain, "x <<@__secrets:Secrets.TOKEN>>", field="key", node="head")

    assert response.json()["result"]["success"] is False
    assert "s3cret" not in response.content.decode()


def test_only_nodes_that_run_before_are_read(api, chain):
    run_workflow(chain, {"start": 3})

    response = preview(api, chain, "<<@range:Range.count>>", field="key", node="head")

    assert response.json()["result"]["code"] == "TEMPLATE_UNRESOLVED"


def test_another_organizations_workflow_is_404(api, foreign_workflow):
    assert preview(api, foreign_workflow, "1", field="condition", node="condition-1").status_code == 404
