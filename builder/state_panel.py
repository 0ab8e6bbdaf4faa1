"""The editor's read-only State panel: what the workflow holds now, how it got there, and how
much of the organization's budget it uses.

Reads go through the store's selectors only (state_entries, state_history, org_usage); this
module writes nothing and answers GET alone. DESIGN.md §9 keeps state out of the API; the panel
is the builder's own view for the workflow's authors, scoped like every editor endpoint.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from builder.http import json_read_endpoint
from keeperstate.accounts.access import get_workflow_for
from keeperstate.state.selectors import org_usage, state_entries, state_history
from keeperstate.state.store import StateScope
from keeperstate.state.values import normalize_key

HISTORY_LIMIT = 50


@never_cache
@json_read_endpoint
def workflow_state(request: HttpRequest, workflow_id: Any) -> JsonResponse:
    """``{"entries", "history", "usage", "limits"}`` for the workflow; with ``?key=`` only
    ``{"key", "history"}`` of that key (an invalid key is a 400 with STATE_INVALID_KEY)."""
    workflow = get_workflow_for(request.user, workflow_id)  # another organization's: 404
    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    if "key" in request.GET:
        key = normalize_key(request.GET["key"])
        return JsonResponse({"key": key, "history": state_history(scope=scope, key=key, limit=HISTORY_LIMIT)})
    return JsonResponse({
        "entries": state_entries(scope=scope),
        "history": state_history(scope=scope, limit=HISTORY_LIMIT),
        "usage": org_usage(workflow.organization_id).as_dict(),
        "limits": {"keysPerWorkflow": settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW},
    })
