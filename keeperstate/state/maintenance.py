"""Maintenance of workflow state outside runs: an admin's repairs, the expiry sweeper, the
history trim, and the settings the state triggers read.

Both name who acted (``admin:<user>``, ``sweeper``) in the history, without any session or
transaction-local setting: a delete writes its own history event in the same statement
(``logged_delete_sql``), and an admin's update names the admin on the event its version made.
Both go through the same database rules as a run's writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from keeperstate.audit.log import audit
from keeperstate.state.db import logged_delete_sql, storage_errors
from keeperstate.state.models import WorkflowState
from keeperstate.state.sql import EXPIRED_SQL
from keeperstate.state.values import encode_value

SWEEP_SQL = logged_delete_sql(
    "",
    pick=f"""SELECT id FROM workflow_state
             WHERE {EXPIRED_SQL}
             ORDER BY expires_at
             LIMIT %(limit)s
             FOR UPDATE SKIP LOCKED""",
)
ADMIN_DELETE_SQL = logged_delete_sql("id = ANY(%(ids)s)")
# The version the admin's update made names exactly one event of the key.
NAME_ACTOR_SQL = """
UPDATE workflow_state_event SET actor = %(actor)s
 WHERE workflow_id = %(wf)s AND key = %(key)s AND operation = 'update' AND new_version = %(version)s
"""
HISTORY_SETTING_SQL = """
INSERT INTO keeperstate_setting (name, value) VALUES ('history_per_key', %(value)s)
ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value WHERE keeperstate_setting.value <> EXCLUDED.value
"""


def admin_update(*, state_id: int, value: Any, expires_at: datetime | None, actor: str) -> None:
    """An admin's repair of one row: validated like any write; the trigger moves the version and
    the history records ``actor``. Not checked against the organization budget (an operator's
    repair)."""
    encode_value(value)
    with storage_errors("write"), transaction.atomic(), connection.cursor() as cursor:
        # The row now holds the admin's value, not the last run's: the history names the admin.
        updated = WorkflowState.objects.filter(pk=state_id).update(
            value=value, expires_at=expires_at, updated_by_execution=None
        )
        if updated:
            row = WorkflowState.objects.get(pk=state_id)
            # The version the update made names its history event: the admin made it.
            names: dict[str, Any] = {"actor": actor, "wf": row.workflow_id, "key": row.key, "version": row.version}
            cursor.execute(NAME_ACTOR_SQL, names)
            audit("state.update", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version,
                           "expiresAt": expires_at.isoformat() if expires_at else None})


def admin_delete(*, state_ids: list[int], actor: str) -> int:
    with storage_errors("delete"), transaction.atomic(), connection.cursor() as cursor:
        for row in WorkflowState.objects.filter(pk__in=state_ids):
            audit("state.delete", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version})
        cursor.execute(ADMIN_DELETE_SQL, {"ids": list(state_ids), "actor": actor, "execution": None})
        return len(cursor.fetchall())


def sweep_expired(*, batch_size: int | None = None) -> Iterator[int]:
    """Delete expired rows in batches, yielding each batch's count until none is left.

    SKIP LOCKED lets several sweepers share the work and never waits on a writer that is
    reviving a key; tombstones written by the delete trigger keep versions from being reused.
    Each batch is one statement, committed on its own.
    """
    limit = batch_size or settings.KEEPERSTATE_SWEEP_BATCH_SIZE
    while True:
        with storage_errors("sweep"), connection.cursor() as cursor:
            cursor.execute(SWEEP_SQL, {"limit": limit, "actor": "sweeper", "execution": None})
            deleted = len(cursor.fetchall())
        if deleted == 0:
            return
        yield deleted


TRIM_HISTORY_SQL = "SELECT keeperstate_trim_history(%(limit)s)"
TRIM_BATCH = 500  # keys per statement


def trim_history() -> int:
    """Trim every key marked due (each 16th version marks its key) to the newest
    KEEPERSTATE_HISTORY_PER_KEY events, in batches; returns the number of keys trimmed. Run by
    the worker's housekeeping and by the sweeper; safe from many processes at once."""
    total = 0
    while True:
        with storage_errors("history trim"), connection.cursor() as cursor:
            cursor.execute(TRIM_HISTORY_SQL, {"limit": TRIM_BATCH})
            trimmed = cursor.fetchone()[0]
        total += trimmed
        if trimmed < TRIM_BATCH:
            return total


def sync_state_settings(**kwargs: Any) -> None:
    """Write the settings the state triggers read (KEEPERSTATE_HISTORY_PER_KEY) into
    keeperstate_setting; connected to post_migrate, so every deploy's migrate applies them."""
    using = kwargs.get("using", "default")
    from django.db import connections

    with connections[using].cursor() as cursor:
        if "keeperstate_setting" not in connections[using].introspection.table_names(cursor):
            return  # migrated back below 0011
        cursor.execute(HISTORY_SETTING_SQL, {"value": settings.KEEPERSTATE_HISTORY_PER_KEY})
