"""What the state modules share: the one way to delete rows with a named deleter, JSON decoding,
and the one place where database errors become STATE_STORAGE_ERROR. (Whether a key is live is
said once in SQL, keeperstate/state/sql.py, and once in the ORM, WorkflowStateQuerySet.)"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

from django.db import DatabaseError

from keeperstate.ops import availability
from keeperstate.state.errors import StateStorageError

logger = logging.getLogger("keeperstate.state")


def logged_delete_sql(where: str) -> tuple[str, str]:
    """Two statements, run in one transaction: the first locks the rows matching ``where`` and
    writes the history event of each with the deleter, ``%(execution)s`` and ``%(actor)s``; the
    second deletes them and returns ``version`` per row.

    The history trigger of the delete finds each event (written by the earlier statement, which
    holds on a sharded database too, docs/scaling.md) and adds none, so nothing (no session
    setting, no transaction-local variable) carries the deleter beyond the transaction. The first
    is a SELECT whose CTEs lock and write: an INSERT … SELECT … FOR UPDATE is what a sharded
    database cannot run (Citus plans it through the coordinator, which cannot lock a shard's rows).
    """
    log = f"""
WITH locked AS (
    SELECT organization_id, workflow_id, key, value, version FROM workflow_state WHERE {where} FOR UPDATE
), logged AS (
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, old_version, execution_id, actor, created_at)
    SELECT organization_id, workflow_id, key, 'delete', value, version, %(execution)s, %(actor)s, clock_timestamp()
      FROM locked
    RETURNING 1
)
SELECT count(*) FROM logged
"""
    delete = f"DELETE FROM workflow_state WHERE {where} RETURNING version"
    return log, delete


def load_json(value: Any) -> Any:
    # Django registers a text loader for jsonb (JSONField decodes for itself), so raw cursors
    # receive JSON text.
    return json.loads(value) if isinstance(value, str) else value


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


class storage_errors:  # noqa: N801 - used as a context manager, like contextlib's
    """Database errors become STATE_STORAGE_ERROR; the driver's text goes to the log only. A
    database that is unavailable (down, failing over) is not the store's refusal: its error goes
    on, and the request answers 503 DATABASE_UNAVAILABLE (keeperstate.ops.availability).

    A class rather than a @contextmanager generator: every state operation enters it, and a
    generator costs a few microseconds against a statement of a few hundred."""

    def __init__(self, action: str):
        self.action = action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, DatabaseError) and availability.unavailable(exc):
            return  # the database is down or failing over: the caller answers DATABASE_UNAVAILABLE
        if isinstance(exc, DatabaseError):
            logger.exception("workflow state %s failed", self.action, exc_info=exc)
            raise StateStorageError(
                f"The database refused the state {self.action}, so nothing was changed. Run the workflow again; "
                "if it keeps failing, check that the workflow still exists.",
            ) from exc
