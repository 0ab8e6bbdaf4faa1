"""OpenAPI pieces the serializers cannot say themselves: the field-error shape and the error
responses each endpoint can give (drf-spectacular reads them from @extend_schema)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from keeperstate.api.serializers import ErrorOutput, FieldErrorsOutput, WorkflowInvalidOutput


class FieldErrorsSchema(OpenApiSerializerExtension):
    target_class = FieldErrorsOutput

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return {
            "type": "object",
            "description": 'Field errors: each input field at fault with its messages, e.g. {"name": '
            '["This field is required."]}. Errors inside a list are keyed by the item\'s index.',
            "additionalProperties": {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "object"}]},
        }


_DESCRIPTIONS = {
    400: "Bad input: field errors, or an error with a code.",
    401: "Not authenticated: send a token (Authorization: Token …) or log in for a session.",
    403: "Not allowed (e.g. a hard delete by a member, or a session write without its CSRF token).",
    404: "No such object among those of your organizations.",
    409: "A conflict with what is stored: WORKFLOW_DELETED (the workflow was deleted while the run was in "
    "progress), SECRET_LIMIT (the organization keeps as many secrets as it may).",
    413: "The request body is too large.",
    415: "The body is not JSON.",
}


IDEMPOTENCY_KEY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description="Up to 200 characters, kept 24 h per workflow: a retry with the same key answers the first "
    "execution instead of running again.",
)


class _AnyOf(serializers.Serializer):
    """A response that is one of several shapes (anyOf: a coded error's ``details`` is free-form,
    so WORKFLOW_INVALID also matches the plain error shape, which oneOf would refuse)."""

    shapes: tuple[type[serializers.Serializer], ...] = ()


class AnyOfSchema(OpenApiSerializerExtension):
    target_class = _AnyOf
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return {"anyOf": [auto_schema.resolve_serializer(shape, direction).ref for shape in self.target.shapes]}


class BadRequest(_AnyOf):
    shapes = (FieldErrorsOutput, ErrorOutput)


class WorkflowBadRequest(_AnyOf):
    shapes = (FieldErrorsOutput, WorkflowInvalidOutput, ErrorOutput)


def errors(
    *statuses: int, bad_request: type[_AnyOf] = BadRequest, with_body: bool = False
) -> dict[int, OpenApiResponse]:
    """The error responses of an endpoint, for @extend_schema(responses={..., **errors(...)}).
    ``with_body``: the endpoint reads a JSON body, so it can also answer 413 and 415."""
    responses = {}
    for code in (*statuses, 413, 415) if with_body else statuses:
        body = bad_request if code == 400 else ErrorOutput
        responses[code] = OpenApiResponse(response=body, description=_DESCRIPTIONS[code])
    return responses


class TokenScheme(OpenApiAuthenticationExtension):
    """Our knox-based token class in the schema: an API key in the Authorization header."""

    target_class = "keeperstate.api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "Token-based authentication with required prefix \"Token\" (hashed at rest; "
            "create one at POST /api/tokens/ or with manage.py create_api_token).",
        }
