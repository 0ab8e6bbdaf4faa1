"""The state store: how a run, the API and the MCP read and write a key of workflow state.

Get, Set, Increment and Delete are these functions, whoever calls them (the State actions,
keeperstate.state.clients for the API and the MCP, the benchmark). Other writers keep to the same
rules through the database: Django admin's repairs and the sweeper run their own statements
(keeperstate.state.maintenance), people's lists and histories are read through the ORM
(keeperstate.state.selectors), and whoever writes, the triggers compute versions
(keeperstate/state/models.py), record every change in the history and keep the usage counters.

Three paths, so the limits are exact under concurrency and each write is as few round trips as
it can be:

* **One statement** for Get, and for a write of a live key whose stored size does not grow: an
  Increment, a compare-and-set, a Set of a key this connection has seen live (``OVERWRITE_SQL``,
  see ``_seen``; with prepared statements, ADR 0068).
* **One function call** for any other Set (``keeperstate_set_key``: that overwrite, else the
  creation below), for Delete (``keeperstate_delete_key``: the row and its history event), and
  for a key with no row: ``keeperstate_create_key`` inserts it, and the usage trigger counts it (holding the
  workflow's and organization's usage rows until commit), then ``keeperstate_check_usage``
  reads the counters: exact, with no scan, whatever the size of the organization. Only a write
  that would pass a limit reclaims the scope's expired rows and counts again, so an expired key
  frees its slot although nobody wrote at expiry time.
* **The locked path** for a key that has a row (expired, to be revived; or live and growing):
  lock the row, decide (compare-and-set, Increment's arithmetic), upsert, check the counters.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from keeperstate.core.cursors import kept_cursor
from keeperstate.state.db import iso, load_json, logger, storage_errors
from keeperstate.state.errors import (
    StateInvalidValue,
    StateKeyLimit,
    StateOrgBudget,
    StateStorageError,
    StateVersionConflict,
)
from keeperstate.state.sql import LIVE_SQL
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
# The version bump the trigger would make (keeperstate/state/sql.py, VERSION_BUMP_WHEN):
# written here, the trigger's function is not called.
_BUMP = "version = version + 1, updated_at = now()"
_SET_ROW = f"expires_at = {_EXPIRY}, updated_by_execution_id = %(execution)s, {_BUMP}"
_INTEGER = "(jsonb_typeof(value) = 'number' AND value::text ~ '^-?[0-9]+$')"

GET_SQL = f"SELECT value, version, expires_at FROM workflow_state WHERE {_KEY} AND {LIVE_SQL}"

# The new value is cast, not to_jsonb(): a STABLE function over a column in an UPDATE is what a
# distributed planner refuses (docs/scaling.md); the text of a whole number is its JSON.
INCREMENT_SQL = f"""
UPDATE workflow_state SET value = ((value::text::numeric + %(by)s)::text)::jsonb, {_SET_ROW}
 WHERE {_KEY} AND {LIVE_SQL} AND {_INTEGER}
   AND abs(value::text::numeric + %(by)s) <= {MAX_SAFE_INTEGER}
   AND size_bytes >= octet_length((value::text::numeric + %(by)s)::text)
RETURNING value, version, expires_at
"""

# The delete and its history event with the deleting execution, in one call (state/sql.py);
# the deleted version, or NULL.
DELETE_SQL = "SELECT keeperstate_delete_key(%(org)s, %(wf)s, %(key)s, %(expected)s, %(execution)s)"

_LIMITS = "%(exact)s, %(max_wf)s, %(max_keys)s, %(max_bytes)s"
# A key with no row: insert and check in one call (state/sql.py); no row back = the key has one.
CREATE_SQL = f"""
SELECT version, expires_at
  FROM keeperstate_create_key(%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, %(ttl)s, %(execution)s, {_LIMITS})
"""
# Set: overwrite the live key (at the expected version, if any) or, with none, create it, in one
# call (state/sql.py); no row back = the locked path decides.
SET_SQL = f"""
SELECT version, expires_at, created
  FROM keeperstate_set_key(%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, %(ttl)s, %(execution)s, %(expected)s,
                           {_LIMITS})
"""
# The overwrite keeperstate_set_key makes, as a statement of its own; with an expected version,
# only at that version (compare-and-set, which never creates). No row back: the key has no row,
# or an expired, growing or other-versioned one. Prepared by the client (KEEPERSTATE_DB_PREPARED_
# STATEMENTS), its plan is kept as the function's is, without the call into PL/pgSQL (4% of an
# overwrite, ADR 0068); on a sharded database it routes by its organization_id.
_OVERWRITE = f"""
UPDATE workflow_state SET value = %(value)s::jsonb, {_SET_ROW}
 WHERE {_KEY} AND {LIVE_SQL} AND size_bytes >= octet_length((%(value)s::jsonb)::text){{cas}}
RETURNING version, expires_at
"""
OVERWRITE_SQL = _OVERWRITE.format(cas="")
OVERWRITE_CAS_SQL = _OVERWRITE.format(cas=" AND version = %(expected)s")
# The exact path (near the budget, or in a caller's transaction): hold every usage shard first.
LOCK_USAGE_SQL = "SELECT keeperstate_lock_usage(%(org)s)"

# The locked path.
LOCK_ROW_SQL = f"SELECT value, version, {LIVE_SQL}, size_bytes FROM workflow_state WHERE {_KEY} FOR UPDATE"
# Insert, or overwrite the existing row (live or expired) in place; reviving an expired row
# restarts its created_at. No now() in DO UPDATE SET (a distributed planner wants only immutable
# functions there): the inserted row carries the transaction's clock, EXCLUDED.updated_at.
UPSERT_SQL = f"""
INSERT INTO workflow_state
    (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id, created_at, updated_at)
VALUES (%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, 1, {_EXPIRY}, %(execution)s, now(), now())
ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
   SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at,
       updated_by_execution_id = EXCLUDED.updated_by_execution_id,
       version = workflow_state.version + 1, updated_at = EXCLUDED.updated_at,
       created_at = CASE WHEN workflow_state.expires_at IS NULL OR workflow_state.expires_at > EXCLUDED.updated_at
                         THEN workflow_state.created_at ELSE EXCLUDED.created_at END
RETURNING version, expires_at, size_bytes
"""
# After the write, in its transaction: the counters include it (state/sql.py).
CHECK_USAGE_SQL = f"SELECT keeperstate_check_usage(%(org)s, %(wf)s, %(adds_key)s, %(grew)s, {_LIMITS})"

# SQLSTATEs keeperstate_check_usage raises, with the usage before the write in DETAIL; and the
# one that asks for the exact path.
_KEY_LIMIT, _ORG_KEYS, _ORG_BYTES, _COUNT_EXACTLY = "KS001", "KS002", "KS003", "KS000"
_WORKFLOW_FK = "workflow_state_workflow_org_fk"


# --- reads -------------------------------------------------------------------------------------


def state_get(*, scope: StateScope, key: Any) -> StateEntry:
    """The live entry for a key, or MISSING (exists false, version 0) when absent or expired."""
    params: dict[str, Any] = {"org": scope.organization_id, "wf": scope.workflow_id, "key": normalize_key(key)}
    db = _db()
    with storage_errors("read"):
        cursor = kept_cursor(db)
        cursor.execute(GET_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return MISSING
    _seen(db).add((scope.organization_id, scope.workflow_id, params["key"]))
    value, version, expires_at = row
    return StateEntry(exists=True, value=load_json(value), version=version, expires_at=expires_at)


# --- writes ------------------------------------------------------------------------------------


def state_set(
    *, scope: StateScope, key: Any, value: Any, ttl: Any = None, expected_version: Any = None
) -> StateWrite:
    """Write a JSON value; with ``expected_version`` only if the live version equals it (0 = absent).

    Raises a StateError with its code for every refusal; a refused write changes nothing.
    """
    params = {**_params(scope, key, ttl), "value": encode_value(value)}
    expected = parse_expected_version(expected_version)

    db = _db()
    seen, known = _seen(db), (scope.organization_id, scope.workflow_id, params["key"])
    with storage_errors("write"), _refusals(params["key"]):
        if expected == 0:  # the key must have no live row, so there is nothing to overwrite
            row, created = _with_limits(db, CREATE_SQL, params), True
        elif (expected is not None or known in seen) and _prepares(db):  # the overwrite alone
            sql = OVERWRITE_SQL if expected is None else OVERWRITE_CAS_SQL
            row, created = _one(db, sql, {**params, "expected": expected}), False
        else:  # the overwrite (at the expected version), or else the creation, in one call
            row = _with_limits(db, SET_SQL, {**params, "expected": expected})
            created = row is not None and row[2]
        if row is not None:
            seen.add(known)
            return StateWrite(params["key"], version=row[0], created=created, expires_at=row[1], value=value)
        # The key has no row this write can take in one statement (expired, growing, another
        # version, or gone since this connection saw it): the locked path decides.
        seen.discard(known)

        def decide(current: _Current) -> Any:
            if expected is not None and expected != current.live_version:
                raise StateVersionConflict(
                    key=params["key"], expected=expected, current=current.live_version, current_value=current.value
                )
            return value

        return _locked_write(db, params, decide)


def state_increment(*, scope: StateScope, key: Any, by: Any = 1, ttl: Any = None) -> StateWrite:
    """Add ``by`` to an integer value atomically; an absent key is created at ``by``."""
    step = parse_increment(by)
    params = {**_params(scope, key, ttl), "by": step}
    db = _db()
    with storage_errors("write"), _refusals(params["key"]):
        row = _one(db, INCREMENT_SQL, params)
        if row is not None:
            return StateWrite(params["key"], version=row[1], created=False, expires_at=row[2], value=load_json(row[0]))
        row = _with_limits(db, CREATE_SQL, {**params, "value": encode_value(step)})
        if row is not None:
            return StateWrite(params["key"], version=row[0], created=True, expires_at=row[1], value=step)

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

        return _locked_write(db, params, decide)


def state_delete(*, scope: StateScope, key: Any, expected_version: Any = None) -> StateDelete:
    """Delete a live key; with ``expected_version`` only if the live version equals it."""
    expected = parse_expected_version(expected_version)
    params = {**_params(scope, key, None), "expected": expected}
    db = _db()
    with storage_errors("delete"):
        row = _one(db, DELETE_SQL, params)
        _seen(db).discard((scope.organization_id, scope.workflow_id, params["key"]))
        if row is not None and row[0] is not None:
            return StateDelete(deleted=True, previous_version=row[0])
        if expected is not None:
            current, value = _live_version(db, params)
            if current != expected:
                raise StateVersionConflict(key=params["key"], expected=expected, current=current, current_value=value)
    return StateDelete(deleted=False, previous_version=0)


@dataclass(frozen=True)
class _Current:
    """The key's row under lock: its value, version and size if any, and whether it is live."""

    value: Any
    version: int
    live: bool
    size: int

    @property
    def live_version(self) -> int:
        return self.version if self.live else 0


# Set while a caller's transaction writes at most one key (see one_key_transaction).
_one_key: ContextVar[bool] = ContextVar("keeperstate_one_key_transaction", default=False)


@contextmanager
def one_key_transaction() -> Iterator[None]:
    """A transaction in which the store writes at most one key, e.g. one node of a run and the
    record of its result. The fast usage check (sharded counters) is safe there: only a
    transaction that writes several keys could take shard locks in two orders and deadlock, so
    any other caller's transaction gets the exact path."""
    token = _one_key.set(True)
    try:
        with transaction.atomic():
            yield
    finally:
        _one_key.reset(token)


# Set while a whole run is one transaction (see whole_run_transaction).
_whole_run: ContextVar[bool] = ContextVar("keeperstate_whole_run_transaction", default=False)


@contextmanager
def whole_run_transaction() -> Iterator[None]:
    """One transaction for a whole run: its state writes, its node results and its record commit
    together (keeperstate.executions.service). The store sends no savepoint in it: a refused
    statement aborts the transaction, and the caller rolls it back and runs the workflow again the
    way that commits node by node. The exact usage path is taken, as in any transaction that may
    write several keys."""
    token = _whole_run.set(True)
    try:
        with transaction.atomic():
            yield
    finally:
        _whole_run.reset(token)


def _db() -> BaseDatabaseWrapper:
    """This thread's connection, looked up once per operation and passed along: every attribute
    read through ``django.db.connection`` (a proxy) looks the connection up again, 2–4 µs each
    (measured), several times per write against a statement of 200–300 µs."""
    return connections[DEFAULT_DB_ALIAS]


# Keys this connection has seen live (read, written), as (organization, workflow, key): a hint for
# a Set with no expected version, whose key is most likely still live when this connection wrote
# or read it last (a monitor's cursor, rewritten every run by the same worker threads). Such a Set
# sends the overwrite alone (OVERWRITE_SQL), as compare-and-set always does (it never creates);
# any other calls keeperstate_set_key, which creates the key in the same call when it has no row.
# A wrong hint costs round trips, never a wrong write (a miss goes to the locked path). Kept on
# the connection's wrapper, which one thread uses, and bounded: it starts over at _SEEN_MAX keys.
_SEEN_MAX = 4096


def _seen(db: BaseDatabaseWrapper) -> set[tuple[int, uuid.UUID, str]]:
    seen: set[tuple[int, uuid.UUID, str]] | None = getattr(db, "_keeperstate_seen_keys", None)
    if seen is None or len(seen) >= _SEEN_MAX:
        seen = set()
        db._keeperstate_seen_keys = seen  # type: ignore[attr-defined]
    return seen


def _prepares(db: BaseDatabaseWrapper) -> bool:
    """Whether the client prepares statements (KEEPERSTATE_DB_PREPARED_STATEMENTS): without, a
    statement sent alone is planned on every call, and keeperstate_set_key, whose plans PL/pgSQL
    keeps, is the faster overwrite."""
    return bool(db.settings_dict["OPTIONS"].get("server_side_binding"))


def _exact_only(db: BaseDatabaseWrapper) -> bool:
    return db.in_atomic_block and not _one_key.get()


def _with_limits(db: BaseDatabaseWrapper, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    """Run a write that may create a key (CREATE_SQL, SET_SQL) with the limits; None when the
    key has a row it cannot handle. Near the budget (KS000) the write is done again on the exact
    path."""
    exact = _exact_only(db)  # a caller's transaction may write several keys
    try:
        return _one(db, sql, {**params, **_limits(exact)})
    except DatabaseError as exc:
        if exact or _sqlstate(exc) != _COUNT_EXACTLY:
            raise
    return _one(db, sql, {**params, **_limits(True)})


def _locked_write(db: BaseDatabaseWrapper, params: dict[str, Any], decide: Callable[[_Current], Any]) -> StateWrite:
    """Write a key that has a row (or just lost it), then check the ceiling and the budget.

    ``decide`` sees the current row (locked) and returns the value to store, or raises. Near the
    budget (KS000), or inside a caller's transaction, it takes the exact path.
    """
    exact = _exact_only(db)  # a caller's transaction may write several keys
    try:
        return _locked_attempt(db, params, decide, exact=exact)
    except DatabaseError as exc:
        if exact or _sqlstate(exc) != _COUNT_EXACTLY:
            raise
    return _locked_attempt(db, params, decide, exact=True)


def _locked_attempt(
    db: BaseDatabaseWrapper, params: dict[str, Any], decide: Callable[[_Current], Any], *, exact: bool
) -> StateWrite:
    # Within a whole run's transaction, no savepoint: a refusal decided here (compare-and-set,
    # Increment's arithmetic) comes before any write, and one by the database aborts the run's
    # transaction, which its caller rolls back whole.
    with nullcontext() if _whole_run.get() else transaction.atomic(using=db.alias):
        cursor = kept_cursor(db)
        # Lock order everywhere: the key's row, then usage shards, then the workflow's usage row.
        cursor.execute(LOCK_ROW_SQL, params)
        row = cursor.fetchone()
        if exact:
            cursor.execute(LOCK_USAGE_SQL, params)
        current = _Current(load_json(row[0]), row[1], row[2], row[3]) if row else _Current(None, 0, False, 0)
        value = decide(current)
        write = {**params, "value": encode_value(value)}
        cursor.execute(UPSERT_SQL, write)
        version, expires_at, size = cursor.fetchone()
        grew = size > current.size
        cursor.execute(CHECK_USAGE_SQL, {**write, **_limits(exact), "adds_key": not current.live, "grew": grew})
    return StateWrite(params["key"], version=version, created=not current.live, expires_at=expires_at, value=value)


def _sqlstate(exc: DatabaseError) -> str | None:
    return getattr(exc.__cause__, "sqlstate", None)


def _limits(exact: bool) -> dict[str, Any]:
    return {
        "exact": exact,
        "max_wf": settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW,
        "max_keys": settings.KEEPERSTATE_ORG_MAX_KEYS,
        "max_bytes": settings.KEEPERSTATE_ORG_MAX_BYTES,
    }


class _refusals:  # noqa: N801 - a context manager; a class costs less than a generator per write
    """The database's refusals that are the user's to fix become their coded errors: a limit
    (raised by keeperstate_check_usage with the usage in DETAIL), or a workflow deleted or moved to
    another organization (keeperstate/workflows/move.py) mid-write."""

    def __init__(self, key: str):
        self.key = key

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not isinstance(exc, DatabaseError):
            return
        cause = exc.__cause__
        state = getattr(cause, "sqlstate", None)
        if state in (_KEY_LIMIT, _ORG_KEYS, _ORG_BYTES):
            raise _limit_error(state, self.key, int(cause.diag.message_detail or 0)) from None  # type: ignore[union-attr]
        if isinstance(cause, psycopg.errors.ForeignKeyViolation) and cause.diag.constraint_name == _WORKFLOW_FK:
            logger.warning("workflow state write refused: %s", cause)
            raise StateStorageError(
                "The workflow is no longer in this organization (it was deleted, or moved to another "
                "organization, while this write was in flight), so its state cannot be written here. Nothing "
                "was stored; look the workflow up again and retry.",
            ) from None


def _limit_error(state: str, key: str, used: int) -> StateKeyLimit | StateOrgBudget:
    if state == _KEY_LIMIT:
        limit = settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW
        return StateKeyLimit(
            f"This workflow already has {used} live state keys, the most it may hold is {limit}. "
            "Reuse an existing key, give keys a TTL, or delete keys you no longer need.",
            details={"limit": limit, "live": used},
            field="key",
        )
    if state == _ORG_KEYS:
        max_keys = settings.KEEPERSTATE_ORG_MAX_KEYS
        return StateOrgBudget(
            f"Your organization's workflows hold {used} live state keys, its budget is {max_keys}. "
            "Delete keys you no longer need or give them a TTL, or ask an administrator for a larger budget.",
            details={"limit": "keys", "max": max_keys, "used": used},
            field="key",
        )
    max_bytes = settings.KEEPERSTATE_ORG_MAX_BYTES
    return StateOrgBudget(
        f"Writing '{key}' would bring your organization's stored state to {used} bytes, over its budget "
        f"of {max_bytes}. Store smaller values, delete keys you no longer need, or ask an administrator.",
        details={"limit": "bytes", "max": max_bytes, "used": used},
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


def _one(db: BaseDatabaseWrapper, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    # Outside a transaction the statement commits on its own (one round trip); inside one, a
    # savepoint keeps a refused statement from aborting the caller's transaction, unless the
    # caller rolls back on a refusal anyway (whole_run_transaction).
    with transaction.atomic(using=db.alias) if db.in_atomic_block and not _whole_run.get() else nullcontext():
        cursor = kept_cursor(db)
        cursor.execute(sql, params)
        return cursor.fetchone()


def _live_version(db: BaseDatabaseWrapper, params: dict[str, Any]) -> tuple[int, Any]:
    row = _one(db, GET_SQL, params)
    return (0, None) if row is None else (row[1], load_json(row[0]))
