"""The executions list of a workflow: paging and filters by status, trigger and time range."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from keeperstate.executions.models import WorkflowExecution

pytestmark = pytest.mark.django_db

Status, Trigger = WorkflowExecution.Status, WorkflowExecution.Trigger


@pytest.fixture
def runs(monitor):
    """Five runs a minute apart, oldest first: statuses and triggers mixed."""
    now = timezone.now()
    kinds = [(Status.SUCCESS, Trigger.SCHEDULE), (Status.ERROR, Trigger.SCHEDULE), (Status.SUCCESS, Trigger.API),
             (Status.INTERRUPTED, Trigger.WEBHOOK), (Status.ERROR, Trigger.MANUAL)]
    return [
        WorkflowExecution.objects.create(workflow=monitor, status=status, trigger=trigger,
                                         queued_at=now - timedelta(minutes=5 - i))
        for i, (status, trigger) in enumerate(kinds)
    ]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [e["id"] for e in response.json()["results"]]


def url(workflow) -> str:
    return f"/api/workflows/{workflow.id}/executions/"


def test_filter_by_status(api, monitor, runs):
    assert ids(api.get(url(monitor), {"status": "error"})) == [str(runs[4].id), str(runs[1].id)]


def test_filter_by_trigger(api, monitor, runs):
    assert ids(api.get(url(monitor), {"trigger": "schedule"})) == [str(runs[1].id), str(runs[0].id)]


def test_filter_by_time_range_since_inclusive_until_exclusive(api, monitor, runs):
    response = api.get(url(monitor), {"since": runs[1].queued_at.isoformat(), "until": runs[3].queued_at.isoformat()})

    assert ids(response) == [str(runs[2].id), str(runs[1].id)]


def test_filters_combine_and_page(api, monitor, runs):
    first = api.get(url(monitor), {"status": "success", "pageSize": 1}).json()

    assert first["count"] == 2
    assert [e["id"] for e in first["results"]] == [str(runs[2].id)]
    assert [e["id"] for e in api.get(first["next"]).json()["results"]] == [str(runs[0].id)]


@pytest.mark.parametrize(("query", "field"), [
    ({"status": "done"}, "status"),
    ({"trigger": "cron"}, "trigger"),
    ({"since": "yesterday"}, "since"),
    ({"until": ""}, "until"),  # an empty value is a mistake, not "no filter"
    ({"status": ""}, "status"),
    ({"since": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"}, "until"),
])
def test_a_bad_filter_is_a_field_error(api, monitor, query, field):
    response = api.get(url(monitor), query)

    assert response.status_code == 400
    assert field in response.json()


def test_the_filters_are_in_the_schema(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()
    parameters = {p["name"] for p in schema["paths"]["/api/workflows/{id}/executions/"]["get"]["parameters"]}

    assert {"status", "trigger", "since", "until", "page", "pageSize"} <= parameters
