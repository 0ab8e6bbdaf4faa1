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
from keeperstate.accounts.access import get_workflow_for
from keeperstate.api.serializers import execution_as_dict
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.store import secret_names
from keeperstate.workflows.services import WorkflowInvalid, workflow_update


@json_endpoint
def references(request: HttpRequest) -> JsonResponse:
    body = read_json(request)
    extras: dict[str, Any] = {}
    if body.get("workflowId"):
        # the editor names its workflow: offer its organization's secrets and its last run's answers
        workflow = get_workflow_for(request.user, body["workflowId"])
        extras["secret_names"] = secret_names(workflow.organization_id)
        extras["last_results"] = last_node_results(workflow)
    return JsonResponse(reference_options(body.get("nodes"), body.get("edges"), body.get("nodeId"), **extras))


def last_node_results(workflow: Any) -> dict[str, Any]:
    results = (
        workflow.executions.filter(finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("node_results", flat=True)
        .first()
    )
    return results if isinstance(results, dict) else {}


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
        changes["name"] = body["name"]  # checked by workflow_update, like every other way in
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

