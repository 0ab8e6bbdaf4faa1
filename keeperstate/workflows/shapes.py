"""The one JSON shape of a workflow, for every adapter: the API's answers, the MCP's tools and the
editor's page. The API's serializers (keeperstate.api.serializers) describe these shapes for the
OpenAPI schema; tests/api/test_shapes.py holds each serializer's fields equal to its shape's keys."""

from __future__ import annotations

from typing import Any

from keeperstate.core.times import json_time
from keeperstate.workflows.models import Workflow


def workflow_brief_json(workflow: Workflow) -> dict[str, Any]:
    """A workflow as the MCP's list_workflows names it (DESIGN.md §16)."""
    return {"id": str(workflow.id), "name": workflow.name, "active": workflow.active,
            "nextRunAt": json_time(workflow.next_run_at)}


def workflow_summary_json(workflow: Workflow) -> dict[str, Any]:
    """A workflow in a list (GET /api/workflows/, list_workflows): everything but its graph and webhook."""
    return {
        "id": str(workflow.id),
        "organization": workflow.organization.slug,
        "name": workflow.name,
        "description": workflow.description,
        "active": workflow.active,
        "nextRunAt": json_time(workflow.next_run_at),
        "createdBy": workflow.created_by.username if workflow.created_by else None,
        "createdAt": json_time(workflow.created_at),
        "updatedAt": json_time(workflow.updated_at),
    }


def workflow_json(workflow: Workflow) -> dict[str, Any]:
    """One workflow (GET /api/workflows/<id>/, get_workflow): the summary, its webhook and its graph."""
    return {
        **workflow_summary_json(workflow),
        "webhookUrl": workflow.webhook_path,
        "webhookSecret": workflow.webhook_secret,
        "settings": workflow.settings,
        "nodes": workflow.nodes,
        "edges": workflow.edges,
    }
