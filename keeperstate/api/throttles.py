"""The API's throttles, counted exactly in Postgres (keeperstate.ratelimits): per token (or per
user for a session), per address for anonymous clients, and failed authentications per address.
Rates come from REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] (settings, from the environment) and are
read on each request, so tests and operators can change them."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from keeperstate.core.clients import client_address
from keeperstate.ratelimits.counters import Decision, hit, hit_params

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: object) -> tuple[int, int]:
    """'1200/min' → (1200, 60)."""
    count, period = str(rate).split("/")
    return int(count), PERIODS[period.strip()[0]]


class _Throttle(BaseThrottle):
    scope = ""
    retry_after = 1

    def ident(self, request: Request) -> str | None:
        raise NotImplementedError

    def allow_request(self, request: Request, view: Any) -> bool:
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
        ident = self.ident(request)
        if not rate or ident is None:
            return True
        limit, period = parse_rate(rate)
        decision = hit(self.scope, ident, limit=limit, period=period)
        self.retry_after = decision.retry_after
        return decision.allowed

    def wait(self) -> float:
        return self.retry_after


class ClientThrottle(_Throttle):
    """Authenticated clients: per token when one was sent (each integration its own budget), else
    per user (a browser session). A token's hit is counted by the statement that authenticates it
    (keeperstate.api.authentication), which leaves its decision on the request."""

    scope = "api_user"

    def ident(self, request: Request) -> str | None:
        if not request.user.is_authenticated:
            return None
        token_key = getattr(request.auth, "token_key", None)
        return f"token:{token_key}" if token_key else f"user:{request.user.pk}"

    def allow_request(self, request: Request, view: Any) -> bool:
        counted: Decision | None = getattr(request, _TOKEN_HIT, None)
        if counted is None:
            return super().allow_request(request, view)
        self.retry_after = counted.retry_after
        return counted.allowed


_TOKEN_HIT = "_keeperstate_token_hit"


def token_hit_params(request: Request | None, token_key: str) -> dict[str, Any] | None:
    """The parameters of the token's rate hit (ClientThrottle's), for the statement that reads the
    token to count; None when the view does not throttle per token or no rate is set."""
    view = (getattr(request, "parser_context", None) or {}).get("view")
    rate = api_settings.DEFAULT_THROTTLE_RATES.get(ClientThrottle.scope)
    if view is None or not rate or not any(issubclass(t, ClientThrottle) for t in view.throttle_classes):
        return None
    limit, period = parse_rate(rate)
    return hit_params(ClientThrottle.scope, f"token:{token_key}", limit=limit, period=period)


def record_token_hit(request: Request, decision: Decision) -> None:
    setattr(request, _TOKEN_HIT, decision)


class AnonymousThrottle(_Throttle):
    scope = "api_anon"

    def ident(self, request: Request) -> str | None:
        if request.user.is_authenticated:
            return None
        return client_address(request._request) or "unknown"


def record_auth_failure(request: Request) -> None:
    """Count a failed authentication of the client's address; past the ``auth_failure`` rate,
    raise Throttled (429) instead of answering another 401."""
    rate = api_settings.DEFAULT_THROTTLE_RATES.get("auth_failure")
    if not rate:
        return
    limit, period = parse_rate(rate)
    decision = hit("auth_failure", client_address(request._request) or "unknown", limit=limit, period=period)
    if not decision.allowed:
        raise exceptions.Throttled(wait=decision.retry_after)


class WebhookThrottle(_Throttle):
    """Webhook calls per sending address: its own scope, since a webhook sender is neither a
    person nor a token holder (the organization's runs per minute still apply to what runs)."""

    scope = "webhook"

    def ident(self, request: Request) -> str | None:
        return client_address(request._request) or "unknown"


class AuthenticatedOrCounted(IsAuthenticated):
    """IsAuthenticated that counts a refused anonymous request against the anonymous rate.

    DRF checks permissions before throttles, so a 401 was answered before AnonymousThrottle
    counted it: a client without credentials could call for ever. Past the rate the refusal is
    429 THROTTLED with Retry-After, as for any other anonymous request.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        if super().has_permission(request, view):
            return True
        throttle = AnonymousThrottle()
        if not throttle.allow_request(request, view):
            raise exceptions.Throttled(wait=throttle.wait())
        return False
