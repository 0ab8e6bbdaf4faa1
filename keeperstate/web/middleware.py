"""The project's own middleware: request hygiene that holds for every page, not only the API, the
headers django-csp and Django's SecurityMiddleware do not cover, and who acts in a request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control

from keeperstate.audit.context import acting
from keeperstate.core.errors import Code, error_body


class DropMalformedCookies:
    """Treat a cookie holding a NUL character as absent.

    Browsers never send one, but a crafted ``sessionid`` with NUL would reach Postgres through the
    session lookup and fail there (a 500) instead of reading as "not logged in".
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        for name in [name for name, value in request.COOKIES.items() if "\x00" in value or "\x00" in name]:
            del request.COOKIES[name]
        return self.get_response(request)


class RefuseNulInAddress:
    """Answer 400 BAD_REQUEST to a path or query string holding U+0000 (``%00``).

    No id, name or filter can hold it, and Postgres refuses it in any query parameter, which
    Django reports as a database error: a 503 DATABASE_ERROR with Retry-After, so a client would
    retry for ever and the logs would read "database down". Refused here, once, before any view
    or lookup sees it (JSON under /api/ and /hooks/ and for JSON clients, the plain 400 page
    elsewhere).
    """

    DETAIL = "The address contains the character U+0000 (%00), which no id, name or filter holds; remove it."

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path_info or _nul_in_query(request):
            return self.refusal(request)
        return self.get_response(request)

    def refusal(self, request: HttpRequest) -> HttpResponse:
        from keeperstate.web.error_pages import JSON_PREFIXES, error_response

        if request.path_info.startswith(JSON_PREFIXES) or "application/json" in request.headers.get("Accept", ""):
            return JsonResponse(error_body(Code.BAD_REQUEST, self.DETAIL), status=400)
        return error_response(request, 400)


def _nul_in_query(request: HttpRequest) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists())


class NoStoreMiddleware:
    """``Cache-Control: no-store`` on every answer the application itself produces (API, builder,
    admin, login): they carry a tenant's data or a CSRF token, and no shared or browser cache
    should keep them. Static files never pass through here (whitenoise or the static handler
    answer them before the application's middleware) and keep their long cache lifetimes; a view
    that sets its own Cache-Control keeps it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            patch_cache_control(response, no_store=True)
        return response


class ActorMiddleware:
    """Make the request visible to services for the length of the request. DRF authenticates
    token requests inside the view, later than this middleware, and then sets the Django
    request's ``user`` too: Actor reads it lazily, so it sees the token's user."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with acting(request):
            return self.get_response(request)
