"""Token authentication for the API: django-rest-knox's hashed tokens behind the familiar
``Authorization: Token <token>`` header, with two guards of our own.

* A key that cannot be a token (ours are ``ks_`` + 64 hex characters; tokens carried over from
  the plain-text DRF table are 40 hex) is refused before the token table is read: a NUL byte
  would otherwise reach Postgres and fail there.
* Failed attempts are counted per client address (the ``auth_failure`` throttle rate); past it,
  the answer is 429 THROTTLED with Retry-After instead of another guess.

And one change of knox's behaviour: a request checks the expiry of the token it presents only.
knox also reads all of the user's tokens on every request to delete the expired ones, a query
per API call that grows with the user's tokens; the worker's housekeeping deletes expired
tokens instead (keeperstate/executions/housekeeping.py).
"""

from __future__ import annotations

import re
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework import exceptions
from rest_framework.request import Request

from keeperstate.api.throttles import record_auth_failure

TOKEN_SHAPE = re.compile(r"(?:ks_)?[0-9a-f]{64}|[0-9a-f]{40}")


class TokenAuthentication(KnoxTokenAuthentication):
    def authenticate(self, request: Request) -> Any:
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            record_auth_failure(request)
            raise

    def authenticate_credentials(self, token: bytes) -> Any:
        if not TOKEN_SHAPE.fullmatch(token.decode("ascii", "replace")):
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        return super().authenticate_credentials(token)

    def _cleanup_token(self, auth_token: Any) -> bool:
        """Whether the presented token has expired (then it is deleted, as knox would), without
        reading the user's other tokens."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            auth_token.delete()
            return True
        return False


def api_authentication_classes() -> list[Any]:
    """The API's authentication classes (REST_FRAMEWORK's defaults), for views that name them."""
    from rest_framework.settings import api_settings

    return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
