"""A property-based run of the whole API against its own OpenAPI schema (schemathesis).

Every operation gets generated requests, valid and invalid, sent with a member's token
through Django's WSGI handler to the real test database. The run fails on any 5xx, on a
response that does not match the schema, on an undocumented status code, and on a request
the schema forbids but the API accepted. It skips one check: "schema-valid request
rejected", because a schema cannot say what makes a graph valid (a reference to a node that
does not run first is well-formed JSON and still a 400 WORKFLOW_INVALID).

Bounded and deterministic: a fixed seed, schemathesis's coverage phase (boundary values and
wrong types of every declared field, enumerated, not drawn) and five derandomized Hypothesis
examples per operation; a few seconds for the whole API.
"""

from __future__ import annotations

import json
import uuid

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from keeperstate.accounts.tokens import create_token
from keeperstate.executions.service import run_workflow
from keeperstate.workflows.examples import block_monitor_graph
from tests.factories import make_workflow

RAW_SCHEMA = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": 4,
        # Unknown query parameters are ignored, as in most HTTP APIs; don't count them as bugs.
        "generation": {"deterministic": True, "allow-extra-parameters": False},
    }
)
schema = schemathesis.openapi.from_dict(RAW_SCHEMA, config=CONFIG)
schema.app = WSGIHandler()


@pytest.fixture
def wsgi_keeps_test_connection():
    """The WSGI handler closes the database connection after each request, and with it the
    test's transaction; Django's test client disconnects the same signal for the same reason."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


@pytest.mark.django_db
@pytest.mark.usefixtures("wsgi_keeps_test_connection")
@schema.parametrize()
@settings(max_examples=5, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_breaks_its_schema(case, org, user):
    _, token = create_token(user, name="schemathesis")
    path_id = (case.path_parameters or {}).get("id")
    if _is_uuid(path_id):
        # A random UUID would only ever reach the 404 path: aim well-formed ids at a fresh
        # monitor workflow of the user's organization (or at an execution of it).
        nodes, edges = block_monitor_graph()
        workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
        target = run_workflow(workflow, {"block": 1}) if case.path.startswith("/api/executions/") else workflow
        case.path_parameters["id"] = str(target.id)

    case.call_and_validate(headers={"Authorization": f"Token {token}"}, excluded_checks=[positive_data_acceptance])
