"""An execution's status and the moves between statuses: one table, one way to move.

    queued ──▶ running ──▶ success | error | interrupted
                              interrupted ──▶ success | error
    skipped (a schedule tick not run): created so, never moves

A move is one conditional statement (``status IN`` the statuses it may come from), so two
processes racing to move the same execution cannot both win: only the worker that moves an
execution from queued to running runs it. An execution is created by ``insert`` alone, in a status
it may start in; a run's end (``end``) inserts its row finished when there is none yet (a run in
one commit, keeperstate.executions.service). The one move back out of a final-looking status is deliberate: a run
that housekeeping took for dead (its heartbeat was late) but that was only slow still records its
real outcome when it finishes; it was never replayed.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import connection

from keeperstate.core import transactions
from keeperstate.core.cursors import kept_cursor
from keeperstate.core.rows import Columns, Insert, saved
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow

Status = WorkflowExecution.Status

MOVES: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset({Status.RUNNING}),
    Status.RUNNING: frozenset({Status.SUCCESS, Status.ERROR, Status.INTERRUPTED}),
    Status.INTERRUPTED: frozenset({Status.SUCCESS, Status.ERROR}),
    Status.SUCCESS: frozenset(),
    Status.ERROR: frozenset(),
    Status.SKIPPED: frozenset(),
}
# What a new execution may start as: queued (a worker runs it), running (run now), skipped.
INITIAL = frozenset({Status.QUEUED, Status.RUNNING, Status.SKIPPED})


def sources(to: str) -> list[str]:
    """The statuses an execution may move to ``to`` from."""
    return [status for status, targets in MOVES.items() if to in targets]


def transition(executions: Any, to: str, **fields: Any) -> int:
    """Move the executions of a queryset that may move to ``to`` (MOVES), setting ``fields`` in
    the same UPDATE; the number moved. The others are left as they are."""
    return executions.filter(status__in=sources(to)).update(status=to, **fields)


# A run's record is written by statements written once (keeperstate.core.rows): a queryset's
# UPDATE cost 0.6–0.8 ms of Python per run to compile (measured in process), more than the
# statement. Each names the primary key, (organization_id, id); the values are adapted by the
# fields themselves, as the ORM would adapt them.
_INSERT = Insert(WorkflowExecution)
_NODE_RESULTS = WorkflowExecution._meta.get_field("node_results")
# The end of a run: its row inserted finished (a run in one commit writes it only now), or, where
# the row exists (a run recorded first, a worker's claim, a waited run whose caller stopped
# waiting), moved to its final status as ``transition`` would move it.
_END_SQL = f"""{_INSERT.sql}
ON CONFLICT ("organization_id", "id") DO UPDATE
   SET "status" = EXCLUDED."status", "node_results" = EXCLUDED."node_results", "error" = EXCLUDED."error",
       "error_code" = EXCLUDED."error_code", "finished_at" = EXCLUDED."finished_at"
 WHERE "workflow_execution"."status" = ANY(%s)
"""
_PROGRESS_SQL = """
UPDATE "workflow_execution" SET "node_results" = %(node_results)s, "heartbeat_at" = %(now)s
 WHERE "organization_id" = %(org)s AND "id" = %(id)s AND "status" = %(running)s
"""


def insert(execution: WorkflowExecution) -> None:
    """Write a new execution's row, in one of the INITIAL statuses: the one way an execution is
    created. Raises IntegrityError when its workflow is gone or its tick or Idempotency-Key taken."""
    if execution.status not in INITIAL:
        raise ValueError(f"an execution starts as one of {sorted(INITIAL)}, not {execution.status!r}")
    _INSERT.save(execution)


def end(execution: WorkflowExecution, *, answer_with_commit: bool = False) -> bool | None:
    """Record the end of a run, as the instance holds it (a final status, its node results, error
    and finish time): its row inserted so, or moved there from a status that may move to it
    (MOVES). Whether the row now says so: False when it had moved elsewhere (a final status).
    Raises IntegrityError when the workflow is gone (the row went with it).

    ``answer_with_commit``: the last write of a run's one transaction, whose answer comes with its
    COMMIT (keeperstate.core.transactions); None then, and the commit raises its IntegrityError."""
    if _INSERT.by_orm:
        raise RuntimeError("WorkflowExecution has save receivers: its end cannot be written as one statement")
    cursor = kept_cursor()
    if answer_with_commit:
        transactions.answer_with_commit()
    cursor.execute(_END_SQL, [*_INSERT.values(execution), sources(execution.status)])
    saved(execution)
    return None if answer_with_commit else cursor.rowcount > 0


def record_progress(execution: WorkflowExecution, node_results: dict[str, Any], now: datetime) -> None:
    """A running execution's results so far, and its heartbeat."""
    params = {"node_results": _NODE_RESULTS.get_db_prep_save(node_results, connection), "now": now,
              "org": execution.organization_id, "id": execution.pk, "running": Status.RUNNING}
    kept_cursor().execute(_PROGRESS_SQL, params)


# A worker's claim of a queued execution, and the read of it and its workflow that follows, as
# one statement written once (keeperstate.core.rows): the move of ``transition`` to running,
# returning the row it moved joined to its workflow.
_EXECUTION, _WORKFLOW = Columns(WorkflowExecution, "e"), Columns(Workflow, "w")


def _claim_sql(by_key: str, workflow_key: str) -> str:
    return f"""
WITH e AS (
    UPDATE "workflow_execution" SET "status" = %(to)s, "started_at" = %(now)s, "heartbeat_at" = %(now)s
     WHERE {by_key} AND "status" = ANY(%(sources)s)
 RETURNING *
)
SELECT {_EXECUTION.sql}, {_WORKFLOW.sql}
  FROM e JOIN {_WORKFLOW.table} ON w."organization_id" = {workflow_key} AND w."id" = e."workflow_id"
"""


# By the primary key (organization_id, id), as the job names both, and the workflow by its
# organization too (the CTE's rows are a result on a sharded database, so the join must name the
# organization itself to stay on its shard); by id alone for a job queued before jobs carried the
# organization (the index on id; on docs/scaling.md's fan-out list).
_CLAIM_SQL = _claim_sql('"organization_id" = %(org)s AND "id" = %(id)s', "%(org)s")
CLAIM_BY_ID_SQL = _claim_sql('"id" = %(id)s', 'e."organization_id"')


_BY_KEY = Columns(WorkflowExecution, "e")
# By the unique key (organization, workflow, idempotency key): without the organization, Postgres
# before 18 read every run of the workflow for it.
_BY_KEY_SQL = (f'SELECT {_BY_KEY.sql} FROM {_BY_KEY.table} '
               'WHERE e."organization_id" = %s AND e."workflow_id" = %s AND e."idempotency_key" = %s')


def by_idempotency_key(workflow: Workflow, key: str) -> WorkflowExecution | None:
    """The workflow's execution started with this Idempotency-Key, if any: on a run's path (a
    client's retry), so a statement written once, not a queryset compiled each time."""
    cursor = kept_cursor()
    cursor.execute(_BY_KEY_SQL, [workflow.organization_id, workflow.pk, key])
    row = cursor.fetchone()
    return _BY_KEY.instance(row) if row is not None else None


def claim_to_run(
    execution_id: str | uuid.UUID, now: datetime, *, organization_id: int | None = None
) -> WorkflowExecution | None:
    """Move a queued execution to running (started and beating at ``now``) and return it with its
    workflow; None when it may not move (another worker took it, or it was interrupted)."""
    params: dict[str, Any] = {"to": Status.RUNNING, "now": now, "id": uuid.UUID(str(execution_id)),
                              "org": organization_id, "sources": sources(Status.RUNNING)}
    cursor = kept_cursor()
    cursor.execute(CLAIM_BY_ID_SQL if organization_id is None else _CLAIM_SQL, params)
    row = cursor.fetchone()
    if row is None:
        return None
    execution = _EXECUTION.instance(row[:len(_EXECUTION)])
    execution.workflow = _WORKFLOW.instance(row[len(_EXECUTION):])
    return execution
