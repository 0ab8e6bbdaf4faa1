"""The API's one exception handler: every failure becomes one of two shapes (DESIGN.md §7, §9).

* bad input to a serializer: 400 with field errors, ``{"field": ["message"]}``;
* everything else: the catalogue's ``{"code", "detail"}`` (keeperstate.core.errors.error_body)
  plus ``field`` and ``details`` when they help, e.g. STATE_VERSION_CONFLICT (409) with
  ``details: {"expected", "current"}`` and WORKFLOW_INVALID (400) with the validation report.

DRF's own exceptions answer under the catalogue entry of their code (NOT_AUTHENTICATED, THROTTLED…);
every other exception is answered as keeperstate.core.failures says, as the MCP and the builder
answer it: driver text never reaches a client, a database error is logged and answered as 503.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import set_rollback

from keeperstate.core.errors import Code, CodedError, error_body
from keeperstate.core.failures import failure_of


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, exceptions.ValidationError):
        data = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        set_rollback()
        return Response(data, status=exc.status_code)
    if isinstance(exc, exceptions.APIException):  # DRF's own: under the catalogue entry of its code
        response = error_response(_code_of(exc), str(exc.detail), status=exc.status_code)
        if auth_header := getattr(exc, "auth_header", None):
            response["WWW-Authenticate"] = auth_header
        if wait := getattr(exc, "wait", None):
            response["Retry-After"] = str(int(wait))
        return response
    failure = failure_of(exc, where=_view_name(context))
    set_rollback()
    response = Response(failure.body, status=failure.status, headers=failure.headers)
    if failure.logged:  # the outage's own line says it (keeperstate.ops.availability)
        response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own marker
    return response


def error_response(error: Code | CodedError, detail: str | None = None, *, status: int | None = None) -> Response:
    """The answer of a coded error or a catalogue entry, with the entry's status unless given."""
    code = error.error if isinstance(error, CodedError) else error
    set_rollback()
    return Response(error_body(error, detail), status=status or code.status)


def field_checked(check: Any, value: Any) -> Any:
    """``check(value)`` in a serializer's validate method: its coded refusal becomes the field's
    error ({"field": ["message"]}), keeping its code."""
    try:
        return check(value)
    except CodedError as exc:
        raise serializers.ValidationError(exc.message, code=exc.code) from exc


def _code_of(exc: exceptions.APIException) -> Code:
    """DRF's exception as a catalogue entry: by its code, else by its status."""
    if isinstance(exc, exceptions.PermissionDenied) and str(exc.detail).startswith("CSRF Failed"):
        return Code.CSRF_FAILED
    codes = exc.get_codes()
    name = (codes if isinstance(codes, str) else exc.default_code).upper()
    if name in Code.__members__:
        return Code[name]
    return Code.BAD_REQUEST if exc.status_code < 500 else Code.INTERNAL_ERROR


def _view_name(context: dict[str, Any]) -> str:
    view = context.get("view")
    return type(view).__name__ if view is not None else "an API view"
