"""Runs at a glance: a workflow's finished runs per time bucket, by status, with the duration
percentiles of each bucket (the editor's Runs chart, GET /api/workflows/<id>/executions/stats/).

One aggregate statement computes the whole chart in the database: ``date_bin`` puts each run in
its bucket, ``count(*) FILTER`` counts each status and ``percentile_cont`` gives p50 and p95, over
the workflow's rows as an index reaches them (``execution_workflow_queued`` (workflow, queued_at)
or the foreign key's; tests/api/test_execution_stats_scale.py: flat as other workflows add runs). Python only lays the
rows onto the buckets, so a bucket without runs is there too, with zeros; no loop sees a run.

Runs are placed by ``queued_at``, the one time every run has (a skipped run never starts); a
duration is ``finished_at - started_at`` of a run that started and finished.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from keeperstate.core.buckets import EPOCH, Range, window
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow

STATUSES = ("success", "error", "interrupted", "skipped")

STATS_SQL = f"""
SELECT e.workflow_id, date_bin(%(step)s, e.queued_at, %(origin)s) AS bucket,
       {", ".join(f"count(*) FILTER (WHERE e.status = '{s}')" for s in STATUSES)},
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.finished_at - e.started_at) * 1000)
           FILTER (WHERE e.started_at IS NOT NULL AND e.finished_at IS NOT NULL),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM e.finished_at - e.started_at) * 1000)
           FILTER (WHERE e.started_at IS NOT NULL AND e.finished_at IS NOT NULL)
  FROM {WorkflowExecution._meta.db_table} e
 WHERE e.organization_id = ANY(%(organizations)s) AND e.workflow_id = ANY(%(workflows)s)
   AND e.queued_at >= %(start)s AND e.queued_at < %(end)s
   AND e.status IN ({", ".join(f"'{s}'" for s in STATUSES)})
 GROUP BY 1, 2
"""


def _ms(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)


def run_stats(*, workflow: Workflow, span: Range, now: datetime | None = None) -> dict[str, Any]:
    """The chart of a workflow's runs over ``span``: each bucket's runs by status and its duration
    p50/p95 in milliseconds (null for a bucket with no timed run), oldest bucket first."""
    return run_stats_of(workflows=[workflow], span=span, now=now)[workflow.id]


def run_stats_of(*, workflows: list[Workflow], span: Range, now: datetime | None = None) -> dict[Any, dict[str, Any]]:
    """``run_stats`` of several workflows (the small charts of the workflow list) in the same one
    statement, keyed by workflow id. The caller has checked that the workflows are the user's.
    The organizations go in too: runs are kept by organization (the shard key, docs/scaling.md)."""
    start, end = window(span, now)
    workflow_ids = [w.id for w in workflows]
    params: dict[str, Any] = {
        "step": span.step, "origin": EPOCH, "workflows": workflow_ids, "start": start, "end": end,
        "organizations": sorted({w.organization_id for w in workflows}),
    }
    rows: dict[Any, dict[datetime, tuple[Any, ...]]] = {workflow_id: {} for workflow_id in workflow_ids}
    if workflow_ids:
        with connection.cursor() as cursor:
            cursor.execute(STATS_SQL, params)
            for workflow_id, bucket, *row in cursor.fetchall():
                rows.setdefault(workflow_id, {})[bucket] = tuple(row)
    return {workflow_id: _chart(rows.get(workflow_id, {}), span, start, end) for workflow_id in workflow_ids}


def _chart(rows: dict[datetime, tuple[Any, ...]], span: Range, start: datetime, end: datetime) -> dict[str, Any]:
    buckets = []
    for index in range(span.buckets):
        at = start + index * span.step
        counts, p50, p95 = (0,) * len(STATUSES), None, None
        if at in rows:
            row = rows[at]
            counts, p50, p95 = tuple(row[: len(STATUSES)]), row[len(STATUSES)], row[len(STATUSES) + 1]
        bucket: dict[str, Any] = {"start": at.isoformat(), "end": (at + span.step).isoformat()}
        bucket.update(zip(STATUSES, counts, strict=True))
        bucket.update(total=sum(counts), p50Ms=_ms(p50), p95Ms=_ms(p95))
        buckets.append(bucket)
    totals = {status: sum(b[status] for b in buckets) for status in STATUSES}
    return {
        "range": span.name,
        "bucketSeconds": int(span.step.total_seconds()),
        "from": start.isoformat(),
        "to": end.isoformat(),
        "statuses": list(STATUSES),
        "totals": {**totals, "total": sum(totals.values())},
        "buckets": buckets,
    }
