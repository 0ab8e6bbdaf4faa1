"""Reads of executions for people and screens (the editor's autocomplete, lists)."""

from __future__ import annotations

from typing import Any

from keeperstate.workflows.models import Workflow


def last_node_results(workflow: Workflow) -> dict[str, Any]:
    """The node results of the workflow's most recently finished run ({} when it never ran)."""
    results = (
        workflow.executions.filter(finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("node_results", flat=True)
        .first()
    )
    return results if isinstance(results, dict) else {}
