"""The editor's JSON endpoints: @ autocomplete metadata, save, validate and run.

Each calls the keeperstate services (validate_graph, workflow_update, run_workflow) and
answers JSON; errors are ``{"code", "detail"}`` with a 4xx status, never a 500.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from builder.forms import normalise_graph
from builder.http import json_endpoint, json_error, read_json
from builder.references import reference_options
from keeperstate.access import get_workflow_for
from keeperstate.api.serializers import ExecutionOutput
from keeperstate.engine.validation import validate_graph
from keeperstate.executions import run_workflow
from keeperstate.models import WorkflowExecution
from keeperstate.workflows import WorkflowInvalid, workflow_update

MAX_NAME_LENGTH = 200


@json_endpoint
def references(request: HttpRequest) -> JsonResponse:
    body = read_json(request)
    return JsonResponse(reference_options(body.get("nodes"), body.get("edges"), body.get("nodeId")))


@json_endpoint
def validate(request: HttpRequest, workflow_id: Any) -> JsonResponse:
    get_workflow_for(request.user, workflow_id)
    body = read_json(request)
    return JsonResponse(validate_graph(normalise_graph(body.get("nodes")), body.get("edges")).as_dict())


@json_endpoint
def save(request: HttpRequest, workflow_id: Any) -> JsonResponse:
    workflow = get_workflow_for(request.user, workflow_id)
    body = read_json(request)
    changes: dict[str, Any] = {}
    if "name" in body:
        name = body["name"].strip() if isinstance(body["name"], str) else ""
        if not name or len(name) > MAX_NAME_LENGTH:
            return json_error(
                "INVALID_NAME", f"Give the workflow a name of 1 to {MAX_NAME_LENGTH} characters.", field="name"
            )
        changes["name"] = name
    if "nodes" in body or "edges" in body:
        changes["nodes"] = normalise_graph(body.get("nodes", workflow.nodes))
        changes["edges"] = body.get("edges", workflow.edges)
    try:
        workflow_update(workflow, **changes)
    except WorkflowInvalid as exc:
        return json_error(exc.code, exc.message, report=exc.report.as_dict())
    report = validate_graph(workflow.nodes, workflow.edges)
    return JsonResponse({
        "saved": True,
        "workflow": {
            "id": str(workflow.id),
            "name": workflow.name,
            "nodes": workflow.nodes,
            "edges": workflow.edges,
            "updatedAt": workflow.updated_at.isoformat(),
        },
        "report": report.as_dict(),
    })


@json_endpoint
def run(request: HttpRequest, workflow_id: Any) -> JsonResponse:
    """Run the saved workflow with ``{"input": {...}}``; the editor saves first."""
    workflow = get_workflow_for(request.user, workflow_id)
    body = read_json(request)
    execution = run_workflow(workflow, body.get("input"), trigger=WorkflowExecution.Trigger.MANUAL, user=request.user)
    return JsonResponse({"execution": execution_as_dict(execution)})


def execution_as_dict(execution: WorkflowExecution) -> dict[str, Any]:
    """The API's execution shape: the editor reads exactly what API clients read."""
    return dict(ExecutionOutput(execution).data)
