"""Reads for people inspecting state (admin, the editor's State panel, the sweeper's progress).

Runs read state through ``store.state_get``; these list and summarise it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from keeperstate.state.db import storage_errors
from keeperstate.state.models import WorkflowState, WorkflowStateEvent
from keeperstate.state.shapes import ENTRY_COLUMNS, entry_json, event_json
from keeperstate.state.sql import EXPIRED_SQL, expired
from keeperstate.state.store import StateScope
from keeperstate.workflows.models import Workflow

COUNT_EXPIRED_SQL = f"SELECT count(*) FROM workflow_state WHERE {EXPIRED_SQL}"
# The counters (rows and bytes, kept by triggers) less the rows expired but not swept yet.
ORG_USAGE_SQL = f"""
SELECT (coalesce(sum(u.keys), 0)
        - (SELECT count(*) FROM workflow_state s WHERE s.organization_id = %(org)s AND {expired("s")}))::bigint,
       coalesce(sum(u.bytes), 0)::bigint
  FROM organization_state_usage u WHERE u.organization_id = %(org)s
"""


def count_expired() -> int:
    """How many rows await the sweeper."""
    with storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(COUNT_EXPIRED_SQL)
        return cursor.fetchone()[0]


@dataclass(frozen=True)
class OrgUsage:
    live_keys: int
    stored_bytes: int
    max_keys: int
    max_bytes: int

    def as_dict(self) -> dict[str, int]:
        return {"liveKeys": self.live_keys, "maxKeys": self.max_keys, "storedBytes": self.stored_bytes,
                "maxBytes": self.max_bytes}


def org_usage(organization_id: int) -> OrgUsage:
    """An organization's live keys and stored bytes against its budget.

    From the usage counters (rows and bytes, kept by triggers) less the rows that have expired
    but are not swept yet (an index range, no scan of the organization's keys).
    """
    with storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(ORG_USAGE_SQL, {"org": organization_id})
        keys, size = cursor.fetchone()
    return OrgUsage(keys, size, settings.KEEPERSTATE_ORG_MAX_KEYS, settings.KEEPERSTATE_ORG_MAX_BYTES)


def state_entries(*, scope: StateScope) -> list[dict[str, Any]]:
    """The workflow's live keys in key order, each as the API's entry plus its stored size
    (``sizeBytes``, what it costs of the organization's budget)."""
    rows = (
        WorkflowState.objects.filter(organization_id=scope.organization_id, workflow_id=scope.workflow_id)
        .live()
        .order_by("key")
        .values(*ENTRY_COLUMNS, "size_bytes")
    )
    with storage_errors("read"):
        return [{**entry_json(row), "sizeBytes": row["size_bytes"]} for row in rows]


def state_events(*, scope: StateScope, key: str | None = None, limit: int = 50) -> list[WorkflowStateEvent]:
    """The newest changes of the workflow's keys (or of one key), newest first."""
    if not Workflow.objects.filter(pk=scope.workflow_id, organization_id=scope.organization_id).exists():
        return []
    events = WorkflowStateEvent.objects.filter(organization_id=scope.organization_id, workflow_id=scope.workflow_id)
    if key is not None:
        events = events.filter(key=key)
    with storage_errors("read"):
        # (created_at, id): ids made on different nodes do not follow time (docs/scaling.md)
        return list(events.order_by("-created_at", "-id")[:limit])


def state_history(*, scope: StateScope, key: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The newest changes of the workflow's keys (or of one key), newest first, each as the API's
    history event with the key it changed."""
    return [{"key": event.key, **event_json(event)} for event in state_events(scope=scope, key=key, limit=limit)]
