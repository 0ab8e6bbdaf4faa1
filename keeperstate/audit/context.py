"""Who is acting in this request, for services that record it (the audit log) without being
handed the request: the same service answers the API, the builder, admin and the worker."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from django.http import HttpRequest

from keeperstate.core.clients import client_address


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


class acting:  # noqa: N801 - a context manager, like contextlib's; a class costs less per request
    """The request is the current actor inside the block (ActorMiddleware wraps each request)."""

    def __init__(self, request: HttpRequest | None):
        self.actor = Actor(request)

    def __enter__(self) -> Actor:
        self._token = _current.set(self.actor)
        return self.actor

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        _current.reset(self._token)
