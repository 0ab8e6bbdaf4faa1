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
* That statement also counts the request against the token's rate (ClientThrottle's hit, when the
  view throttles per token), where the presented token is the stored one, live and its user
  active: one round trip for both, and ClientThrottle reads the decision it made.
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

from keeperstate.api.throttles import record_auth_failure, record_token_hit, token_hit_params
from keeperstate.core.cursors import kept_cursor
from keeperstate.core.rows import Columns
from keeperstate.ratelimits.counters import conditional_hit_sql, decided

TOKEN_SHAPE = re.compile(r"(?:ks_)?[0-9a-f]{64}|[0-9a-f]{40}")


class TokenAuthentication(KnoxTokenAuthentication):
    request: Request | None = None  # an authenticator is made per request (DRF's get_authenticators)

    def authenticate(self, request: Request) -> Any:
        self.request = request
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
        token_key = text[: CONSTANTS.TOKEN_KEY_LENGTH]
        counted = token_hit_params(self.request, token_key)
        found, hits = tokens_with_key(token_key, digest=digest, hit=counted)
        for auth_token in found:
            if self._cleanup_token(auth_token):
                continue
            if compare_digest(digest, auth_token.digest):
                if knox_settings.AUTO_REFRESH and auth_token.expiry:
                    self.renew_token(auth_token)
                user, auth = self.validate_user(auth_token)
                if counted is not None and self.request is not None:
                    record_token_hit(self.request, decided(counted, hits))
                return user, auth
        raise exceptions.AuthenticationFailed(_("Invalid token."))

    def _cleanup_token(self, auth_token: Any) -> bool:
        """Whether the presented token has expired (then it is deleted, as knox would), without
        reading the user's other tokens."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            auth_token.delete()
            return True
        return False


@functools.cache
def _token_columns() -> tuple[Columns[Any], Columns[Any], str, str]:
    """The token's and user's columns, the statement reading them by key, and the same statement
    counting the token's rate hit (a CTE) where the presented token is live and its user active."""
    tokens, users = Columns(get_token_model(), "t"), Columns(get_user_model(), "u")
    user_fk = get_token_model()._meta.get_field("user").column
    user_pk = get_user_model()._meta.pk.column
    source = (f'FROM {tokens.table} JOIN {users.table} ON u."{user_pk}" = t."{user_fk}" '
              f'WHERE t."token_key" = %(key)s')
    read = f"SELECT {tokens.sql}, {users.sql} {source}"
    columns = [*tokens.sql.split(", "), *users.sql.split(", ")]
    aliased = ", ".join(f'{column} AS c{n}' for n, column in enumerate(columns))
    digest, expiry, active = (f"c{columns.index(name)}" for name in ('t."digest"', 't."expiry"', 'u."is_active"'))
    live = (f"EXISTS (SELECT 1 FROM found WHERE {digest} = %(digest)s AND {active} "
            f"AND ({expiry} IS NULL OR {expiry} > now()))")
    counting = (f"WITH found AS (SELECT {aliased} {source}), hit AS ({conditional_hit_sql(live)}) "
                f"SELECT found.*, (SELECT hits FROM hit) FROM found")
    return tokens, users, read, counting


def tokens_with_key(token_key: str, *, digest: str = "", hit: dict[str, Any] | None = None) -> (
    tuple[list[Any], int | None]
):
    """The tokens whose key (the token's first characters) is ``token_key``, each with its user;
    and, with ``hit`` (conditional_hit_sql's parameters), the hits of the rate counter the same
    statement counted where ``digest`` is the digest of a live token of an active user (None:
    not counted, or refused at the limit)."""
    tokens, users, read, counting = _token_columns()
    cursor = kept_cursor()
    if hit is None:
        cursor.execute(read, {"key": token_key})
        rows, hits = cursor.fetchall(), None
    else:
        cursor.execute(counting, {**hit, "key": token_key, "digest": digest})
        rows = cursor.fetchall()
        hits = rows[0][-1] if rows else None
        rows = [row[:-1] for row in rows]
    found = []
    for row in rows:
        auth_token = tokens.instance(row[: len(tokens)])
        auth_token.user = users.instance(row[len(tokens) :])
        found.append(auth_token)
    return found, hits


def api_authentication_classes() -> list[Any]:
    """The API's authentication classes (REST_FRAMEWORK's defaults), for views that name them."""
    from rest_framework.settings import api_settings

    return list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)
