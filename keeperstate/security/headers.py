"""Response headers that django-csp and Django's SecurityMiddleware do not cover."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control


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
