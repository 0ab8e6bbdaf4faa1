"""The project's own middleware: request hygiene that holds for every page, not only the API, the
headers django-csp and Django's SecurityMiddleware do not cover, and who acts in a request."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control

from keeperstate.audit.context import acting


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
