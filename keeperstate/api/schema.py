"""OpenAPI pieces the serializers cannot say themselves: the field-error shape and the error
responses each endpoint can give (drf-spectacular reads them from @extend_schema)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
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


# What this schema cannot say: a graph is checked beyond its shape (graph validation).
_GRAPH_400 = (
    "Bad input. A body can match this schema and still be refused, because a graph is validated beyond "
    "its shape: WORKFLOW_INVALID with the validation report in details (exactly one trigger; known "
    "trigger and action types; node ids and labels of visible text; each config field parsed by its "
    "action's field, e.g. a Schedule interval in ASCII digits; references to nodes that run earlier; no "
    "cycle; text without U+0000 anywhere). POST /api/workflows/validate/ answers the same report without "
    "saving. Field errors and other codes as elsewhere."
)


# A whole graph the validator accepts, as the example of the operations that take one: examples of
# its parts alone (a node's id, an edge's ends) would compose into a graph it refuses.
_GRAPH = {
    "nodes": [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual", "sampleInput": {}}}},
        {"id": "state-get-1", "type": "action", "position": {"x": 0, "y": 120},
         "data": {"label": "Cursor", "type": "action", "config": {"actionType": "State Get", "key": "cursor"}}},
    ],
    "edges": [{"id": "e1", "source": "trigger", "target": "state-get-1"}],
}


def graph_example(**fields: Any) -> list[OpenApiExample]:
    """The request example of an operation taking a graph (and ``fields``, such as a name)."""
    return [OpenApiExample("a trigger reading a cursor", request_only=True, value={**fields, **_GRAPH})]


IDEMPOTENCY_KEY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    # 1 to 200 printable characters (surrounding spaces trimmed); else 400 IDEMPOTENCY_KEY_INVALID.
    {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[!-~]([ -~]{0,198}[!-~])?$"},
    OpenApiParameter.HEADER,
    description="1 to 200 printable characters (e.g. a UUID made once per intended run), kept 24 h per "
    "workflow: a retry with the same key answers the first execution instead of running again, whatever "
    "its body. Anything else: 400 IDEMPOTENCY_KEY_INVALID.",
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
        description = _GRAPH_400 if code == 400 and bad_request is WorkflowBadRequest else _DESCRIPTIONS[code]
        responses[code] = OpenApiResponse(response=body, description=description)
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


# --- answers every operation can give, whatever its view says (SPECTACULAR_SETTINGS hook) ---------

_EVERYWHERE: dict[str, dict[str, Any]] = {
    "429": {
        "description": "THROTTLED: past a rate (per token, per address, failed logins, runs per organization); "
        "wait the seconds in Retry-After.",
        "headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1},
                                    "description": "Seconds to wait before the next request."}},
    },
    "414": {
        "description": "URI_TOO_LONG: the request line is longer than the web server reads (8,190 bytes under "
        "serve's gunicorn), answered by it before the application, in this error shape.",
    },
}


def add_common_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """A postprocessing hook: the 429 and 414 answers on every operation (throttles and the web
    server's URL limit apply before any view), their body the catalogue's error shape."""
    error_ref = {"$ref": "#/components/schemas/ErrorOutput"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in {"get", "put", "post", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            for status, answer in _EVERYWHERE.items():
                entry = dict(answer)
                if "ErrorOutput" in result.get("components", {}).get("schemas", {}):
                    entry["content"] = {"application/json": {"schema": error_ref}}
                responses.setdefault(status, entry)
    return result
