"""The time window the runs list takes (``GET /api/workflows/<id>/executions/?queuedFrom=…&queuedBefore=…``),
so that a click on a bucket of the Runs chart (keeperstate.api.stats) lists that bucket's runs."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request

from keeperstate.executions.models import WorkflowExecution


class WindowQuery(serializers.Serializer):
    queuedFrom = serializers.DateTimeField(required=False, help_text="Only runs queued at or after this time.")
    queuedBefore = serializers.DateTimeField(required=False, help_text="Only runs queued before this time.")


WINDOW_PARAMETERS = [
    OpenApiParameter("queuedFrom", str, description="ISO 8601: only runs queued at or after it (a bucket's start)."),
    OpenApiParameter("queuedBefore", str, description="ISO 8601: only runs queued before it (a chart bucket's end)."),
]


def in_window(executions: QuerySet[WorkflowExecution], request: Request) -> QuerySet[WorkflowExecution]:
    """The runs queued in ``[queuedFrom, queuedBefore)`` when the query names either; a bad time is
    a 400 with field errors."""
    query = WindowQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    if "queuedFrom" in query.validated_data:
        executions = executions.filter(queued_at__gte=query.validated_data["queuedFrom"])
    if "queuedBefore" in query.validated_data:
        executions = executions.filter(queued_at__lt=query.validated_data["queuedBefore"])
    return executions
