"""The state store: the only code that reads or writes workflow state.

Every caller (the State actions, Django admin, the benchmark) goes through these functions.
Reads are one statement. A write to a live key is one statement, compare-and-set included;
only a write that would add a live key takes the short locked path that keeps the per-workflow
ceiling exact under concurrency. Versions are computed by the database triggers
(keeperstate/models/state.py), never here.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from keeperstate.state.errors import StateKeyLimit, StateStorageError, StateVersionConflict
from keeperstate.state.values import encode_value, normalize_key, parse_expected_version, parse_ttl

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateScope:
    """Whose state: always taken from a run's context, never from user config."""

    organization_id: int
    workflow_id: uuid.UUID
    execution_id: uuid.UUID | None = None


@dataclass(frozen=True)
class StateEntry:
    exists: bool
    value: Any
    version: int
    expires_at: datetime | None

    def as_output(self) -> dict[str, Any]:
        return {"exists": self.exists, "value": self.value, "version": self.version, "expiresAt": _iso(self.expires_at)}


@dataclass(frozen=True)
class StateWrite:
    key: str
    version: int
    created: bool
    expires_at: datetime | None

    def as_output(self) -> dict[str, Any]:
        return {"key": self.key, "version": self.version, "created": self.created, "expiresAt": _iso(self.expires_at)}


MISSING = StateEntry(exists=False, value=None, version=0, expires_at=None)

_LIVE = "(expires_at IS NULL OR expires_at > now())"
_SCOPE = "organization_id = %(org)s AND workflow_id = %(wf)s"

GET_SQL = f"SELECT value, version, expires_at FROM workflow_state WHERE {_SCOPE} AND key = %(key)s AND {_LIVE}"

# now() + NULL * interval is NULL: no TTL, no expiry.
_EXPIRY = "now() + %(ttl)s * interval '1 second'"

OVERWRITE_SQL = f"""
UPDATE workflow_state
   SET value = %(value)s::jsonb, expires_at = {_EXPIRY}, updated_by_execution_id = %(execution)s
 WHERE {_SCOPE} AND key = %(key)s AND {_LIVE}
RETURNING version, expires_at
"""
OVERWRITE_CAS_SQL = OVERWRITE_SQL.replace("RETURNING", "AND version = %(expected)s RETURNING")

LOCK_WORKFLOW_SQL = "SELECT 1 FROM workflow WHERE id = %(wf)s AND organization_id = %(org)s FOR NO KEY UPDATE"

COUNT_SQL = f"""
SELECT count(*) FILTER (WHERE key <> %(key)s),
       max(version) FILTER (WHERE key = %(key)s)
  FROM workflow_state
 WHERE {_SCOPE} AND {_LIVE}
"""

# Under the workflow lock the key is absent or expired; ON CONFLICT revives an expired row in
# place (the update trigger moves its version on) and restarts its created_at.
CREATE_SQL = f"""
INSERT INTO workflow_state (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id)
VALUES (%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, 1, {_EXPIRY}, %(execution)s)
ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
   SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at,
       updated_by_execution_id = EXCLUDED.updated_by_execution_id, created_at = now()
RETURNING version, expires_at
"""

SWEEP_SQL = """
DELETE FROM workflow_state
 WHERE id IN (SELECT id FROM workflow_state
               WHERE expires_at <= now()
               ORDER BY expires_at
               LIMIT %(limit)s
               FOR UPDATE SKIP LOCKED)
"""


def state_get(*, scope: StateScope, key: Any) -> StateEntry:
    """The live entry for a key, or MISSING (exists false, version 0) when absent or expired."""
    params = {"org": scope.organization_id, "wf": scope.workflow_id, "key": normalize_key(key)}
    with _storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(GET_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return MISSING
    value, version, expires_at = row
    return StateEntry(exists=True, value=_load(value), version=version, expires_at=expires_at)


def state_set(
    *, scope: StateScope, key: Any, value: Any, ttl: Any = None, expected_version: Any = None
) -> StateWrite:
    """Write a JSON value; with ``expected_version`` only if the live version equals it (0 = absent).

    Raises a StateError with its code for every refusal; a refused write changes nothing.
    """
    params = {
        "org": scope.organization_id,
        "wf": scope.workflow_id,
        "key": normalize_key(key),
        "value": encode_value(value),
        "ttl": parse_ttl(ttl),
        "execution": scope.execution_id,
    }
    expected = parse_expected_version(expected_version)
    params["expected"] = expected

    with _storage_errors("write"):
        if expected != 0:
            # The common case, overwriting a live key: one statement, compare-and-set included.
            with _savepoint_if_nested(), connection.cursor() as cursor:
                cursor.execute(OVERWRITE_SQL if expected is None else OVERWRITE_CAS_SQL, params)
                row = cursor.fetchone()
            if row is not None:
                return StateWrite(key=params["key"], version=row[0], created=False, expires_at=row[1])
            if expected is not None:
                raise StateVersionConflict(key=params["key"], expected=expected, current=_live_version(params))
        return _create(params, expected)


def _create(params: dict[str, Any], expected: int | None) -> StateWrite:
    """Add a live key (new or expired) under a per-workflow lock, so the ceiling is exact."""
    limit = settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW
    with transaction.atomic(), connection.cursor() as cursor:
        # Serialises the writers that may add a key to this workflow. FOR NO KEY UPDATE does not
        # block the foreign-key checks of other writers, nor any reader.
        cursor.execute(LOCK_WORKFLOW_SQL, params)
        if cursor.fetchone() is None:
            raise StateStorageError(
                "The workflow no longer exists (it was deleted while this run was in progress), so its "
                "state cannot be written. Nothing was stored.",
            )
        # A new statement, so its snapshot sees every key committed by earlier lock holders.
        cursor.execute(COUNT_SQL, params)
        others, current = cursor.fetchone()
        if current is not None:
            # Another writer created the key since our overwrite found nothing.
            if expected == 0:
                raise StateVersionConflict(key=params["key"], expected=0, current=current)
            cursor.execute(OVERWRITE_SQL, params)
            version, expires_at = cursor.fetchone()
            return StateWrite(key=params["key"], version=version, created=False, expires_at=expires_at)
        if others >= limit:
            raise StateKeyLimit(
                f"This workflow already has {others} live state keys, the most it may hold is {limit}. "
                "Reuse an existing key, give keys a TTL, or let expired keys be swept.",
                details={"limit": limit, "live": others},
                field="key",
            )
        cursor.execute(CREATE_SQL, params)
        version, expires_at = cursor.fetchone()
    return StateWrite(key=params["key"], version=version, created=True, expires_at=expires_at)


def _live_version(params: dict[str, Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(GET_SQL, params)
        row = cursor.fetchone()
    return 0 if row is None else row[1]


def admin_update(*, state_id: int, value: Any, expires_at: datetime | None) -> None:
    """An admin's repair of one row: validated like any write; the trigger moves the version."""
    from keeperstate.models import WorkflowState

    encode_value(value)
    with _storage_errors("write"):
        WorkflowState.objects.filter(pk=state_id).update(value=value, expires_at=expires_at)


def sweep_expired(*, batch_size: int | None = None) -> Iterator[int]:
    """Delete expired rows in batches, yielding each batch's count until none is left.

    SKIP LOCKED lets several sweepers share the work and never waits on a writer that is
    reviving a key; tombstones written by the delete trigger keep versions from being reused.
    """
    limit = batch_size or settings.KEEPERSTATE_SWEEP_BATCH_SIZE
    while True:
        with _storage_errors("sweep"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(SWEEP_SQL, {"limit": limit})
            deleted = cursor.rowcount
        if deleted == 0:
            return
        yield deleted


def count_expired() -> int:
    """How many rows await the sweeper (for progress reports and admin)."""
    with _storage_errors("read"), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workflow_state WHERE expires_at <= now()")
        return cursor.fetchone()[0]


def _load(value: Any) -> Any:
    # Django registers a text loader for jsonb (JSONField decodes for itself), so raw cursors
    # receive JSON text.
    return json.loads(value) if isinstance(value, str) else value


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


@contextmanager
def _storage_errors(action: str) -> Iterator[None]:
    """Database errors become STATE_STORAGE_ERROR; the driver's text goes to the log only."""
    try:
        yield
    except DatabaseError as exc:
        logger.exception("workflow state %s failed", action)
        raise StateStorageError(
            f"The database refused the state {action}, so nothing was changed. Run the workflow again; "
            "if it keeps failing, check that the workflow still exists.",
        ) from exc


def _savepoint_if_nested() -> Any:
    # Outside a transaction the statement commits on its own (one round trip); inside one, a
    # savepoint keeps a refused statement from aborting the caller's transaction.
    return transaction.atomic() if connection.in_atomic_block else nullcontext()
