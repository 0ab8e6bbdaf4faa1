"""Runs at a glance: a workflow's finished runs per time bucket, by status, with the duration
percentiles of each bucket (the editor's Runs chart, GET /api/workflows/<id>/executions/stats/).

One aggregate statement computes the whole chart in the database: ``date_bin`` puts each run in
its bucket, ``count(*) FILTER`` counts each status and ``percentile_cont`` gives p50 and p95, over
the index range ``execution_workflow_queued`` (workflow, queued_at) serves. Python only lays the
rows onto the buckets, so a bucket without runs is there too, with zeros; no loop sees a run.

Runs are placed by ``queued_at``, the one time every run has (a skipped run never starts); a
duration is ``finished_at - started_at`` of a run that started and finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from keeperstate.core.errors import Code, CodedError
from keeperstate.executions.models import WorkflowExecution

STATUSES = ("success", "error", "interrupted", "skipped")


@dataclass(frozen=True)
class Range:
    """A chart's span: ``buckets`` buckets of ``step`` each, ending at the bucket now is in."""

    name: str
    step: timedelta
    buckets: int


# Enough bars to see a trend, few enough to click one in the side column.
RANGES = {
    "1h": Range("1h", timedelta(minutes=2), 30),
    "24h": Range("24h", timedelta(hours=1), 24),
    "7d": Range("7d", timedelta(hours=6), 28),
}
DEFAULT_RANGE = "24h"
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # the buckets' origin: they start at whole steps

STATS_SQL = f"""
SELECT date_bin(%(step)s, e.queued_at, %(origin)s) AS bucket,
       {", ".join(f"count(*) FILTER (WHERE e.status = '{s}')" for s in STATUSES)},
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM e.finished_at - e.started_at) * 1000)
           FILTER (WHERE e.started_at IS NOT NULL AND e.finished_at IS NOT NULL),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM e.finished_at - e.started_at) * 1000)
           FILTER (WHERE e.started_at IS NOT NULL AND e.finished_at IS NOT NULL)
  FROM {WorkflowExecution._meta.db_table} e
 WHERE e.workflow_id = %(workflow)s AND e.queued_at >= %(start)s AND e.queued_at < %(end)s
   AND e.status IN ({", ".join(f"'{s}'" for s in STATUSES)})
 GROUP BY 1
"""


class StatsRangeInvalid(CodedError):
    error = Code.STATS_INVALID_RANGE


def parse_range(value: str | None) -> Range:
    """The range a query names (``1h``, ``24h`` or ``7d``; none: 24h), else STATS_INVALID_RANGE."""
    if value is None:
        return RANGES[DEFAULT_RANGE]
    if value not in RANGES:
        raise StatsRangeInvalid(field="range", details={"allowed": list(RANGES)})
    return RANGES[value]


def window(span: Range, now: datetime | None = None) -> tuple[datetime, datetime]:
    """[start, end) of the chart: whole steps from EPOCH, the last one holding ``now``."""
    now = now or timezone.now()
    elapsed = (now - EPOCH) // span.step + 1
    end = EPOCH + elapsed * span.step
    return end - span.buckets * span.step, end


def _ms(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)


def run_stats(*, workflow_id: Any, span: Range, now: datetime | None = None) -> dict[str, Any]:
    """The chart of a workflow's runs over ``span``: each bucket's runs by status and its duration
    p50/p95 in milliseconds (null for a bucket with no timed run), oldest bucket first."""
    start, end = window(span, now)
    params: dict[str, Any] = {"step": span.step, "origin": EPOCH, "workflow": workflow_id, "start": start, "end": end}
    with connection.cursor() as cursor:
        cursor.execute(STATS_SQL, params)
        rows = {bucket: row for bucket, *row in cursor.fetchall()}
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
