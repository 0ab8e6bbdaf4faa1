"""Workflows (a React Flow graph) and their executions."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from keeperstate.models.org import Organization


class WorkflowQuerySet(models.QuerySet["Workflow"]):
    def alive(self) -> WorkflowQuerySet:
        return self.filter(deleted_at__isnull=True)


class Workflow(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="workflows")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    nodes = models.JSONField(default=list, blank=True)
    edges = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Soft delete hides the workflow everywhere but keeps its state (DESIGN.md §6, Lifecycle).
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = WorkflowQuerySet.as_manager()

    class Meta:
        db_table = "workflow"
        ordering = ["-updated_at"]
        constraints = [
            # Target of workflow_state's composite foreign key (workflow_id, organization_id),
            # which keeps a state row's organization equal to its workflow's.
            models.UniqueConstraint(fields=["id", "organization"], name="workflow_id_organization_unique"),
        ]

    def __str__(self) -> str:
        return self.name

    def soft_delete(self) -> None:
        self.deleted_at = timezone.now()
        self.save(update_fields=["deleted_at", "updated_at"])


class WorkflowExecution(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCESS = "success", "Success"
        ERROR = "error", "Error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="executions")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    input = models.JSONField(default=dict, blank=True)
    node_results = models.JSONField(default=dict, blank=True)
    error = models.TextField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        db_table = "workflow_execution"
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["workflow", "-started_at"], name="execution_workflow_started")]

    def __str__(self) -> str:
        return f"{self.workflow} @ {self.started_at:%Y-%m-%d %H:%M:%S} ({self.status})"
