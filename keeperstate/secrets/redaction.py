"""Keeping secret values out of what people see: node results, errors and log lines.

A run redacts every value its vault handed out so far (``••••``), in the results of the node
that used it and of every later node, so an answer that echoes a token is hidden too. The log
filter does the same for log records written while a node runs (it reads the running node's
vault from a context variable, so threads and workers never mix their secrets).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

REDACTED = "••••"

_active: contextvars.ContextVar[Collection[str] | None] = contextvars.ContextVar("keeperstate_secrets", default=None)


def redact(value: Any, secrets: Collection[str]) -> Any:
    """The value with every occurrence of a secret replaced, at any depth (keys included)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in sorted(secrets, key=len, reverse=True):  # longest first: no half-redacted overlaps
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return REDACTED if str(value) in secrets else value
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, dict):
        return {redact(k, secrets): redact(v, secrets) for k, v in value.items()}
    return value


def contains_secret(value: Any, secrets: Collection[str]) -> bool:
    return bool(secrets) and redact(value, secrets) != value


@contextmanager
def redacting(secrets: Collection[str]) -> Iterator[None]:
    """Redact these secrets (a live collection: values added later count) from log records."""
    token = _active.set(secrets)
    try:
        yield
    finally:
        _active.reset(token)


class RedactSecrets(logging.Filter):
    """A logging filter: a record written while a node runs loses that run's secret values."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = _active.get()
        if secrets:
            message = record.getMessage()
            cleaned = redact(message, secrets)
            if cleaned != message:
                record.msg, record.args = cleaned, None
            if record.exc_info and record.exc_info[1] is not None:
                text = logging.Formatter().formatException(record.exc_info)
                record.exc_info, record.exc_text = None, redact(text, secrets)
        return True
