"""``GET /builder/workflows/<id>/state-chart/?key=<key>&range=24h``: a key over time for the
State panel's chart (keeperstate.state.charts, the query module admin's state page reads too).

Read-only and scoped like the State panel: another organization's workflow answers 404, an
invalid key STATE_INVALID_KEY, a bad range STATS_INVALID_RANGE. (``…/state/`` under the API is
DESIGN.md §15's; this path is the builder's own.)
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from builder.http import json_read_endpoint
from keeperstate.accounts.access import get_workflow_for
from keeperstate.core.buckets import parse_range
from keeperstate.state.charts import key_series
from keeperstate.state.store import StateScope
from keeperstate.state.values import normalize_key


@never_cache
@json_read_endpoint
def state_chart(request: HttpRequest, workflow_id: Any) -> JsonResponse:
    workflow = get_workflow_for(request.user, workflow_id)  # another organization's: 404
    key = normalize_key(request.GET.get("key", ""))
    span = parse_range(request.GET.get("range"))
    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    return JsonResponse(key_series(scope=scope, key=key, span=span))
