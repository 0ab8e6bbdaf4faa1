"""Reads of workflows for screens: the list a person sees."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from keeperstate.accounts.access import workflows_visible_to
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow


def workflows_for_list(user: Any) -> QuerySet[Workflow]:
    """The user's workflows with their newest run's status and time, in one query."""
    # Joined on the workflow's key (organization, id): a subquery on its id alone is a join a sharded
    # database refuses (docs/scaling.md).
    newest = WorkflowExecution.objects.filter(
        organization_id=OuterRef("organization_id"), workflow=OuterRef("pk")
    ).order_by("-queued_at")
    return (
        workflows_visible_to(user)
        .select_related("organization")
        .annotate(last_run_status=Subquery(newest.values("status")[:1]),
                  last_run_at=Subquery(newest.values("queued_at")[:1]))
        .order_by("-updated_at", "id")
    )
