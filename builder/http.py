"""Small HTTP helpers shared by the builder's views: JSON bodies, JSON errors, login checks.

Errors answer the catalogue's one shape (keeperstate.core.errors.error_body), as the API does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from keeperstate.core.errors import Code, CodedError, error_body
from keeperstate.core.inputs import BodyInvalid, read_json_request


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def json_error(error: Code | CodedError, detail: str | None = None, **extra: Any) -> JsonResponse:
    """The JSON answer of a coded error or a catalogue entry, with the entry's status."""
    status = error.status_code if isinstance(error, CodedError) else error.status
    response = JsonResponse({**error_body(error, detail), **extra}, status=status)
    if retry_after := getattr(error, "retry_after", None):  # THROTTLED
        response["Retry-After"] = str(retry_after)
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
    return json_error(Code.NOT_AUTHENTICATED, "Your session has ended. Log in again and retry.")


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
            response = json_error(Code.METHOD_NOT_ALLOWED, f"Use {method}.")
            response["Allow"] = method
            return response
        try:
            return view(request, *args, **kwargs)
        except CodedError as exc:
            return json_error(exc)
        except Http404:
            return json_error(Code.NOT_FOUND, "No such workflow.")

    return wrapper
