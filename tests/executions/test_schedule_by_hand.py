"""A workflow with a Schedule trigger run by hand (the editor's Run, the API's execute) runs as a
tick now would: its input gets ``scheduledFor`` and ``firedAt`` where it lacks them
(keeperstate.executions.service.with_schedule_fields)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from keeperstate.demo.graphs import heartbeat_graph
from keeperstate.executions.service import run_now
from keeperstate.state.models import WorkflowState
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def heartbeat(org, user):
    nodes, edges = heartbeat_graph()
    return make_workflow(org, name="Heartbeat", user=user, nodes=nodes, edges=edges)


def test_the_demo_heartbeat_runs_by_hand_through_the_api(client_as_alice, heartbeat):
    # given the editor's Run: the API's execute with an empty body
    before = timezone.now()

    response = client_as_alice.post(f"/api/workflows/{heartbeat.pk}/execute/", {}, content_type="application/json")

    # then it runs to the end, and the tick it remembers is the time of the run
    assert response.status_code == 201, response.json()
    execution = response.json()
    assert execution["status"] == "success", execution["nodeResults"]
    last_beat = WorkflowState.objects.get(workflow=heartbeat, key="lastBeat").value
    assert last_beat == execution["input"]["scheduledFor"]
    tick = datetime.fromisoformat(last_beat)
    assert before - timedelta(seconds=1) <= tick <= timezone.now()


@pytest.mark.parametrize("trigger", ["manual", "api"])
def test_a_hand_run_of_a_schedule_gets_both_fields_as_now(heartbeat, trigger):
    execution = run_now(heartbeat, {}, trigger=trigger).execution

    assert set(execution.input) == {"scheduledFor", "firedAt"}
    assert execution.input["scheduledFor"] == execution.input["firedAt"]
    assert execution.status == "success", execution.node_results
    assert execution.scheduled_for is None  # it is no tick of the schedule


def test_what_the_input_gives_is_kept(heartbeat):
    given = {"scheduledFor": "2026-01-01T00:00:00+00:00", "note": "by hand"}

    execution = run_now(heartbeat, given, trigger="manual").execution

    assert execution.input["scheduledFor"] == "2026-01-01T00:00:00+00:00"
    assert execution.input["note"] == "by hand"
    assert "firedAt" in execution.input
    assert WorkflowState.objects.get(workflow=heartbeat, key="lastBeat").value == "2026-01-01T00:00:00+00:00"


def test_other_triggers_inputs_are_left_alone(org, user):
    nodes, edges = counter_graph("Manual")
    workflow = make_workflow(org, name="Counter", user=user, nodes=nodes, edges=edges)

    execution = run_now(workflow, {}, trigger="manual").execution

    assert execution.input == {}


def test_a_webhook_run_is_not_given_schedule_fields(heartbeat):
    # only a person's runs stand in for a tick; a webhook's input is its body, exactly
    execution = run_now(heartbeat, {"a": 1}, trigger="webhook").execution

    assert execution.input == {"a": 1}
