"""Maintenance of workflow state outside runs: an admin's repairs and the expiry sweeper.

Both name who acted (``keeperstate.actor``) for the history trigger, and both go through the
same checks and database rules as a run's writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from keeperstate.audit import audit
from keeperstate.models import WorkflowState
from keeperstate.state.db import SET_ACTOR_SQL, storage_errors
from keeperstate.state.values import encode_value

SWEEP_SQL = """
DELETE FROM workflow_state
 WHERE id IN (SELECT id FROM workflow_state
               WHERE expires_at <= now()
               ORDER BY expires_at
               LIMIT %(limit)s
               FOR UPDATE SKIP LOCKED)
"""

def admin_update(*, state_id: int, value: Any, expires_at: datetime | None, actor: str) -> None:
    """An admin's repair of one row: validated like any write; the trigger moves the version and
    the history records ``actor``. Not checked against the organization budget (an operator's
    repair)."""
    encode_value(value)
    with storage_errors("write"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SET_ACTOR_SQL, [actor])
        # The row now holds the admin's value, not the last run's: the history names the admin.
        WorkflowState.objects.filter(pk=state_id).update(
            value=value, expires_at=expires_at, updated_by_execution=None
        )
        for row in WorkflowState.objects.filter(pk=state_id):
            audit("state.update", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version,
                           "expiresAt": expires_at.isoformat() if expires_at else None})


def admin_delete(*, state_ids: list[int], actor: str) -> int:
    with storage_errors("delete"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(SET_ACTOR_SQL, [actor])
        for row in WorkflowState.objects.filter(pk__in=state_ids):
            audit("state.delete", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version})
        deleted, _ = WorkflowState.objects.filter(pk__in=state_ids).delete()
    return deleted


def sweep_expired(*, batch_size: int | None = None) -> Iterator[int]:
    """Delete expired rows in batches, yielding each batch's count until none is left.

    SKIP LOCKED lets several sweepers share the work and never waits on a writer that is
    reviving a key; tombstones written by the delete trigger keep versions from being reused.
    """
    limit = batch_size or settings.KEEPERSTATE_SWEEP_BATCH_SIZE
    while True:
        with storage_errors("sweep"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(SET_ACTOR_SQL, ["sweeper"])
            cursor.execute(SWEEP_SQL, {"limit": limit})
            deleted = cursor.rowcount
        if deleted == 0:
            return
        yield deleted
