"""schemathesis over the API's own OpenAPI schema (the one /api/schema/ serves), every check on.

Every operation gets generated requests, valid and invalid, sent with a member's token through
Django's WSGI handler to the real test database. A case fails on a 5xx, a response that does not
match the schema, an undocumented status code or header, a request the schema forbids that the
API accepted, and a schema-valid request the API refused. The last is the check the schema must
earn: where a refusal depends on what no schema can say — a graph validated beyond its shape
(WORKFLOW_INVALID, described on those operations' 400), or an organization the caller belongs to —
those operations expect 400 among valid answers (OPERATIONS_400 below); every other operation must
accept what its schema allows.

Bounded: a fixed seed, the examples, coverage and fuzzing phases, ``max_examples`` from the
Hypothesis profile (tests/fuzz/conftest.py: ci by default, nightly for long runs).
"""

from __future__ import annotations

import json
import uuid

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from keeperstate.accounts.tokens import create_token
from keeperstate.executions.service import run_workflow
from keeperstate.workflows.examples import block_monitor_graph
from tests.factories import make_workflow
from tests.fuzz.conftest import PROFILE
from tests.fuzz.counts import CASES
from tests.fuzz.schema import RAW_SCHEMA

pytestmark = pytest.mark.fuzz

DEFAULT_EXPECTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
# Operations whose valid-looking bodies are checked beyond the schema (graphs, configs, run inputs
# with U+0000 inside free-form objects, organizations the caller is not a member of, names under the
# text rule: no control, format or separator characters, which no JSON Schema pattern can list
# across Unicode; a run list's `until` earlier than its `since`, a rule across two parameters; the node a test step
# or the @ offers name, which must be a node of the graph; a state key under the key rule; the graph
# a preview is computed in).
OPERATIONS_400 = [
    "POST /api/workflows/", "PUT /api/workflows/{id}/", "PATCH /api/workflows/{id}/",
    "POST /api/workflows/validate/", "POST /api/workflows/import/", "POST /api/execute/node/",
    "POST /api/workflows/{id}/execute/", "PUT /api/secrets/{name}/", "DELETE /api/secrets/{name}/",
    "POST /api/workflows/{id}/test-step/", "POST /api/workflows/{id}/preview/",
    "POST /api/tokens/", "POST /api/workflows/{id}/duplicate/", "GET /api/workflows/{id}/executions/",
    "POST /api/workflows/references/", "GET /api/workflows/{id}/state-history/", "GET /api/workflows/{id}/state-chart/",
]
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": 4,
        # Unknown query parameters are ignored, as in most HTTP APIs; don't count them as bugs.
        "generation": {"deterministic": True, "allow-extra-parameters": False},
        "operations": [
            {"include-name": name,
             "checks": {"positive_data_acceptance": {"expected-statuses": [*DEFAULT_EXPECTED, "400"]}}}
            for name in OPERATIONS_400
        ],
    }
)
schema = schemathesis.openapi.from_dict(RAW_SCHEMA, config=CONFIG)
schema.app = WSGIHandler()
MAX_EXAMPLES = {"ci": 8, "nightly": 500}.get(PROFILE, 8)


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
def test_the_served_schema_is_the_one_fuzzed(client):
    served = client.get("/api/schema/?format=json")

    assert served.status_code == 200
    assert json.loads(served.content) == RAW_SCHEMA


@pytest.mark.django_db
@pytest.mark.usefixtures("wsgi_keeps_test_connection")
@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, derandomize=PROFILE == "ci", deadline=None,
          suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_breaks_its_schema(case, org, user):
    CASES["schemathesis (API operations)"] += 1
    _, token = create_token(user, name="schemathesis")
    path_id = (case.path_parameters or {}).get("id")
    if _is_uuid(path_id):
        # A random UUID would only ever reach the 404 path: aim well-formed ids at a fresh
        # monitor workflow of the user's organization (or at an execution of it).
        nodes, edges = block_monitor_graph()
        workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
        target = run_workflow(workflow, {"block": 1}) if case.path.startswith("/api/executions/") else workflow
        case.path_parameters["id"] = str(target.id)

    case.call_and_validate(headers={"Authorization": f"Token {token}"})
