"""The API's JSON of a workflow and an execution, for tool answers (§16: "the workflow JSON of the
API"). Adapters do not import each other, so the MCP spells the shapes itself from the models;
tests/mcp/test_shapes.py holds each equal to the API's answer for the same object."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework.fields import DateTimeField

from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow

_DATETIME = DateTimeField()  # DRF's own formatting: the time zone and "Z" as the API writes them


def when(value: datetime | None) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


def workflow_summary(workflow: Workflow) -> dict[str, Any]:
    """What list_workflows shows of each workflow."""
    return {"id": str(workflow.id), "name": workflow.name, "active": workflow.active,
            "nextRunAt": when(workflow.next_run_at)}


def workflow_json(workflow: Workflow) -> dict[str, Any]:
    """GET /api/workflows/<id>/."""
    return {
        "id": str(workflow.id),
        "organization": workflow.organization.slug,
        "name": workflow.name,
        "description": workflow.description,
        "active": workflow.active,
        "nextRunAt": when(workflow.next_run_at),
        "webhookUrl": workflow.webhook_path,
        "webhookSecret": workflow.webhook_secret,
        "nodes": workflow.nodes,
        "edges": workflow.edges,
        "createdBy": workflow.created_by.username if workflow.created_by else None,
        "createdAt": when(workflow.created_at),
        "updatedAt": when(workflow.updated_at),
    }


def execution_json(execution: WorkflowExecution) -> dict[str, Any]:
    """GET /api/executions/<id>/."""
    return {
        "id": str(execution.id),
        "workflow": str(execution.workflow_id),
        "status": execution.status,
        "trigger": execution.trigger,
        "triggeredBy": execution.triggered_by.username if execution.triggered_by else None,
        "input": execution.input,
        "nodeResults": execution.node_results,
        "error": execution.error,
        "errorCode": execution.error_code,
        "queuedAt": when(execution.queued_at),
        "startedAt": when(execution.started_at),
        "finishedAt": when(execution.finished_at),
        "scheduledFor": when(execution.scheduled_for),
        "retryOf": str(execution.retry_of_id) if execution.retry_of_id else None,
    }
