"""A workflow's state as the editor's State panel shows it, beside DESIGN.md §15's keys:

* ``GET /api/workflows/<id>/state-summary/``: the live keys (each §15 entry with ``sizeBytes``),
  the newest changes of any key, and the organization's and the workflow's usage against limits;
* ``GET /api/workflows/<id>/state-history/?key=``: the newest changes of the workflow's keys, or of
  one key (named in the query, so any key can be, whatever it holds);
* ``GET /api/workflows/<id>/state-chart/?key=&range=``: a key over time (keeperstate.state.charts),
  with what the runs read of it over the whole range (keeperstate.executions.readings).

Reads only, through the state selectors, in the shapes of keeperstate.state.shapes; scoped and
authenticated like every state route (keeperstate.api.state).
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import get_workflow_for
from keeperstate.api.fields import WholeNumberField
from keeperstate.api.schema import errors
from keeperstate.api.state import StateEntryOutput, StateEventOutput, _StateView
from keeperstate.core.buckets import RANGES, parse_range
from keeperstate.executions.readings import key_readings
from keeperstate.state.charts import key_series
from keeperstate.state.clients import MAX_PAGE
from keeperstate.state.selectors import org_usage, state_entries, state_history
from keeperstate.state.store import StateScope
from keeperstate.state.values import normalize_key

SUMMARY_HISTORY = 50


class StoredEntryOutput(StateEntryOutput):
    sizeBytes = serializers.IntegerField(help_text="What the key costs of the organization's byte budget.")


class KeyedEventOutput(StateEventOutput):
    key = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {"key": fields.pop("key"), **fields}


class UsageOutput(serializers.Serializer):
    liveKeys = serializers.IntegerField()
    maxKeys = serializers.IntegerField()
    storedBytes = serializers.IntegerField()
    maxBytes = serializers.IntegerField()


class LimitsOutput(serializers.Serializer):
    keysPerWorkflow = serializers.IntegerField()


class StateSummaryOutput(serializers.Serializer):
    entries = StoredEntryOutput(many=True, help_text="The live keys, in key order.")
    history = KeyedEventOutput(many=True, help_text=f"The newest {SUMMARY_HISTORY} changes of any key.")
    usage = UsageOutput(help_text="The organization's live keys and stored bytes against its budget.")
    limits = LimitsOutput()


class KeyedHistoryOutput(serializers.Serializer):
    results = KeyedEventOutput(many=True)


class StateHistoryQuery(serializers.Serializer):
    key = serializers.CharField(required=False, trim_whitespace=False, help_text="Only this key's changes.")
    pageSize = WholeNumberField(required=False, default=SUMMARY_HISTORY, min_value=1, max_value=MAX_PAGE,
                                help_text=f"The newest changes to show, 1 to {MAX_PAGE} (default {SUMMARY_HISTORY}).")


class StateChartOutput(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.ChoiceField(choices=["numbers", "writes", "empty"],
                                   help_text="numbers: every kept value is a number; writes: any other key; "
                                   "empty: no history.")
    events = serializers.IntegerField(help_text="The history events read.")
    points = serializers.ListField(child=serializers.JSONField(), required=False,
                                   help_text="numbers: {at, value, version, operation, execution, actor}, oldest "
                                   "first (a deletion's value is null).")
    range = serializers.CharField(required=False)
    bucketSeconds = serializers.IntegerField(required=False)
    buckets = serializers.ListField(child=serializers.JSONField(), required=False,
                                    help_text="writes: {start, end, writes, deletes} per bucket of the range.")
    runs = serializers.JSONField(
        help_text="What the runs read of the key over the whole range (its State Get and State Increment nodes "
        "of a literal key): {range, bucketSeconds, nodes, buckets: [{start, end, last, min, max, reads}]}; the "
        "history keeps a key's newest changes only.")


@extend_schema(tags=["state"])
class StateSummaryView(_StateView):
    @extend_schema(
        summary="The workflow's live keys, their newest changes and the usage against the limits (the State panel)",
        responses={200: StateSummaryOutput, **errors(401, 404)},
    )
    def get(self, request: Request, pk: str) -> Response:
        scope = self.scope(request, pk)
        return Response({
            "entries": state_entries(scope=scope),
            "history": state_history(scope=scope, limit=SUMMARY_HISTORY),
            "usage": org_usage(scope.organization_id).as_dict(),
            "limits": {"keysPerWorkflow": settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW},
        })


@extend_schema(tags=["state"])
class StateHistoryListView(_StateView):
    @extend_schema(
        summary="The newest changes of the workflow's keys, or of one key (?key=), newest first",
        parameters=[StateHistoryQuery],
        responses={200: KeyedHistoryOutput, **errors(400, 401, 404)},
    )
    def get(self, request: Request, pk: str) -> Response:
        scope = self.scope(request, pk)
        query = StateHistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        key = normalize_key(query.validated_data["key"]) if "key" in query.validated_data else None
        return Response({"results": state_history(scope=scope, key=key, limit=query.validated_data["pageSize"])})


@extend_schema(tags=["state"])
class StateChartView(_StateView):
    @extend_schema(
        summary="A key over time, from the history the store keeps and the runs' own records (the State panel's chart)",
        parameters=[
            OpenApiParameter("key", str, required=True, description="The key."),
            OpenApiParameter("range", str, enum=list(RANGES), description="1h, 24h (default) or 7d."),
        ],
        responses={200: StateChartOutput, **errors(400, 401, 404)},
    )
    def get(self, request: Request, pk: str) -> Response:
        workflow = get_workflow_for(request.user, pk)  # 404 for another organization's
        scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
        key = normalize_key(request.query_params.get("key", ""))
        span = parse_range(request.query_params.get("range"))
        return Response({**key_series(scope=scope, key=key, span=span), "runs": key_readings(workflow, key, span)})
