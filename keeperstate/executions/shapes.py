"""The one JSON shape of an execution, and of a node run on its own (Test step), for every adapter:
the API's answers, the webhook's, the MCP's tools and the editor (which reads them from the API).
keeperstate.api.serializers' ExecutionOutput and TestStepOutput describe them for the OpenAPI
schema; tests/api/test_shapes.py holds them equal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keeperstate.core.times import json_time
from keeperstate.executions.models import WorkflowExecution

if TYPE_CHECKING:
    from keeperstate.engine.results import Failed, Succeeded
    from keeperstate.executions.service import StepResult


def execution_json(execution: WorkflowExecution) -> dict[str, Any]:
    """An execution with each node's result (DESIGN.md §4, §11)."""
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
        "queuedAt": json_time(execution.queued_at),
        "startedAt": json_time(execution.started_at),
        "finishedAt": json_time(execution.finished_at),
        "scheduledFor": json_time(execution.scheduled_for),
        "retryOf": str(execution.retry_of_id) if execution.retry_of_id else None,
    }


def step_json(step: StepResult) -> dict[str, Any]:
    """One node run on its own (POST /api/workflows/<id>/test-step/)."""
    return {
        "node": step.node_id,
        "result": step.result,
        "handle": step.handle,
        "wroteState": step.wrote,
        "sourceExecution": str(step.source.id) if step.source else None,
    }


def preview_json(result: Succeeded | Failed, source: WorkflowExecution | None) -> dict[str, Any]:
    """A field's live preview (POST /api/workflows/<id>/preview/): the value as a node result, and
    the run whose data it read."""
    return {"result": result.to_json(), "sourceExecution": str(source.id) if source else None}
