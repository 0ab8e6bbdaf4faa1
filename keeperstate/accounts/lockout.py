"""Login lockout (django-axes) for the login page and the admin login alike.

axes' backend refuses to authenticate without a request; a login without one (the test
client's ``login()``, a management shell) does not come from the network, so it is let through
to the next backend rather than failing.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LockoutBackend(AxesStandaloneBackend):
    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
