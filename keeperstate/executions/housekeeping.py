"""Housekeeping that every worker does every few seconds; each step is safe to run from many
workers at once (UPDATE statements, idempotent). Each step reads which organizations have work
(a read without locks) and then locks and updates organization by organization, so no locking
statement spans the shards of a sharded database (docs/scaling.md).

- A ``running`` execution whose heartbeat stopped was left behind by a dead process (a killed
  worker or web server, a database restart): it is closed as ``interrupted`` with the node
  results it had recorded. It is never run again, since a state write may already have happened.
- Idempotency keys are released after KEEPERSTATE_IDEMPOTENCY_HOURS.
- State history of the keys marked due is trimmed to KEEPERSTATE_HISTORY_PER_KEY events (the
  writes themselves no longer trim, see keeperstate/state/sql.py).
- Expired API tokens are deleted (a request only checks the token it presents, see
  keeperstate/api/authentication.py).
- Jobs of dead workers are handed back to the queue by the worker command itself (it needs
  Procrastinate's async job manager); that never replays a run, see executions.service.run_queued.
- A ``queued`` execution that lost its job is queued again (requeue_orphaned_runs): a run in one
  commit that lost its database left its execution queued, nothing of it kept, while its job
  ended as failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from keeperstate.accounts.models import ApiToken
from keeperstate.core.errors import Code
from keeperstate.executions.lifecycle import sources, transition
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import enqueue
from keeperstate.state.maintenance import trim_history

Status = WorkflowExecution.Status

INTERRUPTED_MESSAGE = (
    "The process running this execution stopped before it finished (it was killed, or lost its "
    "database). It was not run again, because a state write may already have happened: the node "
    "results show what it did. Run the workflow again if that is safe."
)


def _by_organization(executions: QuerySet[WorkflowExecution]) -> Iterator[QuerySet[WorkflowExecution]]:
    """The executions of ``executions``, one queryset per organization that has some."""
    organizations = executions.order_by("organization_id").values_list("organization_id", flat=True).distinct()
    for organization in list(organizations):
        yield executions.filter(organization_id=organization)


def interrupt_stale_runs(now: datetime | None = None) -> int:
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.KEEPERSTATE_RUN_STALE_SECONDS)
    stale = WorkflowExecution.objects.filter(heartbeat_at__lt=cutoff, status__in=sources(Status.INTERRUPTED))
    return sum(transition(runs, Status.INTERRUPTED, finished_at=now, error=INTERRUPTED_MESSAGE,
                          error_code=Code.RUN_INTERRUPTED.name) for runs in _by_organization(stale))


# Queued executions older than the cutoff, of one organization, that no run holds: a run in one
# commit holds its execution's row from its claim to its commit (keeperstate.executions.service),
# so SKIP LOCKED passes over every execution being run. Which of them still has a job waiting is
# read apart, from the queue's table (the coordinator's own: a statement on a sharded table cannot
# join it).
_ORPHANED_SQL = """
SELECT e."id" FROM "workflow_execution" e
 WHERE e."organization_id" = %s AND e."status" = 'queued' AND e."queued_at" < %s
 ORDER BY e."queued_at" LIMIT 100
   FOR UPDATE SKIP LOCKED
"""
_WAITING_SQL = """
SELECT j."args"->>'execution_id' FROM procrastinate_jobs j
 WHERE j."status" = 'todo' AND j."args"->>'execution_id' = ANY(%s)
"""


def requeue_orphaned_runs(now: datetime | None = None) -> int:
    """Queue a job again for each execution still ``queued`` after KEEPERSTATE_RUN_STALE_SECONDS
    with no job waiting and no run holding it: its job was lost (the worker's run in one commit
    lost its database, and Procrastinate ended the job as failed; a job deleted by hand). A
    second job for one execution runs nothing twice: only a queued execution is claimed.
    Organization by organization (docs/scaling.md)."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.KEEPERSTATE_RUN_STALE_SECONDS)
    old = WorkflowExecution.objects.filter(status=Status.QUEUED, queued_at__lt=cutoff)
    organizations = list(old.order_by("organization_id").values_list("organization_id", flat=True).distinct())
    requeued = 0
    for organization_id in organizations:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_ORPHANED_SQL, [organization_id, cutoff])
            held = [str(row[0]) for row in cursor.fetchall()]
            if not held:
                continue
            cursor.execute(_WAITING_SQL, [held])
            waiting = {row[0] for row in cursor.fetchall()}
            for execution_id in held:
                if execution_id not in waiting:
                    enqueue(WorkflowExecution(pk=execution_id, organization_id=organization_id))
                    requeued += 1
    return requeued


def interrupt_runs_of_worker(worker_id: int, now: datetime | None = None) -> int:
    """Close at once the runs a dead worker had started (its Procrastinate worker id, from the
    registry of workers; `serve` calls this when its worker child dies): no need to wait for
    their heartbeat to go stale. Runs it had taken but not started stay queued for another."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT args->>'execution_id' FROM procrastinate_jobs WHERE worker_id = %s AND status = 'doing'",
            [worker_id],
        )
        ids = [row[0] for row in cursor.fetchall() if row[0]]
    if not ids:
        return 0
    running = WorkflowExecution.objects.filter(pk__in=ids, status=Status.RUNNING)
    return sum(transition(runs, Status.INTERRUPTED, finished_at=now or timezone.now(), error=INTERRUPTED_MESSAGE,
                          error_code=Code.RUN_INTERRUPTED.name) for runs in _by_organization(running))


def release_idempotency_keys(now: datetime | None = None) -> int:
    cutoff = (now or timezone.now()) - timedelta(hours=settings.KEEPERSTATE_IDEMPOTENCY_HOURS)
    held = WorkflowExecution.objects.filter(idempotency_key__isnull=False, queued_at__lt=cutoff)
    return sum(keys.update(idempotency_key=None) for keys in _by_organization(held))


def delete_expired_tokens(now: datetime | None = None) -> int:
    deleted, _by_model = ApiToken.objects.filter(expiry__lt=now or timezone.now()).delete()
    return deleted


def housekeeping() -> dict[str, int]:
    return {
        "interrupted": interrupt_stale_runs(),
        "keys_released": release_idempotency_keys(),
        "history_trimmed": trim_history(),
        "tokens_expired": delete_expired_tokens(),
    }
