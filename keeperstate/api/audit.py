"""``GET /api/audit/``: the audit log of the organizations you own or administer, newest first."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import administered_organizations
from keeperstate.api.pagination import Pagination
from keeperstate.api.schema import errors
from keeperstate.api.views import JSONOnly
from keeperstate.audit.models import AuditEvent


class AuditEventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    createdAt = serializers.DateTimeField(source="created_at")
    action = serializers.CharField()
    actor = serializers.CharField(source="actor_name")
    organization = serializers.CharField(source="organization.slug", default=None, allow_null=True)
    targetType = serializers.CharField(source="target_type")
    targetId = serializers.CharField(source="target_id")
    target = serializers.CharField(source="target_repr")
    address = serializers.CharField(allow_null=True)
    details = serializers.JSONField()


class AuditListView(JSONOnly):
    pagination_class = Pagination

    @extend_schema(
        tags=["audit"],
        summary="Audit log of the organizations you own or administer",
        parameters=[
            OpenApiParameter("organization", str, description="Only this organization (slug)."),
            OpenApiParameter("action", str, description="Only this action, e.g. workflow.update."),
        ],
        responses={200: AuditEventOutput(many=True), **errors(400, 401, 404)},
    )
    def get(self, request: Request) -> Response:
        events = AuditEvent.objects.filter(organization__in=administered_organizations(request.user))
        if slug := request.query_params.get("organization"):
            events = events.filter(organization__slug=slug)
        if action := request.query_params.get("action"):
            events = events.filter(action=action)
        paginator = Pagination()
        page = paginator.paginate_queryset(events.select_related("organization"), request, view=self)
        return paginator.get_paginated_response(AuditEventOutput(page, many=True).data)
