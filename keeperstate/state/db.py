"""What the state modules share: the liveness condition, JSON decoding, and the one place where
database errors become STATE_STORAGE_ERROR."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from keeperstate.state.errors import StateStorageError

logger = logging.getLogger("keeperstate.state")

LIVE_SQL = "(expires_at IS NULL OR expires_at > now())"
# Names who made a change when no execution did; read by the history trigger.
SET_ACTOR_SQL = "SELECT set_config('keeperstate.actor', %s, true)"


def load_json(value: Any) -> Any:
    # Django registers a text loader for jsonb (JSONField decodes for itself), so raw cursors
    # receive JSON text.
    return json.loads(value) if isinstance(value, str) else value


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


@contextmanager
def storage_errors(action: str) -> Iterator[None]:
    """Database errors become STATE_STORAGE_ERROR; the driver's text goes to the log only."""
    try:
        yield
    except DatabaseError as exc:
        logger.exception("workflow state %s failed", action)
        raise StateStorageError(
            f"The database refused the state {action}, so nothing was changed. Run the workflow again; "
            "if it keeps failing, check that the workflow still exists.",
        ) from exc
