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
    # issue 23: retry, test step and versions
    "/api/executions/{id}/retry/": {"post"},
    "/api/workflows/{id}/test-step/": {"post"},
    "/api/workflows/{id}/versions/": {"get"},
    "/api/workflows/{id}/versions/{number}/restore/": {"post"},
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


def test_no_path_reaches_state_by_workflow_id(schema):
    assert not [path for path in schema["paths"] if "state" in path.lower()]


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
    assert set(responses) == {"200", "201", "202", "400", "401", "403", "404", "409", "413", "415"}


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
