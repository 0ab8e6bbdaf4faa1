"""One JSON shape per resource, defined in its domain (keeperstate.workflows.shapes,
keeperstate.executions.shapes, keeperstate.state.shapes) and answered by every adapter: the API's
serializers only describe it for the OpenAPI schema, so each serializer must say what the shape
holds, key for key and value for value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from rest_framework.fields import DateTimeField

from keeperstate.api import serializers as s
from keeperstate.api.state import StateEntryOutput, StateEventOutput, StateIncrementOutput
from keeperstate.core.times import json_time
from keeperstate.executions.service import run_workflow
from keeperstate.state.clients import key_entry, key_history
from keeperstate.state.shapes import increment_json
from keeperstate.state.store import StateScope, state_delete, state_increment, state_set
from keeperstate.workflows.shapes import workflow_brief_json, workflow_json, workflow_summary_json

pytestmark = pytest.mark.django_db


def test_workflow_json_is_what_its_schema_says_and_what_the_api_answers(api, monitor):
    assert workflow_json(monitor) == s.WorkflowOutput(monitor).data
    assert workflow_json(monitor) == api.get(f"/api/workflows/{monitor.id}/").json()


def test_workflow_summary_is_what_its_schema_says_and_the_apis_list_item(api, monitor):
    listed = api.get("/api/workflows/").json()["results"][0]

    assert workflow_summary_json(monitor) == s.WorkflowSummaryOutput(monitor).data == listed


def test_workflow_brief_is_the_apis_list_item_cut_to_the_design(api, monitor):
    listed = api.get("/api/workflows/").json()["results"][0]

    assert workflow_brief_json(monitor) == {k: listed[k] for k in ("id", "name", "active", "nextRunAt")}


@pytest.mark.parametrize("run_input", [{"block": 5}, {"block": "not a number"}])
def test_execution_json_is_what_its_schema_says_and_what_the_api_answers(api, monitor, run_input, user):
    from keeperstate.executions.shapes import execution_json

    execution = run_workflow(monitor, run_input, user=user)

    assert execution_json(execution) == dict(s.ExecutionOutput(execution).data)
    assert execution_json(execution) == api.get(f"/api/executions/{execution.id}/").json()


def test_state_entry_and_event_are_what_their_schemas_say(monitor):
    scope = StateScope(organization_id=monitor.organization_id, workflow_id=monitor.id)
    state_set(scope=scope, key="cursor", value={"block": 1}, ttl=60)
    state_delete(scope=scope, key="cursor")
    state_set(scope=scope, key="cursor", value=2)

    entry = key_entry(scope=scope, key="cursor")
    events = key_history(scope=scope, key="cursor")

    assert entry is not None
    assert set(entry) == set(StateEntryOutput().fields)
    assert {tuple(event) for event in events} == {tuple(StateEventOutput().fields)}


def test_an_increments_answer_is_what_its_schema_says(monitor):
    scope = StateScope(organization_id=monitor.organization_id, workflow_id=monitor.id)

    answer = increment_json(state_increment(scope=scope, key="hits", by=2))

    assert answer == dict(StateIncrementOutput(answer).data)
    assert set(answer) == set(StateIncrementOutput().fields)


@pytest.mark.parametrize("moment", [
    datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
    datetime(2026, 3, 1, 12, 30, tzinfo=timezone(timedelta(hours=2))),
    None,
])
def test_json_time_writes_what_drf_writes(moment):
    assert json_time(moment) == DateTimeField().to_representation(moment)
