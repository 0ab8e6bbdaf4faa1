"""The API's one exception handler: every failure becomes one of two shapes (DESIGN.md §7, §9).

* bad input to a serializer: 400 with field errors, ``{"field": ["message"]}``;
* everything else: ``{"code", "detail"}`` plus ``field`` and ``details`` when they help, e.g.
  STATE_VERSION_CONFLICT (409) with ``details: {"expected", "current"}`` and WORKFLOW_INVALID
  (400) with the validation report in ``details``.

Database driver text never reaches a client: a database error is logged and answered as 503.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from keeperstate.core.errors import CodedError

logger = logging.getLogger(__name__)


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "request_too_large"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, CodedError):
        response = error_response(exc.status_code, exc.code, exc.message, field=exc.field, details=exc.details)
        if retry_after := getattr(exc, "retry_after", None):  # THROTTLED
            response["Retry-After"] = str(retry_after)
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    elif isinstance(exc, RequestDataTooBig):
        exc = RequestTooLarge()
    elif isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError("The request was malformed.")

    if isinstance(exc, exceptions.ValidationError):
        data = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        set_rollback()
        return Response(data, status=exc.status_code)
    if isinstance(exc, exceptions.APIException):
        response = error_response(exc.status_code, _code_of(exc), str(exc.detail))
        if auth_header := getattr(exc, "auth_header", None):
            response["WWW-Authenticate"] = auth_header
        if wait := getattr(exc, "wait", None):
            response["Retry-After"] = str(int(wait))
        return response
    if isinstance(exc, DatabaseError):
        logger.error("database error in %s", _view_name(context), exc_info=exc)
        return error_response(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "DATABASE_ERROR",
            "The database could not complete the request; the error was logged. Try again.",
        )
    logger.error("unexpected error in %s", _view_name(context), exc_info=exc)
    return error_response(
        status.HTTP_500_INTERNAL_SERVER_ERROR,
        "INTERNAL_ERROR",
        "Something went wrong on our side; the error was logged for the administrators.",
    )


def error_response(
    status_code: int, code: str, detail: str, *, field: str | None = None, details: dict[str, Any] | None = None
) -> Response:
    data: dict[str, Any] = {"code": code, "detail": detail}
    if field:
        data["field"] = field
    if details:
        data["details"] = details
    set_rollback()
    return Response(data, status=status_code)


def _code_of(exc: exceptions.APIException) -> str:
    if isinstance(exc, exceptions.PermissionDenied) and str(exc.detail).startswith("CSRF Failed"):
        return "CSRF_FAILED"
    codes = exc.get_codes()
    return codes.upper() if isinstance(codes, str) else exc.default_code.upper()


def _view_name(context: dict[str, Any]) -> str:
    view = context.get("view")
    return type(view).__name__ if view is not None else "an API view"
