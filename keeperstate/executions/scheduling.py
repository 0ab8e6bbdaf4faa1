"""Schedules in the database: each workflow's next due tick, and the scheduler's one pass.

Every worker runs the scheduler, so several may look at one due workflow at once. Each pass
finds the organizations with a due workflow (a read, no locks), then, organization by
organization, locks the due workflow rows it takes (``FOR UPDATE SKIP LOCKED``: another scheduler
moves on to the next one; no locking statement spans organizations, docs/scaling.md), and the
unique (organization, workflow, scheduled_for) constraint makes a second execution for one tick
impossible even so. Ticks missed while nothing ran give one run, for the latest of them.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from keeperstate.engine.schedules import Schedule, ScheduleInvalid
from keeperstate.engine.scope import trigger_config
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run, record_skipped
from keeperstate.ratelimits.counters import Throttled
from keeperstate.workflows.models import Workflow

logger = logging.getLogger(__name__)

Status = WorkflowExecution.Status
BATCH = 100


def schedule_of(nodes: Any) -> Schedule | None:
    """The schedule of a graph whose trigger is a valid Schedule trigger, else None."""
    config = trigger_config(nodes)
    if config is None or config.get("triggerType") != "Schedule":
        return None
    try:
        return Schedule.from_config(config)
    except ScheduleInvalid:
        return None


def next_run_at(workflow: Workflow, now: datetime | None = None) -> datetime | None:
    """When the workflow's schedule next fires, or None when it does not run on a schedule."""
    if not workflow.active or workflow.deleted_at is not None:
        return None
    schedule = schedule_of(workflow.nodes)
    return schedule.next_after(now or timezone.now()) if schedule else None


def refresh_schedule(workflow: Workflow) -> None:
    """Recompute and store ``next_run_at`` after the graph or the active flag changed."""
    workflow.next_run_at = next_run_at(workflow)
    _store_next_run(workflow, workflow.next_run_at)


def _store_next_run(workflow: Workflow, at: datetime | None) -> None:
    # By the workflow's key: an UPDATE by id alone goes to every shard of a sharded database.
    Workflow.objects.filter(organization_id=workflow.organization_id, pk=workflow.pk).update(next_run_at=at)


def schedule_due(now: datetime | None = None) -> int:
    """Start the run of every due tick (or record it skipped); returns how many ticks it handled."""
    handled = 0
    moment = now or timezone.now()
    organizations = list(
        _due(moment).order_by("organization_id").values_list("organization_id", flat=True).distinct()
    )
    for organization in organizations:
        while True:
            batch = _take_due(moment, organization)
            handled += batch
            if batch < BATCH:
                break
    return handled


def _due(now: datetime) -> QuerySet[Workflow]:
    return Workflow.objects.alive().filter(active=True, next_run_at__lte=now)


@transaction.atomic
def _take_due(now: datetime, organization: int) -> int:
    due = list(
        _due(now)
        .filter(organization_id=organization)
        .order_by("next_run_at")
        .select_for_update(skip_locked=True)[:BATCH]
    )
    for workflow in due:
        schedule = schedule_of(workflow.nodes)
        if schedule is None:  # the trigger changed under a raw write; stop scheduling it
            _store_next_run(workflow, None)
            continue
        tick = schedule.latest_due(now)
        busy = WorkflowExecution.objects.filter(
            organization_id=workflow.organization_id, workflow=workflow, status__in=[Status.QUEUED, Status.RUNNING]
        ).exists()
        try:
            with transaction.atomic():
                if busy and schedule.overlap == "skip":
                    record_skipped(workflow, tick)
                else:
                    run_input = {"scheduledFor": tick.isoformat(), "firedAt": now.isoformat()}
                    trigger = WorkflowExecution.Trigger.SCHEDULE
                    queue_run(workflow, run_input, trigger=trigger, scheduled_for=tick)
        except IntegrityError:
            logger.info("tick %s of workflow %s already has its execution", tick.isoformat(), workflow.pk)
        except Throttled:
            # The organization is at its runs per minute: this tick is not run (the next one is).
            logger.warning("tick %s of workflow %s not run: organization over its runs per minute",
                           tick.isoformat(), workflow.pk)
        _store_next_run(workflow, schedule.next_after(max(now, tick)))
    return len(due)
