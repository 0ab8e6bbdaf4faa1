"""The OpenAPI schema (drf-spectacular) and its locally served docs page."""

from __future__ import annotations

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db

DESIGN_PATHS = {
    "/api/actions/": {"get"},
    "/api/workflows/": {"get", "post"},
    "/api/workflows/{id}/": {"get", "put", "patch", "delete"},
    "/api/workflows/{id}/duplicate/": {"post"},
    "/api/workflows/{id}/export/": {"get"},
    "/api/workflows/import/": {"post"},
    "/api/workflows/validate/": {"post"},
    "/api/workflows/{id}/execute/": {"post"},
    "/api/workflows/{id}/webhook-secret/": {"post"},
    "/hooks/{workflow_id}/": {"post"},
    "/api/executions/{id}/": {"get"},
    "/api/workflows/{id}/executions/": {"get"},
    "/api/execute/node/": {"post"},
    "/api/secrets/": {"get"},
    "/api/secrets/{name}/": {"put", "delete"},
    # DESIGN.md §13: tokens (named, expiring, revocable) and the audit log
    "/api/tokens/": {"get", "post"},
    "/api/tokens/{prefix}/": {"delete"},
    "/api/audit/": {"get"},
    # DESIGN.md §15: state over HTTP
    "/api/workflows/{id}/state/": {"get"},
    "/api/workflows/{id}/state/{key}/": {"get", "put", "delete"},
    "/api/workflows/{id}/state/{key}/increment/": {"post"},
    "/api/workflows/{id}/state/{key}/history/": {"get"},
    # issue 25: the Runs chart
    "/api/workflows/{id}/executions/stats/": {"get"},
    # issue 23: retry, test step and versions
    "/api/executions/{id}/retry/": {"post"},
    "/api/workflows/{id}/test-step/": {"post"},
    "/api/workflows/{id}/versions/": {"get"},
    "/api/workflows/{id}/versions/{number}/restore/": {"post"},
    # DESIGN.md §8: every JSON the editor reads is the API's (the @ offers, the State panel, its chart,
    # the live preview of a field)
    "/api/workflows/references/": {"post"},
    "/api/workflows/{id}/state-summary/": {"get"},
    "/api/workflows/{id}/state-history/": {"get"},
    "/api/workflows/{id}/state-chart/": {"get"},
    "/api/workflows/{id}/preview/": {"post"},
}


@pytest.fixture
def schema(anonymous) -> dict:
    response = anonymous.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def test_schema_generates_and_validates_without_warnings(tmp_path):
    # --fail-on-warn turns any drf-spectacular warning (an unguessable type, a missing
    # serializer) into an error; --validate checks the result against the OpenAPI 3 spec.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))

    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3.0.3")


def test_schema_has_every_endpoint_of_the_design(schema):
    operations = {
        path: set(methods) & {"get", "post", "put", "patch", "delete"} for path, methods in schema["paths"].items()
    }

    assert operations == DESIGN_PATHS


def test_every_state_operation_has_examples(schema):
    operations = [op for path, ops in schema["paths"].items() if "/state/" in path for op in ops.values()]

    assert len(operations) == 6
    for operation in operations:
        bodies = [*operation.get("requestBody", {}).get("content", {}).values(),
                  *(c for r in operation["responses"].values() for c in r.get("content", {}).values())]
        assert any("examples" in body for body in bodies), operation["operationId"]


def test_a_state_write_documents_its_preconditions_and_412(schema):
    put = schema["paths"]["/api/workflows/{id}/state/{key}/"]["put"]

    assert {p["name"] for p in put["parameters"]} >= {"If-Match", "If-None-Match", "key"}
    assert "412" in put["responses"]


def test_execution_response_is_described_with_its_camel_case_keys(schema):
    responses = schema["paths"]["/api/workflows/{id}/execute/"]["post"]["responses"]
    ref = responses["201"]["content"]["application/json"]["schema"]["$ref"]
    execution = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]

    assert set(execution["properties"]) == {
        "id",
        "workflow",
        "status",
        "trigger",
        "triggeredBy",
        "input",
        "nodeResults",
        "error",
        "errorCode",
        "queuedAt",
        "startedAt",
        "finishedAt",
        "scheduledFor",
        "retryOf",
    }
    assert set(responses) == {"200", "201", "202", "400", "401", "403", "404", "409", "413", "414", "415", "429"}


def test_request_bodies_name_their_input_serializers(schema):
    def request_ref(path: str, method: str) -> str:
        body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        return body["$ref"].rsplit("/", 1)[-1]

    assert request_ref("/api/workflows/", "post") == "WorkflowCreateInput"
    assert request_ref("/api/workflows/{id}/execute/", "post") == "ExecuteInput"
    assert request_ref("/api/execute/node/", "post") == "NodeExecuteInput"
    assert request_ref("/api/workflows/validate/", "post") == "GraphInput"


def test_both_authentication_schemes_are_documented(schema):
    assert set(schema["components"]["securitySchemes"]) == {"tokenAuth", "cookieAuth"}


def test_docs_page_is_served_from_local_static_files(anonymous):
    response = anonymous.get("/api/docs/")

    page = response.content.decode()
    assert response.status_code == 200
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "https://" not in page.split("<body", 1)[0]  # nothing fetched from a CDN
    # No inline script or style (the CSP allows neither): the init script is its own URL.
    assert '<script src="/api/docs/?script="></script>' in page
    assert "<style" not in page
    assert "<script>" not in page
    script = anonymous.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "/api/schema/" in script.content.decode()


def test_every_operation_documents_429_with_retry_after_and_414(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert "Retry-After" in operation["responses"]["429"]["headers"], (method, path)
            assert "414" in operation["responses"], (method, path)


def test_the_idempotency_key_header_is_described_with_its_rule(schema):
    (header,) = [p for p in schema["paths"]["/api/workflows/{id}/execute/"]["post"]["parameters"]
                 if p["name"] == "Idempotency-Key"]

    assert header["schema"]["maxLength"] == 200
    assert header["schema"]["minLength"] == 1
    assert "IDEMPOTENCY_KEY_INVALID" in header["description"]


def test_organization_is_optional_on_create(schema):
    body = schema["components"]["schemas"]["WorkflowCreateInput"]

    assert "organization" in body["properties"]
    assert "organization" not in body.get("required", [])
