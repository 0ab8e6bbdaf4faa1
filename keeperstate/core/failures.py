"""The one way an exception becomes an answer, for every adapter: the API's exception handler,
the MCP's tool errors and the builder's pages all ask ``failure_of``.

A coded error answers its own code, message, field and details; Django's own refusals answer
their catalogue entries (NOT_FOUND, PERMISSION_DENIED, PARSE_ERROR, REQUEST_TOO_LARGE). A database
that cannot be written to (down, failing over) answers DATABASE_UNAVAILABLE with Retry-After, and
its outage is logged once (keeperstate.ops.availability). Anything else is logged with its
traceback and answered DATABASE_ERROR (a database error) or INTERNAL_ERROR, so driver text and
internals never reach a user.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError
from django.http import Http404

from keeperstate.core.errors import Code, CodedError, error_body
from keeperstate.core.inputs import BodyTooLarge
from keeperstate.ops import availability

logger = logging.getLogger("keeperstate.failures")


@dataclass(frozen=True)
class Failure:
    """An answer to a failure: HTTP status, the ``{"code", "detail"}`` body, and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    logged: bool = False  # said already, by the outage's line: not once more per request

    @property
    def code(self) -> str:
        return str(self.body["code"])


def coded(exc: BaseException, *, where: str) -> CodedError:
    """The coded error a user is answered for ``exc``; ``where`` names the adapter in the log line
    of an unexpected one."""
    if isinstance(exc, CodedError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return BodyTooLarge()
    if isinstance(exc, Http404):
        return CodedError.of(Code.NOT_FOUND, str(exc) or None)
    if isinstance(exc, PermissionDenied):
        return CodedError.of(Code.PERMISSION_DENIED, str(exc) or None)
    if isinstance(exc, SuspiciousOperation):
        return CodedError.of(Code.PARSE_ERROR, "The request was malformed.")
    if isinstance(exc, DatabaseError) and availability.unavailable(exc):
        availability.noticed(exc, where)
        return CodedError.of(Code.DATABASE_UNAVAILABLE)
    if isinstance(exc, DatabaseError):
        logger.error("database error in %s", where, exc_info=exc)
        return CodedError.of(Code.DATABASE_ERROR)
    logger.error("unexpected error in %s", where, exc_info=exc)
    return CodedError.of(Code.INTERNAL_ERROR)


def failure_of(exc: BaseException, *, where: str) -> Failure:
    """``exc`` as its answer (see ``coded``), with ``Retry-After`` for a throttled caller."""
    error = coded(exc, where=where)
    headers = {}
    if retry_after := getattr(error, "retry_after", None):  # THROTTLED
        headers["Retry-After"] = str(retry_after)
    unavailable = error.error is Code.DATABASE_UNAVAILABLE
    if unavailable:
        headers["Retry-After"] = str(availability.RETRY_AFTER_SECONDS)
    return Failure(error.status_code, error_body(error), headers, logged=unavailable)
