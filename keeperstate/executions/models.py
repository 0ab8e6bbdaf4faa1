"""Executions: one run of a workflow, its input, each node's result and its lifecycle."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from keeperstate.accounts.models import Organization
from keeperstate.core.sharding import KeepsOrganization
from keeperstate.workflows.models import Workflow


class WorkflowExecution(KeepsOrganization):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCESS = "success", "Success"
        ERROR = "error", "Error"
        INTERRUPTED = "interrupted", "Interrupted"
        SKIPPED = "skipped", "Skipped"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        API = "api", "API"
        SCHEDULE = "schedule", "Schedule"
        WEBHOOK = "webhook", "Webhook"
        # Started by another workflow's failed run (its settings.errorWorkflow): its own failure
        # starts nothing, so error workflows never chain or loop.
        ERROR = "error", "Error workflow"

    FINISHED = (Status.SUCCESS, Status.ERROR, Status.INTERRUPTED, Status.SKIPPED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # The workflow's organization, written with the row (save() takes it from the workflow) and
    # never changed: executions shard by it with the state (docs/scaling.md). The database's
    # primary key is (organization_id, id) and its foreign key to the workflow is composite,
    # (organization_id, workflow_id), both made by a migration's own SQL (Django cannot declare them).
    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+",
        editable=False,
    )
    # No index of its own: execution_workflow_queued leads with it.
    workflow = models.ForeignKey(
        Workflow, on_delete=models.CASCADE, related_name="executions", db_constraint=False, db_index=False
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    input = models.JSONField(default=dict, blank=True)
    node_results = models.JSONField(default=dict, blank=True)
    error = models.TextField(null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Refreshed by the process running it (executions.liveness): a running execution whose
    # heartbeat stops was left behind by a dead process, and housekeeping closes it as interrupted.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    scheduled_for = models.DateTimeField(null=True, blank=True)
    # A client's Idempotency-Key; released (set to NULL) after KEEPERSTATE_IDEMPOTENCY_HOURS.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A retry is a new execution with the input of the one it retries (a failed or interrupted run).
    # No database constraint: a key to workflow_execution would have to be (organization_id, id),
    # and SET NULL on it would null the organization; both runs are of one workflow, deleted with it.
    retry_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="retries", db_constraint=False
    )

    class Meta:
        db_table = "workflow_execution"
        ordering = ["-queued_at"]
        indexes = [
            # Django's pk: a run's own updates, the worker's claim, the API's and admin's pages find
            # an execution by id alone, which the primary key (organization_id, id) serves only
            # by reading all of it on Postgres before 18. Not unique: a
            # distributed table's unique indexes must hold its distribution column.
            models.Index(fields=["id"], name="workflow_execution_id_idx"),
            models.Index(fields=["workflow", "-queued_at"], name="execution_workflow_queued"),
            # Housekeeping looks only at unfinished runs.
            models.Index(
                fields=["heartbeat_at"], name="execution_unfinished", condition=Q(status__in=["queued", "running"])
            ),
        ]
        constraints = [
            # At most one execution per (workflow, scheduled tick), whatever the number of schedulers.
            models.UniqueConstraint(
                fields=["organization", "workflow", "scheduled_for"],
                name="execution_one_per_tick",
                condition=Q(scheduled_for__isnull=False),
            ),
            models.UniqueConstraint(
                fields=["organization", "workflow", "idempotency_key"],
                name="execution_idempotency_key",
                condition=Q(idempotency_key__isnull=False),
            ),
        ]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.organization_id is None and self.workflow_id is not None:
            self.organization_id = self.workflow.organization_id
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.workflow} @ {self.queued_at:%Y-%m-%d %H:%M:%S} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED
