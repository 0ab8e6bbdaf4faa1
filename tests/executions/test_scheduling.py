"""The scheduler's pass, in process: due ticks, catch-up, overlap, the active flag."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.scheduling import schedule_due
from keeperstate.workflows.services import workflow_create, workflow_set_active, workflow_update
from tests.executions.graphs import counter_graph

pytestmark = pytest.mark.django_db

Status = WorkflowExecution.Status


def scheduled(org, user, *, active=True, **config):
    nodes, edges = counter_graph("Schedule", **config)
    return workflow_create(organization=org, user=user, name="Heartbeat", nodes=nodes, edges=edges, active=active)


def test_an_active_scheduled_workflow_knows_its_next_run(org, user):
    workflow = scheduled(org, user, interval=60)

    assert workflow.next_run_at is not None
    assert timezone.now() < workflow.next_run_at <= timezone.now() + timedelta(seconds=60)
    assert workflow.next_run_at.timestamp() % 60 == 0


def test_an_inactive_or_unscheduled_workflow_has_no_next_run(org, user):
    inactive = scheduled(org, user, active=False, interval=60)
    nodes, edges = counter_graph("Manual")
    manual = workflow_create(organization=org, user=user, name="M", nodes=nodes, edges=edges, active=True)

    assert (inactive.next_run_at, manual.next_run_at) == (None, None)


def test_switching_active_and_changing_the_graph_move_the_next_run(org, user):
    workflow = scheduled(org, user, active=False, interval=60)

    workflow_set_active(workflow, True)
    assert workflow.next_run_at is not None

    nodes, edges = counter_graph("Manual")
    workflow_update(workflow, nodes=nodes, edges=edges)
    assert workflow.next_run_at is None

    nodes, edges = counter_graph("Schedule", interval=30)
    workflow_update(workflow, nodes=nodes, edges=edges)
    assert workflow.next_run_at is not None
    workflow_set_active(workflow, False)
    workflow.refresh_from_db()
    assert workflow.next_run_at is None


def test_a_soft_deleted_workflow_stops_its_schedule(org, user):
    workflow = scheduled(org, user, interval=60)

    workflow.soft_delete()

    assert schedule_due(timezone.now() + timedelta(hours=1)) == 0
    workflow.refresh_from_db()
    assert workflow.next_run_at is None


def test_a_due_tick_queues_one_run_with_its_tick_as_input(org, user):
    workflow = scheduled(org, user, interval=60)
    tick = workflow.next_run_at

    assert schedule_due(tick + timedelta(seconds=1)) == 1

    execution = workflow.executions.get()
    assert (execution.status, execution.trigger, execution.scheduled_for) == ("queued", "schedule", tick)
    assert execution.input == {
        "scheduledFor": tick.isoformat(),
        "firedAt": (tick + timedelta(seconds=1)).isoformat(),
    }
    workflow.refresh_from_db()
    assert workflow.next_run_at == tick + timedelta(seconds=60)


def test_a_tick_is_not_run_twice(org, user):
    workflow = scheduled(org, user, interval=60, overlap="allow")
    tick = workflow.next_run_at
    schedule_due(tick)
    # a scheduler that read the old next_run_at (raw write, clock skew) finds the tick taken
    type(workflow).objects.filter(pk=workflow.pk).update(next_run_at=tick)

    schedule_due(tick)

    assert workflow.executions.filter(scheduled_for=tick).count() == 1


def test_missed_ticks_give_one_catch_up_run_not_a_burst(org, user):
    workflow = scheduled(org, user, interval=60, overlap="allow")
    first_missed = workflow.next_run_at
    now = first_missed + timedelta(hours=2, seconds=5)

    schedule_due(now)

    execution = workflow.executions.get()
    assert execution.scheduled_for == first_missed + timedelta(hours=2)
    workflow.refresh_from_db()
    assert workflow.next_run_at == first_missed + timedelta(hours=2, seconds=60)


def test_overlap_skip_records_the_tick_as_skipped_while_a_run_is_going(org, user):
    workflow = scheduled(org, user, interval=60)
    tick = workflow.next_run_at
    schedule_due(tick)  # queued, not yet run: the next tick overlaps it

    schedule_due(tick + timedelta(seconds=60))

    skipped = workflow.executions.get(scheduled_for=tick + timedelta(seconds=60))
    assert (skipped.status, skipped.error_code) == ("skipped", "RUN_SKIPPED")
    assert skipped.finished_at is not None


def test_overlap_allow_runs_side_by_side(org, user):
    workflow = scheduled(org, user, interval=60, overlap="allow")
    tick = workflow.next_run_at
    schedule_due(tick)

    schedule_due(tick + timedelta(seconds=60))

    assert sorted(e.status for e in workflow.executions.all()) == ["queued", "queued"]


def test_cron_schedules_run_at_their_local_time(org, user):
    workflow = scheduled(org, user, cron="30 9 * * *", timezone="Europe/Berlin")
    local = workflow.next_run_at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))

    assert (local.hour, local.minute) == (9, 30)


@pytest.mark.concurrency
@pytest.mark.django_db(transaction=True)
def test_concurrent_schedulers_start_each_tick_once(org, user):
    workflows = [scheduled(org, user, interval=60, overlap="allow") for _ in range(20)]
    ticks = {w.next_run_at for w in workflows}
    now = max(ticks) + timedelta(seconds=1)
    barrier = threading.Barrier(4)
    failures = []

    def scheduler():
        try:
            barrier.wait(timeout=30)
            schedule_due(now)
        except Exception as exc:  # reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=scheduler) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert WorkflowExecution.objects.filter(trigger="schedule").count() == 20
    assert all(w.executions.count() == 1 for w in workflows)


def test_schedule_ticks_are_utc(org, user):
    workflow = scheduled(org, user, interval=3600)

    assert workflow.next_run_at.tzinfo is not None
    assert workflow.next_run_at.astimezone(UTC).minute == 0
    assert isinstance(workflow.next_run_at, datetime)
