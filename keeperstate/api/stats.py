"""``GET /api/workflows/<id>/executions/stats/``: the Runs chart (keeperstate.executions.stats).
A click on one of its buckets lists the bucket's runs with the runs list's since and until."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import get_workflow_for
from keeperstate.api.schema import errors
from keeperstate.api.views import JSONOnly
from keeperstate.core.buckets import RANGES, parse_range
from keeperstate.executions.stats import STATUSES, run_stats


class StatsBucketOutput(serializers.Serializer):
    start = serializers.DateTimeField(help_text="The bucket holds runs queued from here…")
    end = serializers.DateTimeField(help_text="…up to (not including) here.")
    success = serializers.IntegerField()
    error = serializers.IntegerField()
    interrupted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    total = serializers.IntegerField()
    p50Ms = serializers.FloatField(allow_null=True, help_text="Median duration (ms) of the runs that started.")
    p95Ms = serializers.FloatField(allow_null=True, help_text="95th percentile duration (ms).")


class StatsTotalsOutput(serializers.Serializer):
    success = serializers.IntegerField()
    error = serializers.IntegerField()
    interrupted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    total = serializers.IntegerField()


class ExecutionStatsOutput(serializers.Serializer):
    range = serializers.ChoiceField(choices=list(RANGES))
    bucketSeconds = serializers.IntegerField()
    # "from" is a Python keyword: declared below under its wire name.
    to = serializers.DateTimeField()
    statuses = serializers.ListField(child=serializers.ChoiceField(choices=list(STATUSES)))
    totals = StatsTotalsOutput()
    buckets = StatsBucketOutput(many=True)

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {"range": fields.pop("range"), "bucketSeconds": fields.pop("bucketSeconds"),
                "from": serializers.DateTimeField(), **fields}


class ExecutionStatsView(JSONOnly):
    @extend_schema(
        tags=["executions"],
        summary="The workflow's finished runs per time bucket, by status, with duration p50 and p95",
        description="1h: 30 buckets of 2 minutes; 24h: 24 of an hour; 7d: 28 of 6 hours, the last holding now. "
        "Runs are placed by queuedAt; queued and running runs are not counted. A bad range is "
        "STATS_INVALID_RANGE.",
        parameters=[OpenApiParameter("range", str, enum=list(RANGES), description="1h, 24h (default) or 7d.")],
        responses={200: ExecutionStatsOutput, **errors(400, 401, 404)},
    )
    def get(self, request: Request, pk: str) -> Response:
        workflow = get_workflow_for(request.user, pk)  # another organization's: 404
        span = parse_range(request.query_params.get("range"))
        return Response(run_stats(workflow=workflow, span=span))
