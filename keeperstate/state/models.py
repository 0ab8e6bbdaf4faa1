"""Workflow-scoped key-value state and the database rules that hold whoever writes it.

Invariants live in Postgres (DESIGN.md §2) because the store is not the only writer: Django
admin, data migrations and raw SQL all reach this table. Triggers and constraints make them hold
for every writer:

* ``version`` moves on every UPDATE that sets ``value`` or ``expires_at``, unconditionally:
  a bump that depended on the value changing would let two compare-and-set writers of the
  same value both win.
* ``version`` of an inserted row continues after the key's last deleted row (the tombstone),
  so a version number is never reused for a key, even after expiry, delete or sweep.
* ``workflow`` and ``key`` are read-only after insert.
* ``(organization_id, workflow_id)`` references ``workflow (organization_id, id)``: a state
  row's organization is its workflow's. No row changes organization (docs/scaling.md): every
  table of the state carries ``organization_id`` first in its keys, so they shard by it.

* Every change of a key (insert, update that moves the version, delete) is written to
  ``workflow_state_event`` with old and new value and version, the execution or actor, and the
  time; every 16th version of a key marks it due, and housekeeping trims it to the last
  ``history_per_key`` events (``keeperstate_setting``; see StateHistoryDue).
* Usage counters (``workflow_state_usage``, ``organization_state_usage``) follow every insert,
  delete, resize and move, so the store checks the ceiling and the budget without a scan.

The SQL of each trigger is in keeperstate/state/sql.py; they are plain Postgres triggers
installed by migrations (why not through django-pgtrigger: see STATE_TRIGGERS_SQL there),
except the read-only rule below, which pgtrigger keeps.

Whether a row is live is said once for the ORM (WorkflowStateQuerySet) and once for SQL
(``live()`` / ``expired()`` in state/sql.py), both on the database's clock.
"""

from __future__ import annotations

from typing import Any

import pgtrigger
from django.db import models
from django.db.models import BooleanField, DateTimeField, ExpressionWrapper, Func, Q
from django.db.models.functions import Cast, Now

from keeperstate.accounts.models import Organization
from keeperstate.core.sharding import KeepsOrganization
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow


class TransactionNow(Func):
    """``now()``, the clock the store's SQL reads: the start of the transaction. Django's Now() is
    ``statement_timestamp()`` on Postgres, later than that inside a transaction, so a key could be
    live for a Get and expired for a queryset in the same transaction; Python's clock is a third."""

    template = "now()"
    output_field = DateTimeField()


# Live: no expiry, or an expiry ahead of the database's clock. The twin of live() and expired()
# in keeperstate/state/sql.py; tests/state/test_sql_twins.py holds them equal.
_LIVE = Q(expires_at__isnull=True) | Q(expires_at__gt=TransactionNow())
_EXPIRED = Q(expires_at__lte=TransactionNow())


class WorkflowStateQuerySet(models.QuerySet["WorkflowState"]):
    """Liveness for every ORM reader (selectors, admin); raw statements use state/sql.py's."""

    def live(self) -> WorkflowStateQuerySet:
        """Rows a Get would find."""
        return self.filter(_LIVE)

    def expired(self) -> WorkflowStateQuerySet:
        """Rows that await the sweeper: exactly those not live()."""
        return self.filter(_EXPIRED)

    def with_liveness(self) -> WorkflowStateQuerySet:
        """Each row with ``is_live`` (as live() decides) and ``checked_at``, the database's clock it
        was decided at, for pages that show liveness next to the time left."""
        return self.annotate(is_live=ExpressionWrapper(_LIVE, output_field=BooleanField()), checked_at=TransactionNow())


class WorkflowState(KeepsOrganization):
    # Neither has a constraint of its own: the composite foreign key (organization_id,
    # workflow_id) → workflow (organization_id, id) (migrations 0002, 0017) already guarantees both
    # (a workflow's organization exists), so each insert pays one referential check, not three.
    # No index on either: the primary key (organization, workflow, key) leads with both, and every
    # reader names both. A deleted workflow's rows go with the database's cascade on the composite
    # key, which finds them by (organization, workflow); Django's would look by workflow alone.
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="state_entries", db_index=False, db_constraint=False
    )
    workflow = models.ForeignKey(
        Workflow, on_delete=models.DO_NOTHING, related_name="state_entries", db_index=False, db_constraint=False
    )
    key = models.TextField()
    value = models.JSONField()
    # Computed by the triggers; whatever a writer puts here is overwritten.
    version = models.BigIntegerField(default=1, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: the key never expires.")
    # No constraint and no index, like WorkflowStateEvent.execution. Every run writes a new
    # execution here: indexed, the column made each overwrite a non-HOT update that added an entry
    # to every index of the table (7.5 % more per write, measured with pgbench), and the key check
    # locked the execution row at commit. An execution goes with its workflow, and so does the
    # workflow's state; one deleted alone in admin leaves its id here, as in the history.
    updated_by_execution = models.ForeignKey(
        WorkflowExecution, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, null=True, blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(db_default=Now(), editable=False)
    updated_at = models.DateTimeField(db_default=Now(), editable=False)
    # What the value occupies as Postgres renders it: the organization's byte budget sums this.
    size_bytes = models.GeneratedField(
        expression=models.Func(Cast("value", models.TextField()), function="octet_length"),
        output_field=models.IntegerField(),
        db_persist=True,
    )

    objects = WorkflowStateQuerySet.as_manager()

    class Meta:
        db_table = "workflow_state"
        verbose_name = "workflow state entry"
        verbose_name_plural = "workflow state"
        ordering = ["workflow_id", "key"]
        # The database's primary key is the key, (organization_id, workflow_id, key): what every
        # reader looks up. Django's pk, id, has an index of its own for
        # admin's pages and repairs.
        constraints = [
            models.CheckConstraint(condition=models.Q(version__gte=1), name="workflow_state_version_positive"),
        ]
        indexes = [
            models.Index(fields=["id"], name="workflow_state_id_idx"),
            # Serves the sweeper and nothing else: most keys have no TTL.
            models.Index(
                fields=["expires_at"], condition=models.Q(expires_at__isnull=False), name="workflow_state_expiry_idx"
            ),
            # An organization's expired rows, reclaimed by a write that would pass its budget.
            models.Index(
                fields=["organization", "expires_at"],
                condition=models.Q(expires_at__isnull=False),
                name="workflow_state_org_expiry_idx",
            ),
        ]
        # The other triggers of this table are plain SQL (keeperstate/state/sql.py).
        triggers = [
            pgtrigger.ReadOnly(name="state_scope_read_only", fields=["workflow", "key"]),
        ]

    def __str__(self) -> str:
        return f"{self.key} (v{self.version})"


class StateHistoryDue(models.Model):
    """A key whose history is due a trim: every 16th version marks its key, and
    keeperstate_trim_history (worker housekeeping, the sweeper) trims it and drops the mark, so
    no write pays for trimming (keeperstate/state/sql.py). No foreign key: the mark of a
    deleted workflow is dropped by the next trim."""

    # The database's primary key is (organization_id, workflow_id, key): the shard key leads.
    pk = models.CompositePrimaryKey("workflow_id", "key")
    organization_id = models.BigIntegerField()
    workflow_id = models.UUIDField()
    key = models.TextField()

    class Meta:
        db_table = "workflow_state_history_due"


class WorkflowStateTombstone(models.Model):
    """The last version a deleted key had, so the key's next life continues from there."""

    # The database deletes these with the workflow (a trigger, state/sql.py); Django must not try,
    # because deleting state rows during a cascade would write tombstones behind it. No index of
    # its own: the primary key (organization, workflow, key) leads with it.
    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    workflow = models.ForeignKey(
        Workflow, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    key = models.TextField()
    last_version = models.BigIntegerField()

    class Meta:
        db_table = "workflow_state_tombstone"
        # One tombstone per key: the primary key is (organization_id, workflow_id, key) in the
        # database, the table's one index, which the version trigger's
        # lookup and the delete's upsert use.


class WorkflowStateEvent(models.Model):
    """One change of one key, written by the ``state_history`` trigger (never by Python)."""

    class Operation(models.TextChoices):
        INSERT = "insert", "created"
        UPDATE = "update", "updated"
        DELETE = "delete", "deleted"

    # Deleted with the workflow by a trigger on workflow (state/sql.py), like the tombstones. No index
    # of its own: the table's primary key (organization, workflow, key, created_at, id) leads
    # with them.
    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    workflow = models.ForeignKey(
        Workflow, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    key = models.TextField()
    operation = models.CharField(max_length=6, choices=Operation.choices)
    old_value = models.JSONField(null=True)
    new_value = models.JSONField(null=True)
    old_version = models.BigIntegerField(null=True)
    new_version = models.BigIntegerField(null=True)
    # No constraint: an execution's events outlive nothing (both go with the workflow). No index:
    # nothing looks events up by execution, and each write would pay for one.
    execution = models.ForeignKey(
        WorkflowExecution, on_delete=models.DO_NOTHING, db_constraint=False, null=True, related_name="+",
        db_index=False,
    )
    actor = models.TextField(null=True, help_text="admin:<username>, sweeper, or empty for raw SQL")
    created_at = models.DateTimeField()

    class Meta:
        db_table = "workflow_state_event"
        # Time order is (created_at, id): ids made on different nodes of a sharded database do not
        # follow time (docs/scaling.md). Read a key at a time, newest first, along the primary key
        # (organization_id, workflow_id, key, created_at, id), the table's one index.
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.key} {self.operation} v{self.old_version}→v{self.new_version}"

    @property
    def made_by(self) -> str:
        """Who made the change, for people: the run, else the actor."""
        return f"run {self.execution_id}" if self.execution_id else str(actor_of(None, self.actor))


def actor_of(execution_id: Any, actor: str | None) -> str | None:
    """The history's ``actor`` in JSON: null for a run's change (its ``execution`` names it), else
    who wrote outside a run (``api:alice (token ci)``, ``admin:ada``, ``sweeper``), and a write by
    SQL that named nobody as such."""
    return None if execution_id else actor or "database (raw SQL)"


class WorkflowStateUsage(models.Model):
    """Rows of workflow_state per workflow (expired ones until deleted), kept by triggers."""

    # Cascaded by the database with the workflow (migrations 0010, 0017). The database's primary key
    # is (organization_id, workflow_id).
    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    workflow = models.OneToOneField(
        Workflow, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True, related_name="+"
    )
    keys = models.IntegerField(default=0)

    class Meta:
        db_table = "workflow_state_usage"


class OrganizationStateUsage(models.Model):
    """Rows and bytes of workflow_state per organization (expired ones until deleted), kept by
    triggers in USAGE_SHARDS rows per organization whose sum is the usage."""

    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", db_index=False
    )
    shard = models.SmallIntegerField()
    keys = models.BigIntegerField(default=0)
    bytes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "organization_state_usage"
        constraints = [
            models.UniqueConstraint(fields=["organization", "shard"], name="organization_state_usage_shard"),
        ]


class StateSetting(models.Model):
    """Settings the state triggers read (a table, not a connection option: it works the same
    behind PgBouncer). Written from Django settings after every migrate."""

    name = models.CharField(max_length=64, primary_key=True)
    value = models.IntegerField()

    class Meta:
        db_table = "keeperstate_setting"

    def __str__(self) -> str:
        return f"{self.name} = {self.value}"
