"""The MCP spells the API's workflow and execution JSON itself (adapters do not import each other):
each shape equals the API's answer for the same object, for runs that succeed and fail."""

from __future__ import annotations

import pytest

from keeperstate.executions.service import run_workflow
from keeperstate.mcp.shapes import execution_json, workflow_json, workflow_summary
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    return token_client(user)


def test_workflow_json_is_the_apis(api, monitor):
    assert workflow_json(monitor) == api.get(f"/api/workflows/{monitor.id}/").json()


def test_workflow_summary_is_the_apis_list_item_cut_to_the_design(api, monitor):
    listed = api.get("/api/workflows/").json()["results"][0]

    assert workflow_summary(monitor) == {k: listed[k] for k in ("id", "name", "active", "nextRunAt")}


@pytest.mark.parametrize("run_input", [{"block": 5}, {"block": "not a number"}])
def test_execution_json_is_the_apis(api, monitor, run_input, user):
    execution = run_workflow(monitor, run_input, user=user)

    assert execution_json(execution) == api.get(f"/api/executions/{execution.id}/").json()
