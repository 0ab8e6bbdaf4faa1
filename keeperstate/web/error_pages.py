"""The site's error pages (Django's handler400/403/404/500): plain, friendly, no internals.

An unhandled database error anywhere in a request (a view, the session or user lookup in a
middleware, a template asking for ``user``) reaches ``server_error``; it answers 503 "try again"
instead of 500, like the API's own handler does for its views. Under ``/api/`` and ``/hooks/``
the same failures answer the API's coded JSON, so a client never has to parse an HTML page.
The pages render without a request context: no session, no user, no query.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

from keeperstate.core.errors import Code, error_body
from keeperstate.ops import availability

logger = logging.getLogger("django.request")

JSON_PREFIXES = ("/api/", "/hooks/")
RETRY_AFTER_SECONDS = 5

PAGES = {
    400: Code.BAD_REQUEST,
    403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND,
    500: Code.INTERNAL_ERROR,
    503: Code.DATABASE_ERROR,
}


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_response(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls handler500 inside its `except` block, so the exception is still at hand.
    exc = sys.exc_info()[1]
    if availability.unavailable(exc):
        # The database is unreachable or failing over: the outage's one line
        # (keeperstate.ops.availability), not a hundred-line traceback for every request of it.
        availability.noticed(exc, request.path)  # type: ignore[arg-type]  # unavailable() saw an exception
        response = error_response(request, 503, Code.DATABASE_UNAVAILABLE)
        response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own marker
        return response
    # Django logs anything else with its traceback.
    return error_response(request, 503 if isinstance(exc, DatabaseError) else 500)


def error_response(request: HttpRequest | None, status: int, code: Code | None = None) -> HttpResponse:
    response: HttpResponse
    if request is not None and request.path_info.startswith(JSON_PREFIXES):
        response = JsonResponse(error_body(code or PAGES[status]), status=status)
    else:
        response = HttpResponse(_render(f"{status}.html"), status=status)
    if status == 503:
        unavailable = code is Code.DATABASE_UNAVAILABLE
        response["Retry-After"] = str(availability.RETRY_AFTER_SECONDS if unavailable else RETRY_AFTER_SECONDS)
    return response


def _render(template_name: str, context: dict[str, Any] | None = None) -> str:
    # No request: context processors would read the session and the user from the database.
    return loader.get_template(template_name).render(context or {})
