"""The secrets API (DESIGN.md §12): names and dates out, values in, never a value back.

``GET /api/secrets/`` lists the secrets of your organizations (``?organization=`` for one),
``PUT /api/secrets/<name>/`` creates (201) or replaces (200) one, ``DELETE`` removes it (204).
Writes go through keeperstate.secrets.store like the editor's and admin's.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from keeperstate.accounts.access import organizations_of
from keeperstate.api.authentication import api_authentication_classes
from keeperstate.api.exceptions import field_checked
from keeperstate.api.fields import TextField
from keeperstate.api.metadata import ApiMetadata
from keeperstate.api.pagination import Pagination
from keeperstate.api.parsers import JSONParser
from keeperstate.api.schema import errors
from keeperstate.api.serializers import WorkflowListQuery, _OrganizationInput
from keeperstate.core.errors import CodedError
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.names import MAX_SECRET_BYTES, SecretNotFound, check_name, check_value
from keeperstate.secrets.store import secret_delete, secret_put, secrets_of


class SecretOutput(serializers.ModelSerializer):
    organization: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="The slug of the secret's organization."
    )
    reference = serializers.SerializerMethodField(help_text="What a field writes to use it.")
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)

    class Meta:
        model = OrganizationSecret
        fields = ["name", "organization", "reference", "createdAt", "updatedAt"]

    def get_reference(self, secret: OrganizationSecret) -> str:
        return f"<<@__secrets:Secrets.{secret.name}>>"


class SecretPutInput(_OrganizationInput):
    value = TextField(
        trim_whitespace=False,
        min_length=1,
        max_length=MAX_SECRET_BYTES,
        help_text=f"The secret (at most {MAX_SECRET_BYTES} bytes). Stored encrypted; never returned.",
        style={"input_type": "password"},
    )

    def validate_value(self, value: str) -> str:
        return field_checked(check_value, value)


class SecretOrganizationQuery(_OrganizationInput):
    pass


class SecretListQuery(WorkflowListQuery):
    organization = serializers.CharField(
        required=False, allow_blank=True, max_length=100,
        help_text="Only the secrets of this organization (slug or id).",
    )



class _SecretsView(GenericAPIView):
    authentication_classes = api_authentication_classes()
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    metadata_class = ApiMetadata  # type: ignore[assignment]
    queryset = OrganizationSecret.objects.none()
    serializer_class = SecretOutput


@extend_schema(tags=["secrets"])
class SecretListView(_SecretsView):
    pagination_class = Pagination

    @extend_schema(
        summary="Your organizations' secrets: names and dates, never values",
        parameters=[SecretListQuery],
        responses={200: SecretOutput(many=True), **errors(400, 401, 404)},
    )
    def get(self, request: Request) -> Response:
        query = SecretListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        secrets = secrets_of(organizations_of(request.user)).filter(query.organization_filter())
        page = self.paginate_queryset(secrets)
        return self.get_paginated_response(SecretOutput(page, many=True).data)


NAME_PARAMETER = OpenApiParameter(
    "name", str, OpenApiParameter.PATH, description="Letters, digits and _ (1–64), e.g. API_KEY."
)


@extend_schema(tags=["secrets"])
class SecretDetailView(_SecretsView):
    @extend_schema(
        summary="Create or replace a secret (the answer never holds the value)",
        parameters=[NAME_PARAMETER],
        request=SecretPutInput,
        responses={201: SecretOutput, 200: SecretOutput, **errors(400, 401, 403, 409, with_body=True)},
    )
    def put(self, request: Request, name: str) -> Response:
        name = _name(name)
        data = SecretPutInput(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        secret, created = secret_put(
            organization=data.validated_data["organization"], name=name, value=data.validated_data["value"],
            user=request.user,
        )
        return Response(SecretOutput(secret).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        summary="Delete a secret; fields that use it stop resolving",
        parameters=[NAME_PARAMETER, SecretOrganizationQuery],
        responses={204: None, **errors(400, 401, 403, 404)},
    )
    def delete(self, request: Request, name: str) -> Response:
        name = _name(name)
        query = SecretOrganizationQuery(data=request.query_params, context={"request": request})
        query.is_valid(raise_exception=True)
        if not secret_delete(organization=query.validated_data["organization"], name=name, user=request.user):
            raise SecretNotFound(f"Your organization has no secret '{name}'.")
        return Response(status=status.HTTP_204_NO_CONTENT)


def _name(name: str) -> str:
    try:
        return check_name(name)
    except CodedError as exc:
        raise serializers.ValidationError({"name": [exc.message]}) from exc
