"""What the state modules share: the one way to delete rows with a named deleter, JSON decoding,
and the one place where database errors become STATE_STORAGE_ERROR. (Whether a key is live is
said once in SQL, keeperstate/state/sql.py, and once in the ORM, WorkflowStateQuerySet.)"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from keeperstate.state.errors import StateStorageError

logger = logging.getLogger("keeperstate.state")


def logged_delete_sql(where: str, *, pick: str | None = None) -> str:
    """One statement deleting the rows matching ``where`` and writing each deletion's history
    event with the deleter, ``%(execution)s`` and ``%(actor)s``; returns ``version`` per row.

    The history trigger sees the event and adds none, so nothing (no session setting, no
    transaction-local variable) carries the deleter beyond this statement. ``pick`` (a query of
    ids, e.g. ``… LIMIT n FOR UPDATE SKIP LOCKED``) is evaluated once, materialised: as an
    ``id IN (…)`` subquery the planner may run it again per row and delete more than its limit.
    """
    picked = f"picked AS MATERIALIZED ({pick}), " if pick else ""
    condition = "id IN (SELECT id FROM picked)" if pick else where
    return f"""
WITH {picked}gone AS (
    DELETE FROM workflow_state WHERE {condition}
    RETURNING organization_id, workflow_id, key, value, version
), logged AS (
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, old_version, execution_id, actor, created_at)
    SELECT organization_id, workflow_id, key, 'delete', value, version, %(execution)s, %(actor)s, clock_timestamp()
      FROM gone
)
SELECT version FROM gone
"""


def load_json(value: Any) -> Any:
    # Django registers a text loader for jsonb (JSONField decodes for itself), so raw cursors
    # receive JSON text.
    return json.loads(value) if isinstance(value, str) else value


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


class storage_errors:  # noqa: N801 - used as a context manager, like contextlib's
    """Database errors become STATE_STORAGE_ERROR; the driver's text goes to the log only.

    A class rather than a @contextmanager generator: every state operation enters it, and a
    generator costs a few microseconds against a statement of a few hundred."""

    def __init__(self, action: str):
        self.action = action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, DatabaseError):
            logger.exception("workflow state %s failed", self.action, exc_info=exc)
            raise StateStorageError(
                f"The database refused the state {self.action}, so nothing was changed. Run the workflow again; "
                "if it keeps failing, check that the workflow still exists.",
            ) from exc
