"""A key over time and the budgets, for the charts of the State panel and admin.

``key_series`` reads the history the store already keeps (workflow_state_event, trimmed to
KEEPERSTATE_HISTORY_PER_KEY events per key) in one statement along the history's primary key
(organization, workflow, key, created_at, id), in time order as the State panel lists it. A key
whose every written value is a number (a cursor, a counter) is a series of values by time, each
point with its version, its run and its ``actor`` (as keeperstate.state.shapes names them); any
other key is its writes per bucket of the runs chart's ranges, counted by a second, aggregate
statement.

``workflow_usage`` is a workflow's live keys against its ceiling; the organization's budget is
``selectors.org_usage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from keeperstate.core.buckets import EPOCH, Range, window
from keeperstate.state.db import iso, load_json, storage_errors
from keeperstate.state.models import WorkflowState, actor_of
from keeperstate.state.store import StateScope

EVENTS_SQL = """
SELECT e.created_at, e.operation, e.new_value, e.new_version, e.execution_id, e.actor,
       coalesce(jsonb_typeof(e.new_value), 'null')
  FROM workflow_state_event e
 WHERE e.organization_id = %(organization)s AND e.workflow_id = %(workflow)s AND e.key = %(key)s
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT %(limit)s
"""
WRITES_SQL = """
SELECT date_bin(%(step)s, e.created_at, %(origin)s), count(*) FILTER (WHERE e.operation <> 'delete'),
       count(*) FILTER (WHERE e.operation = 'delete')
  FROM workflow_state_event e
 WHERE e.organization_id = %(organization)s AND e.workflow_id = %(workflow)s AND e.key = %(key)s
   AND e.created_at >= %(start)s AND e.created_at < %(end)s
 GROUP BY 1
"""


def key_series(*, scope: StateScope, key: str, span: Range) -> dict[str, Any]:
    """``{"key", "kind": "numbers", "points"}`` (oldest first; a deletion is a point with value
    null) when every value the kept history wrote is a number, else ``{"key", "kind": "writes",
    "range", "bucketSeconds", "buckets"}``; ``kind: "empty"`` for a key without history. The
    caller has checked that the scope's workflow is the user's."""
    params: dict[str, Any] = {
        "organization": scope.organization_id, "workflow": scope.workflow_id, "key": key,
        "limit": settings.KEEPERSTATE_HISTORY_PER_KEY,
    }
    with storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(EVENTS_SQL, params)
        events = cursor.fetchall()[::-1]
    if not events:
        return {"key": key, "kind": "empty", "events": 0}
    written = [e for e in events if e[1] != "delete"]
    if written and all(e[6] == "number" for e in written):
        points = [
            {
                "at": iso(at),
                "value": None if operation == "delete" else load_json(value),
                "version": version,
                "operation": operation,
                "execution": str(execution) if execution else None,
                "actor": actor_of(execution, actor),
            }
            for at, operation, value, version, execution, actor, _type in events
        ]
        return {"key": key, "kind": "numbers", "events": len(events), "points": points}
    start, end = window(span)
    params.update(step=span.step, origin=EPOCH, start=start, end=end)
    with storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(WRITES_SQL, params)
        rows = {bucket: (writes, deletes) for bucket, writes, deletes in cursor.fetchall()}
    buckets = []
    for index in range(span.buckets):
        at = start + index * span.step
        writes, deletes = rows.get(at, (0, 0))
        buckets.append({"start": at.isoformat(), "end": (at + span.step).isoformat(), "writes": writes,
                        "deletes": deletes})
    return {"key": key, "kind": "writes", "events": len(events), "range": span.name,
            "bucketSeconds": int(span.step.total_seconds()), "buckets": buckets}


@dataclass(frozen=True)
class WorkflowUsage:
    live_keys: int
    max_keys: int

    def as_dict(self) -> dict[str, int]:
        return {"liveKeys": self.live_keys, "maxKeys": self.max_keys}


def workflow_usage(scope: StateScope) -> WorkflowUsage:
    """The workflow's live keys against KEEPERSTATE_MAX_KEYS_PER_WORKFLOW."""
    with storage_errors("read"):
        live = (
            WorkflowState.objects.filter(organization_id=scope.organization_id, workflow_id=scope.workflow_id)
            .live()
            .count()
        )
    return WorkflowUsage(live, settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW)
