"""Who is acting in this request, for services that record it (the audit log) without being
handed the request: the same service answers the API, the builder, admin and the worker."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse

from keeperstate.security.client import client_address


@dataclass(frozen=True)
class Actor:
    request: HttpRequest | None

    @property
    def user(self) -> Any:
        user = getattr(self.request, "user", None)
        return user if getattr(user, "is_authenticated", False) else None

    @property
    def address(self) -> str | None:
        return client_address(self.request)


_current: ContextVar[Actor | None] = ContextVar("keeperstate_actor", default=None)


def current_actor() -> Actor | None:
    return _current.get()


class ActorMiddleware:
    """Make the request visible to services for the length of the request. DRF authenticates
    token requests inside the view, later than this middleware, and then sets the Django
    request's ``user`` too: Actor reads it lazily, so it sees the token's user."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _current.set(Actor(request))
        try:
            return self.get_response(request)
        finally:
            _current.reset(token)
