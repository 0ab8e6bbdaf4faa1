"""``POST /builder/references/``: the editor's @ autocomplete for the unsaved graph it holds.

A read: it answers what a node may reference (builder.references) and writes nothing; every
write the editor makes goes to the API. Bodies are read by the one input reader, errors answer
the catalogue's JSON shape (builder.http).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from builder.http import json_endpoint, read_json
from builder.references import reference_options
from keeperstate.accounts.access import get_workflow_for
from keeperstate.executions.selectors import last_node_results
from keeperstate.secrets.store import secret_names


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
