"""Reads of executions for people and screens (the editor's autocomplete, lists)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow


def of_workflow(workflow: Workflow) -> QuerySet[WorkflowExecution]:
    """The workflow's executions, by its key (organization, workflow): the related manager names the
    workflow alone, which a sharded database sends to every shard (docs/scaling.md)."""
    return WorkflowExecution.objects.filter(organization_id=workflow.organization_id, workflow_id=workflow.pk)


def last_node_results(workflow: Workflow) -> dict[str, Any]:
    """The node results of the workflow's most recently finished run ({} when it never ran)."""
    results = (
        of_workflow(workflow).filter(finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("node_results", flat=True)
        .first()
    )
    return results if isinstance(results, dict) else {}


def executions_of(
    workflow: Workflow,
    *,
    status: str | None = None,
    trigger: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[WorkflowExecution]:
    """The workflow's executions, newest first, narrowed by status, trigger and queue time
    (``since`` inclusive, ``until`` exclusive): the API's list and the editor's Runs tab."""
    runs = of_workflow(workflow).select_related("triggered_by")
    if status:
        runs = runs.filter(status=status)
    if trigger:
        runs = runs.filter(trigger=trigger)
    if since is not None:
        runs = runs.filter(queued_at__gte=since)
    if until is not None:
        runs = runs.filter(queued_at__lt=until)
    return runs.order_by("-queued_at", "id")
