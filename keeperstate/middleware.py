"""Request hygiene that must hold for every page, not only the API."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


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
