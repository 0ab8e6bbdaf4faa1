"""The state store: the only code that reads or writes workflow state.

Every caller (the State actions, Django admin, the sweeper, the benchmark) goes through these
functions. Versions are computed by the database triggers (keeperstate/models/state.py), never
here, and the history trigger records every change.

Two paths, chosen so the limits are exact under concurrency and the common case is cheap:

* **One statement** when a write cannot grow anything: Get; Set or Increment of a live key
  whose stored size does not grow (compare-and-set included); Delete.
* **The locked path** for a write that may add a live key or grow the bytes stored: lock the
  organization row, lock the key's row, read usage in one fresh statement, check the
  per-workflow ceiling and the organization budget, write. Only these writers serialise (per
  organization); readers and same-size overwrites never wait for them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from keeperstate.state.db import LIVE_SQL, iso, load_json, storage_errors
from keeperstate.state.errors import (
    StateInvalidValue,
    StateKeyLimit,
    StateOrgBudget,
    StateStorageError,
    StateVersionConflict,
)
from keeperstate.state.values import (
    MAX_SAFE_INTEGER,
    encode_value,
    normalize_key,
    parse_expected_version,
    parse_increment,
    parse_ttl,
)


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
        return {"exists": self.exists, "value": self.value, "version": self.version, "expiresAt": iso(self.expires_at)}


@dataclass(frozen=True)
class StateWrite:
    key: str
    version: int
    created: bool
    expires_at: datetime | None
    value: Any = None  # the value now stored (Increment reports it)

    def as_output(self) -> dict[str, Any]:
        return {"key": self.key, "version": self.version, "created": self.created, "expiresAt": iso(self.expires_at)}


@dataclass(frozen=True)
class StateDelete:
    deleted: bool
    previous_version: int

    def as_output(self) -> dict[str, Any]:
        return {"deleted": self.deleted, "previousVersion": self.previous_version}


MISSING = StateEntry(exists=False, value=None, version=0, expires_at=None)

_SCOPE = "organization_id = %(org)s AND workflow_id = %(wf)s"
_KEY = f"{_SCOPE} AND key = %(key)s"
# now() + NULL * interval is NULL: no TTL, no expiry.
_EXPIRY = "now() + %(ttl)s * interval '1 second'"
_SET_ROW = f"expires_at = {_EXPIRY}, updated_by_execution_id = %(execution)s"
_INTEGER = "(jsonb_typeof(value) = 'number' AND value::text ~ '^-?[0-9]+$')"

GET_SQL = f"SELECT value, version, expires_at FROM workflow_state WHERE {_KEY} AND {LIVE_SQL}"

# A live key, no bigger than before (jsonb's own rendering, which size_bytes measures).
OVERWRITE_SQL = f"""
UPDATE workflow_state SET value = %(value)s::jsonb, {_SET_ROW}
 WHERE {_KEY} AND {LIVE_SQL} AND size_bytes >= octet_length((%(value)s::jsonb)::text)
RETURNING version, expires_at
"""
OVERWRITE_CAS_SQL = OVERWRITE_SQL.replace("RETURNING", "AND version = %(expected)s RETURNING")

INCREMENT_SQL = f"""
UPDATE workflow_state SET value = to_jsonb(value::text::numeric + %(by)s), {_SET_ROW}
 WHERE {_KEY} AND {LIVE_SQL} AND {_INTEGER}
   AND abs(value::text::numeric + %(by)s) <= {MAX_SAFE_INTEGER}
   AND size_bytes >= octet_length((value::text::numeric + %(by)s)::text)
RETURNING value, version, expires_at
"""

# Still one statement: the InitPlan names the deleting execution (transaction-local) before the
# history trigger reads it at the end of the statement.
DELETE_SQL = f"""
WITH run AS MATERIALIZED (SELECT set_config('keeperstate.execution', coalesce(%(execution)s::text, ''), true) AS id)
DELETE FROM workflow_state
 WHERE {_KEY} AND {LIVE_SQL} AND (SELECT id FROM run) IS NOT NULL
RETURNING version
"""
DELETE_CAS_SQL = DELETE_SQL.replace("RETURNING", "AND version = %(expected)s RETURNING")

# The locked path. Locking the organization row serialises the writers that may grow its usage;
# FOR NO KEY UPDATE blocks no reader and no foreign-key check.
LOCK_ORG_SQL = "SELECT 1 FROM organization WHERE id = %(org)s FOR NO KEY UPDATE"
LOCK_ROW_SQL = f"SELECT value, version, {LIVE_SQL} FROM workflow_state WHERE {_KEY} FOR UPDATE"
WORKFLOW_EXISTS_SQL = "SELECT 1 FROM workflow WHERE id = %(wf)s AND organization_id = %(org)s"
# A statement of its own, after the locks, so its snapshot sees every earlier lock holder's write.
USAGE_SQL = f"""
SELECT count(*) FILTER (WHERE workflow_id = %(wf)s AND key <> %(key)s AND {LIVE_SQL}),
       count(*) FILTER (WHERE (workflow_id <> %(wf)s OR key <> %(key)s) AND {LIVE_SQL}),
       coalesce(sum(size_bytes) FILTER (WHERE workflow_id <> %(wf)s OR key <> %(key)s), 0),
       octet_length((%(value)s::jsonb)::text)
  FROM workflow_state
 WHERE organization_id = %(org)s
"""
# Insert, or overwrite the existing row (live or expired) in place; reviving an expired row
# restarts its created_at.
UPSERT_SQL = f"""
INSERT INTO workflow_state (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id)
VALUES (%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, 1, {_EXPIRY}, %(execution)s)
ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
   SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at,
       updated_by_execution_id = EXCLUDED.updated_by_execution_id,
       created_at = CASE WHEN workflow_state.expires_at IS NULL OR workflow_state.expires_at > now()
                         THEN workflow_state.created_at ELSE now() END
RETURNING version, expires_at
"""



# --- reads -------------------------------------------------------------------------------------


def state_get(*, scope: StateScope, key: Any) -> StateEntry:
    """The live entry for a key, or MISSING (exists false, version 0) when absent or expired."""
    params: dict[str, Any] = {"org": scope.organization_id, "wf": scope.workflow_id, "key": normalize_key(key)}
    with storage_errors("read"), connection.cursor() as cursor:
        cursor.execute(GET_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return MISSING
    value, version, expires_at = row
    return StateEntry(exists=True, value=load_json(value), version=version, expires_at=expires_at)


# --- writes ------------------------------------------------------------------------------------


def state_set(
    *, scope: StateScope, key: Any, value: Any, ttl: Any = None, expected_version: Any = None
) -> StateWrite:
    """Write a JSON value; with ``expected_version`` only if the live version equals it (0 = absent).

    Raises a StateError with its code for every refusal; a refused write changes nothing.
    """
    params = _params(scope, key, ttl)
    params["value"] = encode_value(value)
    params["expected"] = expected = parse_expected_version(expected_version)

    with storage_errors("write"):
        if expected != 0:
            row = _one(OVERWRITE_SQL if expected is None else OVERWRITE_CAS_SQL, params)
            if row is not None:
                return StateWrite(params["key"], version=row[0], created=False, expires_at=row[1], value=value)

        def decide(current: _Current) -> Any:
            if expected is not None and expected != current.live_version:
                raise StateVersionConflict(
                    key=params["key"], expected=expected, current=current.live_version, current_value=current.value
                )
            return value

        return _locked_write(params, decide)


def state_increment(*, scope: StateScope, key: Any, by: Any = 1, ttl: Any = None) -> StateWrite:
    """Add ``by`` to an integer value atomically; an absent key is created at ``by``."""
    params = _params(scope, key, ttl)
    params["by"] = step = parse_increment(by)

    with storage_errors("write"):
        row = _one(INCREMENT_SQL, params)
        if row is not None:
            return StateWrite(params["key"], version=row[1], created=False, expires_at=row[2], value=load_json(row[0]))

        def decide(current: _Current) -> Any:
            if not current.live:
                return step
            if isinstance(current.value, bool) or not isinstance(current.value, int):
                raise StateInvalidValue(
                    f"State Increment needs a whole number, but '{params['key']}' holds "
                    f"{json.dumps(current.value)[:60]}. Set it to a number first, or use another key.",
                    field="key",
                )
            result = current.value + step
            if abs(result) > MAX_SAFE_INTEGER:
                raise StateInvalidValue(
                    f"Incrementing '{params['key']}' by {step} would pass ±2^53−1, beyond what JSON readers "
                    "keep exactly. Reset the counter.",
                    field="by",
                )
            return result

        return _locked_write(params, decide)


def state_delete(*, scope: StateScope, key: Any, expected_version: Any = None) -> StateDelete:
    """Delete a live key; with ``expected_version`` only if the live version equals it."""
    params = _params(scope, key, None)
    params["expected"] = expected = parse_expected_version(expected_version)
    with storage_errors("delete"):
        row = _one(DELETE_SQL if expected is None else DELETE_CAS_SQL, params)
        if row is not None:
            return StateDelete(deleted=True, previous_version=row[0])
        if expected is not None:
            current, value = _live_version(params)
            if current != expected:
                raise StateVersionConflict(key=params["key"], expected=expected, current=current, current_value=value)
    return StateDelete(deleted=False, previous_version=0)


@dataclass(frozen=True)
class _Current:
    """The key's row under lock: its value and version if any, and whether it is live."""

    value: Any
    version: int
    live: bool

    @property
    def live_version(self) -> int:
        return self.version if self.live else 0


def _locked_write(params: dict[str, Any], decide: Callable[[_Current], Any]) -> StateWrite:
    """Write under the organization lock, checking the workflow ceiling and organization budget.

    ``decide`` sees the current row (locked) and returns the value to store, or raises.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(LOCK_ORG_SQL, params)
        cursor.execute(LOCK_ROW_SQL, params)
        row = cursor.fetchone()
        current = _Current(load_json(row[0]), row[1], row[2]) if row else _Current(None, 0, False)
        value = decide(current)
        params["value"] = encode_value(value)
        if not current.live:
            cursor.execute(WORKFLOW_EXISTS_SQL, params)
            if cursor.fetchone() is None:
                raise StateStorageError(
                    "The workflow no longer exists (it was deleted while this run was in progress), so its "
                    "state cannot be written. Nothing was stored.",
                )
        cursor.execute(USAGE_SQL, params)
        workflow_keys, org_keys, org_bytes, size = cursor.fetchone()
        _check_limits(params["key"], adds_key=not current.live, workflow_keys=workflow_keys, org_keys=org_keys,
                      org_bytes=org_bytes + size)
        cursor.execute(UPSERT_SQL, params)
        version, expires_at = cursor.fetchone()
    return StateWrite(params["key"], version=version, created=not current.live, expires_at=expires_at, value=value)


def _check_limits(key: str, *, adds_key: bool, workflow_keys: int, org_keys: int, org_bytes: int) -> None:
    limit = settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW
    if adds_key and workflow_keys >= limit:
        raise StateKeyLimit(
            f"This workflow already has {workflow_keys} live state keys, the most it may hold is {limit}. "
            "Reuse an existing key, give keys a TTL, or delete keys you no longer need.",
            details={"limit": limit, "live": workflow_keys},
            field="key",
        )
    max_keys = settings.KEEPERSTATE_ORG_MAX_KEYS
    if adds_key and org_keys >= max_keys:
        raise StateOrgBudget(
            f"Your organization's workflows hold {org_keys} live state keys, its budget is {max_keys}. "
            "Delete keys you no longer need or give them a TTL, or ask an administrator for a larger budget.",
            details={"limit": "keys", "max": max_keys, "used": org_keys},
            field="key",
        )
    max_bytes = settings.KEEPERSTATE_ORG_MAX_BYTES
    if org_bytes > max_bytes:
        raise StateOrgBudget(
            f"Writing '{key}' would bring your organization's stored state to {org_bytes} bytes, over its budget "
            f"of {max_bytes}. Store smaller values, delete keys you no longer need, or ask an administrator.",
            details={"limit": "bytes", "max": max_bytes, "used": org_bytes},
            field="value",
        )


def _params(scope: StateScope, key: Any, ttl: Any) -> dict[str, Any]:
    return {
        "org": scope.organization_id,
        "wf": scope.workflow_id,
        "key": normalize_key(key),
        "ttl": parse_ttl(ttl),
        "execution": scope.execution_id,
    }


def _one(sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    # Outside a transaction the statement commits on its own (one round trip); inside one, a
    # savepoint keeps a refused statement from aborting the caller's transaction.
    with transaction.atomic() if connection.in_atomic_block else nullcontext(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _live_version(params: dict[str, Any]) -> tuple[int, Any]:
    row = _one(GET_SQL, params)
    return (0, None) if row is None else (row[1], load_json(row[0]))
