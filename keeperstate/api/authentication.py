"""Authentication for the API: the project's configured classes, with a stricter token check.

DRF's TokenAuthentication sends whatever follows "Token " to the database; a header holding a
NUL byte makes Postgres fail there, a 5xx a client could cause. A key that cannot be a token
(DRF's are 40 hex characters) is refused before any query, with the usual 401.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.settings import api_settings

TOKEN_KEY_MAX_LENGTH = 40


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str) -> Any:
        if not (key.isascii() and key.isalnum() and len(key) <= TOKEN_KEY_MAX_LENGTH):
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        return super().authenticate_credentials(key)


def api_authentication_classes() -> list[Any]:
    """REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES, with DRF's token class replaced by ours."""
    return [
        TokenAuthentication if cls is authentication.TokenAuthentication else cls
        for cls in api_settings.DEFAULT_AUTHENTICATION_CLASSES
    ]
