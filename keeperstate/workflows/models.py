"""Workflows: a React Flow graph of nodes and edges in an organization."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from keeperstate.accounts.models import Membership, Organization
from keeperstate.core.sharding import KeepsOrganization


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


class WorkflowQuerySet(models.QuerySet["Workflow"]):
    """Each rule about which workflows count, in its two forms side by side: the ORM's (the method)
    and SQL's (``…_sql``, a condition on ``workflow`` under a table alias, for the statements written
    once on every request's path, keeperstate.core.rows). tests/api/test_access.py holds
    visible_to and visible_to_sql (alive and alive_sql within it) equal."""

    def alive(self) -> WorkflowQuerySet:
        """Not soft-deleted: a soft-deleted workflow is hidden everywhere (its state is kept)."""
        return self.filter(deleted_at__isnull=True)

    @staticmethod
    def alive_sql(alias: str) -> str:
        return f'{alias}."deleted_at" IS NULL'

    def visible_to(self, user: Any) -> WorkflowQuerySet:
        """Alive, and in one of the organizations the user is a member of; none for anonymous."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.alive().filter(organization_id__in=Membership.objects.filter(user=user).values("organization_id"))

    @staticmethod
    def visible_to_sql(alias: str, user: str = "%s") -> str:
        """visible_to() as SQL; ``user`` is the placeholder that receives the user's id."""
        return (
            f'{WorkflowQuerySet.alive_sql(alias)} AND {alias}."organization_id" IN '
            f'(SELECT m."organization_id" FROM "{Membership._meta.db_table}" m WHERE m."user_id" = {user})'
        )


class Workflow(KeepsOrganization):
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
    # Only active workflows run on their schedule or by webhook (DESIGN.md §11).
    active = models.BooleanField(default=False)
    # Shown to members (the webhook's caller needs it), so stored as is; compared in constant time.
    webhook_secret = models.CharField(max_length=64, default=new_webhook_secret)
    # The schedule's next due tick; NULL when the workflow is inactive, deleted or not scheduled.
    # Written by keeperstate.executions.scheduling, read by the scheduler.
    next_run_at = models.DateTimeField(null=True, blank=True)
    # The workflow's settings (keeperstate.workflows.settings): {"errorWorkflow": "<id>"} runs that
    # workflow when a run of this one ends in error.
    settings = models.JSONField(default=dict, blank=True)

    objects = WorkflowQuerySet.as_manager()

    class Meta:
        db_table = "workflow"
        ordering = ["-updated_at"]
        # The primary key in the database is (organization_id, id) (docs/scaling.md):
        # the target of every composite foreign key (organization_id, workflow_id) into it, which
        # keeps a state row's or an execution's organization equal to its workflow's. Django
        # still addresses a workflow by id alone (a webhook, the API's and admin's pages): that
        # has an index of its own (not unique, as on workflow_execution).
        indexes = [
            models.Index(fields=["id"], name="workflow_id_idx"),
            # The scheduler's one query: active, alive workflows whose tick is due.
            models.Index(
                fields=["next_run_at"],
                name="workflow_due",
                condition=Q(active=True, deleted_at__isnull=True, next_run_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def webhook_path(self) -> str:
        return f"/hooks/{self.id}/"

    def soft_delete(self) -> None:
        """Hide the workflow and stop its schedule; its state stays."""
        self.deleted_at = timezone.now()
        self.next_run_at = None
        self.save(update_fields=["deleted_at", "next_run_at", "updated_at"])


class WorkflowVersion(KeepsOrganization):
    """A saved state of a workflow's name and graph: every save that changes them keeps one
    (keeperstate.workflows.versions), numbered 1, 2, … per workflow, with who saved it and what
    changed since the version before. Restoring one saves its graph again, as a new version.

    It shards with its workflow (docs/scaling.md): ``organization_id`` leads its keys, and its
    foreign key to the workflow is ``(organization_id, workflow_id)``, made by its migration's own
    SQL (Django's own constraints are off, as on the execution)."""

    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions", db_constraint=False,
                                 db_index=False)
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    nodes = models.JSONField(default=list, blank=True)
    edges = models.JSONField(default=list, blank=True)
    # What changed since the version before: {"nodes": {"added", "removed", "changed", "moved"},
    # "edges": {"added", "removed"}, "renamed"}, and its one-line summary.
    changes = models.JSONField(default=dict, blank=True)
    summary = models.CharField(max_length=300)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "workflow_version"
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "workflow", "number"], name="workflow_version_number_unique"
            ),
        ]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.organization_id is None and self.workflow_id is not None:
            self.organization_id = self.workflow.organization_id  # the workflow's shard, as an execution's
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.workflow} v{self.number}"
