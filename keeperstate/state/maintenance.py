"""Maintenance of workflow state outside runs: an admin's repairs, the expiry sweeper, the
history trim, and the settings the state triggers read.

Both name who acted (``admin:<user>``, ``sweeper``) in the history, without any session or
transaction-local setting: a delete writes its own history event in the statement before it, in
its transaction (``logged_delete_sql``, ``keeperstate_reclaim_expired``), and an admin's update
names the admin on the event its version made.
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

# The sweeper goes organization by organization (docs/scaling.md: every locking statement on one
# shard): which organizations have expired rows (a read without locks, bounded by the expiry
# index), then each organization's batch through the function a write at its limit uses.
EXPIRED_ORGS_SQL = f"SELECT DISTINCT organization_id FROM workflow_state WHERE {EXPIRED_SQL} ORDER BY 1"
SWEEP_SQL = "SELECT keeperstate_reclaim_expired(p_org => %(org)s, p_wf => NULL, p_limit => %(limit)s)"
ADMIN_LOG_DELETE_SQL, ADMIN_DELETE_SQL = logged_delete_sql("organization_id = %(org)s AND id = ANY(%(ids)s)")
# The version the admin's update made names exactly one event of the key.
NAME_ACTOR_SQL = """
UPDATE workflow_state_event SET actor = %(actor)s
 WHERE organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s AND operation = 'update'
   AND new_version = %(version)s
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
        # Found by id (an admin's page names the row so), then written by its organization too.
        found = WorkflowState.objects.filter(pk=state_id).values_list("organization_id", flat=True).first()
        row_of = WorkflowState.objects.filter(organization_id=found or 0, pk=state_id)
        # The row now holds the admin's value, not the last run's: the history names the admin.
        updated = row_of.update(value=value, expires_at=expires_at, updated_by_execution=None)
        if updated:
            row = row_of.get()
            # The version the update made names its history event: the admin made it.
            names: dict[str, Any] = {"actor": actor, "org": row.organization_id, "wf": row.workflow_id, "key": row.key,
                                     "version": row.version}
            cursor.execute(NAME_ACTOR_SQL, names)
            audit("state.update", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version,
                           "expiresAt": expires_at.isoformat() if expires_at else None})


def admin_delete(*, state_ids: list[int], actor: str) -> int:
    """Delete the rows (by id, as an admin's page names them), organization by organization: every
    locking statement stays on one organization's shard (docs/scaling.md)."""
    deleted = 0
    with storage_errors("delete"), transaction.atomic(), connection.cursor() as cursor:
        by_organization: dict[int, list[int]] = {}
        for row in WorkflowState.objects.filter(pk__in=state_ids).order_by("organization_id", "pk"):
            by_organization.setdefault(row.organization_id, []).append(row.pk)
            audit("state.delete", organization=row.organization_id, target=row,
                  details={"workflow": str(row.workflow_id), "key": row.key, "version": row.version})
        for organization, ids in by_organization.items():
            params: dict[str, Any] = {"org": organization, "ids": ids, "actor": actor, "execution": None}
            cursor.execute(ADMIN_LOG_DELETE_SQL, params)
            cursor.execute(ADMIN_DELETE_SQL, params)
            deleted += len(cursor.fetchall())
    return deleted


def sweep_expired(*, batch_size: int | None = None) -> Iterator[int]:
    """Delete expired rows in batches, organization by organization, yielding each batch's count
    until none is left.

    SKIP LOCKED lets several sweepers share the work and never waits on a writer that is
    reviving a key; tombstones written by the delete trigger keep versions from being reused.
    Each batch is one statement on one organization's rows, committed on its own; no statement
    locks rows of more than one organization (docs/scaling.md).
    """
    limit = batch_size or settings.KEEPERSTATE_SWEEP_BATCH_SIZE
    while True:
        with storage_errors("sweep"), connection.cursor() as cursor:
            cursor.execute(EXPIRED_ORGS_SQL)
            organizations = [row[0] for row in cursor.fetchall()]
        swept = 0
        for organization in organizations:
            while True:
                with storage_errors("sweep"), connection.cursor() as cursor:
                    cursor.execute(SWEEP_SQL, {"org": organization, "limit": limit})
                    deleted = cursor.fetchone()[0]
                if deleted == 0:
                    break
                swept += deleted
                yield deleted
                if deleted < limit:
                    break
        if swept == 0:
            return


DUE_ORGS_SQL = "SELECT DISTINCT organization_id FROM workflow_state_history_due ORDER BY 1"
TRIM_HISTORY_SQL = "SELECT keeperstate_trim_history(p_org => %(org)s, p_limit => %(limit)s)"
TRIM_BATCH = 500  # keys per statement


def trim_history() -> int:
    """Trim every key marked due (each 16th version marks its key) to the newest
    KEEPERSTATE_HISTORY_PER_KEY events, in batches, organization by organization; returns the
    number of keys trimmed. Run by the worker's housekeeping and by the sweeper; safe from many
    processes at once."""
    total = 0
    with storage_errors("history trim"), connection.cursor() as cursor:
        cursor.execute(DUE_ORGS_SQL)
        organizations = [row[0] for row in cursor.fetchall()]
    for organization in organizations:
        while True:
            with storage_errors("history trim"), connection.cursor() as cursor:
                cursor.execute(TRIM_HISTORY_SQL, {"org": organization, "limit": TRIM_BATCH})
                trimmed = cursor.fetchone()[0]
            total += trimmed
            if trimmed < TRIM_BATCH:
                break
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
