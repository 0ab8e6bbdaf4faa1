"""Small HTTP helpers shared by the builder's views: JSON bodies, JSON errors, login checks.

Errors answer the catalogue's one shape (keeperstate.core.errors.error_body), as the API does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.failures import failure_of
from keeperstate.core.inputs import BodyInvalid, read_json_request


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def json_error(error: Code | BaseException, **extra: Any) -> JsonResponse:
    """The JSON answer of a catalogue entry or an exception (keeperstate.core.failures, as the API)."""
    failure = failure_of(CodedError.of(error) if isinstance(error, Code) else error, where="the builder")
    response = JsonResponse({**failure.body, **extra}, status=failure.status)
    for name, value in failure.headers.items():
        response[name] = value
    return response


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object (empty: ``{}``), read by keeperstate's one hardened
    reader, so the editor's endpoints answer the API's codes (PARSE_ERROR, REQUEST_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE)."""
    body = read_json_request(request, empty={})
    if not isinstance(body, dict):
        raise BodyInvalid('The request body must be a JSON object, for example {"nodes": [], "edges": []}.')
    return body


def not_authenticated() -> JsonResponse:
    return json_error(CodedError.of(Code.NOT_AUTHENTICATED, "Your session has ended. Log in again and retry."))


def json_endpoint(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A POST-only JSON endpoint for logged-in users: coded errors become their JSON answer, an
    unknown or foreign workflow a 404. CSRF stays enforced by the middleware."""
    return _json_view(view, "POST")


def json_read_endpoint(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Like json_endpoint, for a GET that reads and never writes."""
    return _json_view(view, "GET")


def _json_view(view: Callable[..., HttpResponse], method: str) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return not_authenticated()
        if request.method != method:
            response = json_error(CodedError.of(Code.METHOD_NOT_ALLOWED, f"Use {method}."))
            response["Allow"] = method
            return response
        try:
            return view(request, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure answers as keeperstate.core.failures says
            return json_error(exc)

    return wrapper
