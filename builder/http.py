"""Small HTTP helpers shared by the builder's views: JSON bodies, JSON errors, login checks."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from keeperstate.core.errors import CodedError
from keeperstate.core.inputs import BodyInvalid, read_json_request


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def json_error(code: str, detail: str, *, status: int = 400, **extra: Any) -> JsonResponse:
    return JsonResponse({"code": code, "detail": detail, **extra}, status=status)


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object (empty: ``{}``), read by keeperstate's one hardened
    reader, so the editor's endpoints answer the API's codes (PARSE_ERROR, REQUEST_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE)."""
    body = read_json_request(request, empty={})
    if not isinstance(body, dict):
        raise BodyInvalid('The request body must be a JSON object, for example {"nodes": [], "edges": []}.')
    return body


def not_authenticated() -> JsonResponse:
    return json_error("NOT_AUTHENTICATED", "Your session has ended. Log in again and retry.", status=401)


def json_endpoint(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A POST-only JSON endpoint for logged-in users: coded errors become 400 JSON, an unknown
    or foreign workflow a 404 JSON. CSRF stays enforced by the middleware."""
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
            response = json_error("METHOD_NOT_ALLOWED", f"Use {method}.", status=405)
            response["Allow"] = method
            return response
        try:
            return view(request, *args, **kwargs)
        except CodedError as exc:
            extra: dict[str, Any] = {"field": exc.field} if exc.field else {}
            if exc.details:
                extra["details"] = exc.details
            response = json_error(exc.code, exc.message, status=exc.status_code, **extra)
            if retry_after := getattr(exc, "retry_after", None):  # THROTTLED
                response["Retry-After"] = str(retry_after)
            return response
        except Http404:
            return json_error("NOT_FOUND", "No such workflow.", status=404)

    return wrapper
