"""Workflow-scoped key-value state and the database rules that hold whoever writes it.

Invariants live in Postgres (DESIGN.md §2) because the store is not the only writer: Django
admin, data migrations and raw SQL all reach this table. Triggers (django-pgtrigger) and the
constraints added in migration 0002 make them hold for every writer:

* ``version`` moves on every UPDATE that sets ``value`` or ``expires_at``, unconditionally:
  a bump that depended on the value changing would let two compare-and-set writers of the
  same value both win.
* ``version`` of an inserted row continues after the key's last deleted row (the tombstone),
  so a version number is never reused for a key, even after expiry, delete or sweep.
* ``workflow`` and ``key`` are read-only after insert.
* ``(workflow_id, organization_id)`` references ``workflow (id, organization_id)`` with
  ON UPDATE CASCADE: moving a workflow to another organization carries its state along.

* Every change of a key (insert, update that moves the version, delete) is written to
  ``workflow_state_event`` with old and new value and version, the execution or actor, and the
  time; the same trigger keeps the last N events per key (``keeperstate.history_per_key``).

BEFORE triggers fire in name order: ``state_scope_read_only`` rejects a scope change before
``state_version_bump`` computes anything.
"""

from __future__ import annotations

import pgtrigger
from django.db import models
from django.db.models.functions import Cast, Now

from keeperstate.models.org import Organization
from keeperstate.models.workflow import Workflow, WorkflowExecution

VERSION_BUMP_SQL = """
    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
    RETURN NEW;
"""

VERSION_START_SQL = """
    NEW.version := COALESCE(
        (SELECT t.last_version FROM workflow_state_tombstone t
          WHERE t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
        0) + 1;
    RETURN NEW;
"""

# A row deleted while its workflow still exists leaves a tombstone with its last version.
# When the workflow itself is being deleted there is nothing to remember (and nothing to
# reference), hence the EXISTS.
TOMBSTONE_SQL = """
    INSERT INTO workflow_state_tombstone (workflow_id, key, last_version)
    SELECT OLD.workflow_id, OLD.key, OLD.version
     WHERE EXISTS (SELECT 1 FROM workflow w WHERE w.id = OLD.workflow_id)
    ON CONFLICT (workflow_id, key) DO UPDATE
       SET last_version = GREATEST(workflow_state_tombstone.last_version, EXCLUDED.last_version);
    RETURN NULL;
"""


# Who made a change: an insert or update names the execution on the row; a delete has no new
# row, so the store sets keeperstate.execution for the statement. Without an execution, the
# store's admin and sweeper paths SET LOCAL keeperstate.actor; a raw SQL writer leaves both empty.
# Events for a workflow that is being deleted are not written (the workflow's history goes with
# it). An UPDATE that leaves the version alone (a workflow moved to another organization, an
# execution deleted) is not a change of the key.
HISTORY_SQL = """
    IF NOT EXISTS (SELECT 1 FROM workflow w WHERE w.id = COALESCE(NEW.workflow_id, OLD.workflow_id)) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.version = OLD.version THEN
        RETURN NULL;
    END IF;
    INSERT INTO workflow_state_event
        (workflow_id, key, operation, old_value, new_value, old_version, new_version, execution_id, actor, created_at)
    VALUES (
        COALESCE(NEW.workflow_id, OLD.workflow_id),
        COALESCE(NEW.key, OLD.key),
        lower(TG_OP),
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.value END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.value END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULLIF(current_setting('keeperstate.execution', true), '')::uuid
             ELSE NEW.updated_by_execution_id END,
        NULLIF(current_setting('keeperstate.actor', true), ''),
        clock_timestamp()
    );
    DELETE FROM workflow_state_event
     WHERE id IN (SELECT e.id FROM workflow_state_event e
                   WHERE e.workflow_id = COALESCE(NEW.workflow_id, OLD.workflow_id)
                     AND e.key = COALESCE(NEW.key, OLD.key)
                   ORDER BY e.id DESC
                  OFFSET COALESCE(NULLIF(current_setting('keeperstate.history_per_key', true), '')::int, 50));
    RETURN NULL;
"""


class WorkflowState(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="state_entries")
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="state_entries")
    key = models.TextField()
    value = models.JSONField()
    # Computed by the triggers; whatever a writer puts here is overwritten.
    version = models.BigIntegerField(default=1, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: the key never expires.")
    updated_by_execution = models.ForeignKey(
        WorkflowExecution, on_delete=models.SET_NULL, null=True, blank=True, related_name="state_writes"
    )
    created_at = models.DateTimeField(db_default=Now(), editable=False)
    updated_at = models.DateTimeField(db_default=Now(), editable=False)
    # What the value occupies as Postgres renders it: the organization's byte budget sums this.
    size_bytes = models.GeneratedField(
        expression=models.Func(Cast("value", models.TextField()), function="octet_length"),
        output_field=models.IntegerField(),
        db_persist=True,
    )

    class Meta:
        db_table = "workflow_state"
        verbose_name = "workflow state entry"
        verbose_name_plural = "workflow state"
        ordering = ["workflow_id", "key"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "workflow", "key"], name="workflow_state_unique_key"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="workflow_state_version_positive"),
        ]
        indexes = [
            # Serves the sweeper and nothing else: most keys have no TTL.
            models.Index(
                fields=["expires_at"], condition=models.Q(expires_at__isnull=False), name="workflow_state_expiry_idx"
            ),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="state_scope_read_only", fields=["workflow", "key"]),
            pgtrigger.Trigger(
                name="state_version_bump",
                when=pgtrigger.Before,
                operation=pgtrigger.UpdateOf("value", "expires_at"),
                func=VERSION_BUMP_SQL,
            ),
            pgtrigger.Trigger(
                name="state_version_start",
                when=pgtrigger.Before,
                operation=pgtrigger.Insert,
                func=VERSION_START_SQL,
            ),
            pgtrigger.Trigger(
                name="state_tombstone",
                when=pgtrigger.After,
                operation=pgtrigger.Delete,
                func=TOMBSTONE_SQL,
            ),
            pgtrigger.Trigger(
                name="state_history",
                when=pgtrigger.After,
                operation=pgtrigger.Insert | pgtrigger.Update | pgtrigger.Delete,
                func=HISTORY_SQL,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} (v{self.version})"


class WorkflowStateTombstone(models.Model):
    """The last version a deleted key had, so the key's next life continues from there."""

    # The database cascades these with the workflow (migration 0002); Django must not try,
    # because deleting state rows during a cascade would write tombstones behind it.
    workflow = models.ForeignKey(Workflow, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    key = models.TextField()
    last_version = models.BigIntegerField()

    class Meta:
        db_table = "workflow_state_tombstone"
        constraints = [
            models.UniqueConstraint(fields=["workflow", "key"], name="workflow_state_tombstone_unique_key"),
        ]


class WorkflowStateEvent(models.Model):
    """One change of one key, written by the ``state_history`` trigger (never by Python)."""

    class Operation(models.TextChoices):
        INSERT = "insert", "created"
        UPDATE = "update", "updated"
        DELETE = "delete", "deleted"

    # Cascaded by the database with the workflow (migration 0003), like the tombstones.
    workflow = models.ForeignKey(Workflow, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    key = models.TextField()
    operation = models.CharField(max_length=6, choices=Operation.choices)
    old_value = models.JSONField(null=True)
    new_value = models.JSONField(null=True)
    old_version = models.BigIntegerField(null=True)
    new_version = models.BigIntegerField(null=True)
    # No constraint: an execution's events outlive nothing (both go with the workflow).
    execution = models.ForeignKey(
        WorkflowExecution, on_delete=models.DO_NOTHING, db_constraint=False, null=True, related_name="+"
    )
    actor = models.TextField(null=True, help_text="admin:<username>, sweeper, or empty for raw SQL")
    created_at = models.DateTimeField()

    class Meta:
        db_table = "workflow_state_event"
        ordering = ["-id"]
        indexes = [models.Index(fields=["workflow", "key", "-id"], name="state_event_key_idx")]

    def __str__(self) -> str:
        return f"{self.key} {self.operation} v{self.old_version}→v{self.new_version}"

    @property
    def made_by(self) -> str:
        if self.execution_id:
            return f"run {self.execution_id}"
        return self.actor or "database (raw SQL)"
