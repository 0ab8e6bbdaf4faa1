"""What the OpenAPI schema says matches what the server does (issue 39, item 10, found by
schemathesis): the state GET lists the 400 a key with control characters gets, and every example
the schema gives is one the server accepts from a member."""

from __future__ import annotations

import json

import pytest

from keeperstate.workflows.examples import block_monitor_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(anonymous) -> dict:
    return anonymous.get("/api/schema/?format=json").json()


def examples_in(schema: dict) -> list[tuple[str, str, object]]:
    """(where, the key that holds it, the example) for every example the schema gives, anywhere."""
    found = []

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("example", "examples"):
                    found.append((where, key, value))
                else:
                    walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    walk(schema, "")
    return found


@pytest.mark.parametrize("key", ["%07bell", "a%0Ab", "%E2%80%8Bzero-width"])
def test_the_state_get_of_a_key_with_control_characters_is_the_400_the_schema_lists(api, workflow, schema, key):
    response = api.get(f"/api/workflows/{workflow.id}/state/{key}/")

    assert (response.status_code, response.json()["code"]) == (400, "STATE_INVALID_KEY")
    assert "400" in schema["paths"]["/api/workflows/{id}/state/{key}/"]["get"]["responses"]


def test_no_request_example_names_an_organization(schema):
    # any slug is refused for a caller who is not a member of it (the probe sent "acme" to the demo)
    requests = [(where, value) for where, _, value in examples_in(schema)
                if "/responses/" not in where and "/components/schemas/Paginated" not in where]

    assert not [w for w, value in requests if "organization" in w or "organization" in json.dumps(value)]


def test_every_request_body_example_is_accepted(api, org, user, schema):
    sent = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            for name, example in content.get("examples", {}).items():
                if example.get("value") is None:
                    continue
                nodes, edges = block_monitor_graph()
                workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
                url = path.replace("{id}", str(workflow.id)).replace("{key}", "cursor")
                response = api.generic(method.upper(), url, json.dumps(example["value"]),
                                       content_type="application/json")
                sent.append((method, path, name))
                assert response.status_code < 400, (method, path, name, response.content[:300])

    assert {(m, p) for m, p, _ in sent} >= {("post", "/api/workflows/"), ("put", "/api/workflows/{id}/"),
                                             ("patch", "/api/workflows/{id}/"), ("post", "/api/workflows/import/"),
                                             ("post", "/api/workflows/validate/")}


def test_the_validate_example_is_a_valid_graph(api, schema):
    example = schema["paths"]["/api/workflows/validate/"]["post"]["requestBody"]["content"]["application/json"][
        "examples"]

    [(_, body)] = example.items()
    assert api.post("/api/workflows/validate/", body["value"], format="json").json()["valid"] is True
