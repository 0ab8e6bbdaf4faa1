"""Token authentication for the API: django-rest-knox's hashed tokens behind the familiar
``Authorization: Token <token>`` header, with two guards of our own.

* A key that cannot be a token (ours are ``ks_`` + 64 hex characters; tokens carried over from
  the plain-text DRF table are 40 hex) is refused before the token table is read: a NUL byte
  would otherwise reach Postgres and fail there.
* Failed attempts are counted per client address (the ``auth_failure`` throttle rate); past it,
  the answer is 429 THROTTLED with Retry-After instead of another guess.

And two changes of knox's behaviour, both for the cost of every API call:
* A request checks the expiry of the token it presents only. knox also reads all of the user's
  tokens on every request to delete the expired ones, a query per API call that grows with the
  user's tokens; the worker's housekeeping deletes expired tokens instead
  (keeperstate/executions/housekeeping.py).
* The token and its user are read by one statement written once (keeperstate.core.rows), not by a
  queryset Django compiles on every request. The checks on what it finds are knox's.
"""

from __future__ import annotations

import binascii
import functools
import re
from hmac import compare_digest
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.crypto import hash_token
from knox.models import get_token_model
from knox.settings import CONSTANTS, knox_settings
from rest_framework import exceptions
from rest_framework.request import Request

from keeperstate.api.throttles import record_auth_failure
from keeperstate.core.cursors import kept_cursor
from keeperstate.core.rows import Columns

TOKEN_SHAPE = re.compile(r"(?:ks_)?[0-9a-f]{64}|[0-9a-f]{40}")


class TokenAuthentication(KnoxTokenAuthentication):
    def authenticate(self, request: Request) -> Any:
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            record_auth_failure(request)
            raise

    def authenticate_credentials(self, token: bytes) -> Any:
        """knox's check (digest compared in constant time, expiry, refresh, active user) of the
        tokens that share the presented token's key."""
        text = token.decode("ascii", "replace")
        if not TOKEN_SHAPE.fullmatch(text):
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        try:
            digest = hash_token(text)
        except (TypeError, binascii.Error):
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        for auth_token in tokens_with_key(text[: CONSTANTS.TOKEN_KEY_LENGTH]):
            if self._cleanup_token(auth_token):
                continue
            if compare_digest(digest, auth_token.digest):
                if knox_settings.AUTO_REFRESH and auth_token.expiry:
                    self.renew_token(auth_token)
                return self.validate_user(auth_token)
        raise exceptions.AuthenticationFailed(_("Invalid token."))

    def _cleanup_token(self, auth_token: Any) -> bool:
        """Whether the presented token has expired (then it is deleted, as knox would), without
        reading the user's other tokens."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            auth_token.delete()
            return True
        return False


@functools.cache
def _token_columns() -> tuple[Columns[Any], Columns[Any], str]:
    tokens, users = Columns(get_token_model(), "t"), Columns(get_user_model(), "u")
    user_fk = get_token_model()._meta.get_field("user").column
    user_pk = get_user_model()._meta.pk.column
    sql = (f'SELECT {tokens.sql}, {users.sql} FROM {tokens.table} JOIN {users.table} ON u."{user_pk}" = t."{user_fk}" '
           f'WHERE t."token_key" = %s')
    return tokens, users, sql


def tokens_with_key(token_key: str) -> list[Any]:
    """The tokens whose key (the token's first characters) is ``token_key``, each with its user."""
    tokens, users, sql = _token_columns()
    cursor = kept_cursor()
    cursor.execute(sql, [token_key])
    rows = cursor.fetchall()
    found = []
    for row in rows:
        auth_token = tokens.instance(row[: len(tokens)])
        auth_token.user = users.instance(row[len(tokens) :])
        found.append(auth_token)
    return found


def api_authentication_classes() -> list[Any]:
    """The API's authentication classes (REST_FRAMEWORK's defaults), for views that name them."""
    from rest_framework.settings import api_settings

    return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
