"""POST /api/workflows/references/: the editor's @ autocomplete for the unsaved graph it holds."""

from __future__ import annotations

import json

import pytest

from keeperstate.engine.offers import reference_options
from keeperstate.workflows.examples import block_monitor_graph

URL = "/api/workflows/references/"


def post(client, body, **extra):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(URL, data=data, content_type="application/json", **extra)


@pytest.mark.django_db
def test_endpoint_answers_the_metadata_for_the_unsaved_graph(client_as_alice):
    nodes, edges = block_monitor_graph()

    response = post(client_as_alice, {"nodes": nodes, "edges": edges, "nodeId": "state-set-1"})

    assert response.status_code == 200
    assert response.json() == reference_options(nodes, edges, "state-set-1")


@pytest.mark.django_db
def test_endpoint_answers_a_cycle_with_a_clear_400(client_as_alice):
    nodes, edges = block_monitor_graph()
    edges.append({"id": "loop", "source": "state-set-1", "target": "state-get-1"})

    response = post(client_as_alice, {"nodes": nodes, "edges": edges, "nodeId": "state-set-1"})

    assert response.status_code == 400
    assert response.json()["code"] == "CYCLE"
    assert "cycle" in response.json()["detail"]


@pytest.mark.django_db
def test_endpoint_answers_a_missing_node_with_a_clear_400(client_as_alice):
    nodes, edges = block_monitor_graph()
    edges.append({"id": "dangling", "source": "deleted-node", "target": "state-set-1"})

    response = post(client_as_alice, {"nodes": nodes, "edges": edges, "nodeId": "state-set-1"})

    assert response.status_code == 400
    assert response.json()["code"] == "WORKFLOW_INVALID"
    assert "deleted-node" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("body", ["not json", "[1, 2]", {"nodes": 3, "edges": [], "nodeId": "x"}, {}])
def test_endpoint_answers_bad_bodies_with_a_400(client_as_alice, body):
    response = post(client_as_alice, body)

    assert response.status_code == 400
    assert set(response.json()) >= {"code", "detail"}


@pytest.mark.django_db
def test_endpoint_requires_login(client):
    nodes, edges = block_monitor_graph()

    response = post(client, {"nodes": nodes, "edges": edges, "nodeId": "state-set-1"})

    assert response.status_code == 401
    assert response.json()["code"] == "NOT_AUTHENTICATED"


@pytest.mark.django_db
def test_endpoint_enforces_csrf(csrf_client):
    nodes, edges = block_monitor_graph()
    body = {"nodes": nodes, "edges": edges, "nodeId": "state-set-1"}

    refused = post(csrf_client, body)
    csrf_client.get("/builder/")  # a page sets the csrftoken cookie, as in the browser
    accepted = post(csrf_client, body, HTTP_X_CSRFTOKEN=csrf_client.cookies["csrftoken"].value)

    assert refused.status_code == 403
    assert accepted.status_code == 200


@pytest.mark.django_db
def test_endpoint_only_answers_post(client_as_alice):
    assert client_as_alice.get(URL).status_code == 405
