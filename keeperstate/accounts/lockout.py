"""Login lockout (django-axes) for the login page and the admin login alike.

axes' backend refuses to authenticate without a request; a login without one (the test
client's ``login()``, a management shell) does not come from the network, so it is let through
to the next backend rather than failing.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LockoutBackend(AxesStandaloneBackend):
    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


# axes keeps the username tried in a varchar(255) (AccessAttempt, AccessLog); Django's login form
# does not enforce its own max length, so a longer one reached the insert and failed there (a 503,
# and the attempt went unrecorded). 255 characters still tell one attacker's guesses apart.
USERNAME_KEPT = 255


def lockout_username(request: HttpRequest | None, credentials: dict[str, Any] | None = None) -> str | None:
    """The username axes records and locks by (AXES_USERNAME_CALLABLE): the one tried, cut to what
    its columns hold, NUL removed (Postgres text cannot hold it)."""
    if credentials:
        tried = credentials.get("username")
    else:
        tried = getattr(request, "POST", {}).get("username") if request is not None else None
    if tried is None:
        return None
    return str(tried).replace("\x00", "")[:USERNAME_KEPT]


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """The 429 page of a locked-out login (AXES_LOCKOUT_CALLABLE): the cool-off in minutes, as a
    person reads it (axes' own page says ISO 8601's "PT15M"), and Retry-After in seconds."""
    cooloff = get_cool_off(request)
    seconds = int(cooloff.total_seconds()) if cooloff else None
    minutes = max(1, round(seconds / 60)) if seconds else None
    response = render(request, settings.AXES_LOCKOUT_TEMPLATE, {"cooloff_minutes": minutes},
                      status=settings.AXES_HTTP_RESPONSE_CODE)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
