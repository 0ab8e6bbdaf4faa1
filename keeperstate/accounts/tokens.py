"""API token services: create (shown once), list, revoke. The API, ``create_api_token`` and
admin go through here; each create and revoke is audited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from keeperstate.accounts.models import ApiToken
from keeperstate.audit.log import audit
from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import text_problem

MAX_NAME_LENGTH = 100
MAX_EXPIRY_DAYS = 3650


class TokenInvalid(CodedError):
    error = Code.TOKEN_INVALID


def default_expiry_days() -> int | None:
    days = settings.KEEPERSTATE_TOKEN_TTL_DAYS
    return days if days > 0 else None


def create_token(user: Any, *, name: str = "", expires_in_days: int | None | str = "default") -> tuple[ApiToken, str]:
    """A new token for ``user``: (the row, the token text). The text exists only in this return
    value; the database keeps its digest. ``expires_in_days``: whole days (1–3650), None for a
    token that never expires, or the default (KEEPERSTATE_TOKEN_TTL_DAYS)."""
    name = (name or "").strip()
    if len(name) > MAX_NAME_LENGTH or (problem := text_problem(name)):
        raise TokenInvalid(
            f"Give the token a name of at most {MAX_NAME_LENGTH} visible characters"
            + (f" (the name {problem})." if len(name) <= MAX_NAME_LENGTH and problem else "."),
            field="name",
        )
    days = default_expiry_days() if expires_in_days == "default" else expires_in_days
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_EXPIRY_DAYS):
        raise TokenInvalid(
            f"expiresInDays must be a whole number of days from 1 to {MAX_EXPIRY_DAYS}, or null for no expiry.",
            field="expiresInDays",
        )
    with transaction.atomic():
        row, token = ApiToken.objects.create(
            user=user, expiry=timedelta(days=days) if days is not None else None, name=name
        )
        audit("token.create", actor=user, target=row, details={"name": name, "prefix": row.token_key,
                                                                "expiresAt": _iso(row.expiry)})
    return row, token


def tokens_of(user: Any) -> Any:
    return ApiToken.objects.filter(user=user).order_by("-created")


def revoke_token(user: Any, prefix: str) -> int:
    """Delete the user's token(s) with this prefix; the number revoked (0: none of the user's)."""
    with transaction.atomic():
        rows = list(tokens_of(user).filter(token_key=prefix))
        for row in rows:
            audit("token.revoke", target=row, details={"name": row.name, "prefix": row.token_key, "user":
                                                       user.get_username()})
        ApiToken.objects.filter(pk__in=[row.pk for row in rows]).delete()
    return len(rows)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None
