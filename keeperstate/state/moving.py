"""A workflow's state copied to another organization, as it is: the store's half of a workflow's
move (keeperstate/workflows/move.py, ADR 0059).

Every state table shards by ``organization_id`` and no row ever changes it (docs/scaling.md), so
a move inserts each row again under the other organization and the caller then deletes the
workflow in the old one, in one transaction. The triggers of workflow_state (state/sql.py) stay
on and are used, not bypassed; none reads a session setting, so there is nothing to switch off
and nothing is, for this connection or any other:

* ``version_start`` computes an inserted row's version from the key's tombstone. A tombstone of
  ``version - 1`` is written first, so the copy gets exactly the version it had (a
  compare-and-set with the old version still wins); then the tombstones are put back as they were.
* ``history`` counts each inserted row in the new organization's usage (the workflow's row and
  the organization's shard: exactly what the copy adds) and writes an ``insert`` event. Those
  events are not history (nothing changed the key), so they are deleted, and the key's own
  events are copied with their ids and times: its history reads the same, in (created_at, id)
  order. The due marks are copied the same way.
* The caller's delete of the old workflow cascades to its rows; ``history`` then takes them off
  the old organization's usage and, the workflow being gone, writes no event and no tombstone;
  the workflow's trigger deletes its history, tombstones and marks
  (``keeperstate_workflow_state_history_gone``).

Only the target organization's usage needs locking: every increase shard of it, as the store's
exact path does (``keeperstate_lock_usage``), so the budget check below is exact.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models

from keeperstate.state.models import StateHistoryDue, WorkflowState, WorkflowStateEvent, WorkflowStateTombstone

# The workflow's rows, locked (writers of these keys wait, then find them gone) and summed.
LOCK_ROWS_SQL = """
SELECT count(*), coalesce(sum(size_bytes), 0)::bigint FROM (
    SELECT size_bytes FROM workflow_state WHERE organization_id = %(src)s AND workflow_id = %(wf)s
     ORDER BY key FOR UPDATE) locked
"""
LOCK_USAGE_SQL = "SELECT keeperstate_lock_usage(%(org)s)"
USAGE_SQL = (
    "SELECT coalesce(sum(keys), 0)::bigint, coalesce(sum(bytes), 0)::bigint FROM organization_state_usage "
    "WHERE organization_id = %(org)s"
)
RECLAIM_SQL = "SELECT keeperstate_reclaim_expired(%(org)s, NULL, 1000)"
# The tombstone that makes version_start give each copy its own version (see above).
VERSION_TOMBSTONES_SQL = """
INSERT INTO workflow_state_tombstone (organization_id, workflow_id, key, last_version)
SELECT %(dst)s, workflow_id, key, version - 1 FROM workflow_state
 WHERE organization_id = %(src)s AND workflow_id = %(wf)s
"""
# What the history trigger wrote for the copies, and the version tombstones: neither is the key's.
FORGET_COPY_SQL = [
    f"DELETE FROM {model._meta.db_table} WHERE organization_id = %(dst)s AND workflow_id = %(wf)s"
    for model in (WorkflowStateEvent, WorkflowStateTombstone, StateHistoryDue)
]


def columns(model: type[models.Model]) -> list[str]:
    """The stored columns of a model but its organization and generated ones: what a copy writes."""
    return [
        field.column for field in model._meta.concrete_fields
        if field.column and not field.generated and field.column != "organization_id"
    ]


def copy_rows_sql(model: type[models.Model], workflow_column: str = "workflow_id") -> str:
    """INSERT … SELECT of a workflow's rows of ``model`` under the other organization, ids kept."""
    names = ", ".join(f'"{name}"' for name in columns(model))
    table = model._meta.db_table
    return (
        f"INSERT INTO {table} (organization_id, {names}) SELECT %(dst)s, {names} FROM {table} "
        f'WHERE organization_id = %(src)s AND "{workflow_column}" = %(wf)s'
    )


@dataclass(frozen=True)
class Moving:
    """The state a move carries: rows (expired ones too, until swept) and bytes."""

    keys: int
    bytes: int


@dataclass(frozen=True)
class TargetUsage:
    """The target organization's usage, exact (its increase shards held until commit)."""

    keys: int
    bytes: int

    def passes(self, moving: Moving) -> str | None:
        """Which budget the move would pass ("keys", "bytes"), or None."""
        if moving.keys and self.keys + moving.keys > settings.KEEPERSTATE_ORG_MAX_KEYS:
            return "keys"
        if moving.bytes and self.bytes + moving.bytes > settings.KEEPERSTATE_ORG_MAX_BYTES:
            return "bytes"
        return None


def lock_state(cursor: Any, *, src: int, wf: uuid.UUID) -> Moving:
    """Lock the workflow's state rows (in key order) and say what they hold."""
    cursor.execute(LOCK_ROWS_SQL, {"src": src, "wf": wf})
    keys, size = cursor.fetchone()
    return Moving(keys, size)


def target_usage(cursor: Any, *, dst: int, moving: Moving) -> TargetUsage:
    """The target's exact usage, with its expired rows reclaimed first if the move would pass a
    budget (as a write near the budget does, keeperstate_check_usage)."""
    cursor.execute(LOCK_USAGE_SQL, {"org": dst})
    while True:
        cursor.execute(USAGE_SQL, {"org": dst})
        usage = TargetUsage(*cursor.fetchone())
        if usage.passes(moving) is None:
            return usage
        cursor.execute(RECLAIM_SQL, {"org": dst})
        if cursor.fetchone()[0] == 0:
            return usage


def copy_state(cursor: Any, *, src: int, dst: int, wf: uuid.UUID) -> None:
    """Copy the workflow's state rows, tombstones, history and due marks to ``dst`` as they are.
    The workflow's row must already be in ``dst`` (the foreign key of the state rows)."""
    params = {"src": src, "dst": dst, "wf": wf}
    cursor.execute(VERSION_TOMBSTONES_SQL, params)
    cursor.execute(copy_rows_sql(WorkflowState), params)
    for statement in FORGET_COPY_SQL:
        cursor.execute(statement, params)
    for model in (WorkflowStateTombstone, WorkflowStateEvent, StateHistoryDue):
        cursor.execute(copy_rows_sql(model), params)
