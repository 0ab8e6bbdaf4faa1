"""The state store: how a run, the API and the MCP read and write a key of workflow state.

Get, Set, Increment and Delete are these functions, whoever calls them (the State actions,
keeperstate.state.clients for the API and the MCP, the benchmark). Other writers keep to the same
rules through the database: Django admin's repairs and the sweeper run their own statements
(keeperstate.state.maintenance), people's lists and histories are read through the ORM
(keeperstate.state.selectors), and whoever writes, the triggers compute versions
(keeperstate/state/models.py), record every change in the history and keep the usage counters.

Every operation is one statement, so the limits are exact under concurrency and each write is
one round trip where it can be:

* **Get** is a ``SELECT`` on the key.
* **A write** is one call of a store function (keeperstate/state/sql.py): ``keeperstate_set_key``
  (overwrite the live key in place, at the expected version for compare-and-set, or create a key
  that has no row), ``keeperstate_create_key`` (a key that must not exist),
  ``keeperstate_increment_key`` (add to the live whole number, or create the key),
  ``keeperstate_delete_key``. A key with no row is inserted and the usage trigger counts it
  (holding the workflow's and organization's usage rows until commit); then
  ``keeperstate_check_usage`` reads the counters: exact, with no scan, whatever the size of the
  organization. Only a write that would pass a limit reclaims the scope's expired rows and counts
  again, so an expired key frees its slot although nobody wrote at expiry time.
* **The locked path**, ``keeperstate_write_locked``, for a key those calls could not write (a row
  that is expired, to be revived; growing; at another version; not a whole number): lock the row,
  decide (compare-and-set, Increment's arithmetic), upsert, check the counters, in the same call.

Functions, not statements sent alone, because each runs whole where the key is: on a sharded
database on the key's shard, with that node's clock for every expiry it reads or writes (a plain
UPDATE would take its now() from the coordinator: docs/state.md, "One clock"), and its locks are
a local transaction's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from keeperstate.core.cursors import kept_cursor
from keeperstate.core.sharding import names_constraint
from keeperstate.state.db import iso, load_json, logger, storage_errors
from keeperstate.state.errors import (
    StateInvalidValue,
    StateKeyLimit,
    StateOrgBudget,
    StateStorageError,
    StateVersionConflict,
    StateWriteConflict,
)
from keeperstate.state.sql import LIVE_SQL
from keeperstate.state.values import (
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

_KEY = "organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s"

GET_SQL = f"SELECT value, version, expires_at FROM workflow_state WHERE {_KEY} AND {LIVE_SQL}"

_LIMITS = "%(exact)s, %(max_wf)s, %(max_keys)s, %(max_bytes)s"
# A key that must not exist (compare-and-set at version 0): insert and check in one call; no row
# back = the key has a row.
CREATE_SQL = f"""
SELECT version, expires_at
  FROM keeperstate_create_key(%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, %(ttl)s, %(execution)s, {_LIMITS})
"""
# Set: overwrite the live key (at the expected version, if any) or, with none, create it; no row
# back = the locked path decides.
SET_SQL = f"""
SELECT version, expires_at, created
  FROM keeperstate_set_key(%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, %(ttl)s, %(execution)s, %(expected)s,
                           {_LIMITS})
"""
# Increment: add to the live whole number, or create the key; no row back = the locked path.
INCREMENT_SQL = f"""
SELECT value, version, expires_at, created
  FROM keeperstate_increment_key(%(org)s, %(wf)s, %(key)s, %(by)s, %(ttl)s, %(execution)s, {_LIMITS})
"""
# The locked path (state/sql.py): a Set (by NULL) or an Increment, and its outcome.
WRITE_LOCKED_SQL = f"""
SELECT outcome, value, version, expires_at, created
  FROM keeperstate_write_locked(%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, %(by)s, %(ttl)s, %(execution)s,
                                %(expected)s, {_LIMITS})
"""
# The delete and its history event with the deleting execution, in one call (state/sql.py);
# the deleted version, or NULL.
DELETE_SQL = "SELECT keeperstate_delete_key(%(org)s, %(wf)s, %(key)s, %(expected)s, %(execution)s)"

# SQLSTATEs keeperstate_check_usage raises, with the usage before the write in DETAIL; and the
# one that asks for the exact path.
_KEY_LIMIT, _ORG_KEYS, _ORG_BYTES, _COUNT_EXACTLY = "KS001", "KS002", "KS003", "KS000"
_WORKFLOW_FK, _FOREIGN_KEY = "workflow_state_workflow_org_fk", "23503"


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
    with storage_errors("write"), _refusals(params["key"]):
        if expected == 0:  # the key must have no live row, so there is nothing to overwrite
            row, created = _with_limits(db, CREATE_SQL, params), True
        else:  # the overwrite (at the expected version), or else the creation, in one call
            row = _with_limits(db, SET_SQL, {**params, "expected": expected})
            created = row is not None and row[2]
        if row is not None:
            return StateWrite(params["key"], version=row[0], created=created, expires_at=row[1], value=value)
        # The key has a row this call could not take (expired, growing, another version): the
        # locked path decides.
        outcome, current, version, expires_at, created = _locked_write(db, {**params, "by": None, "expected": expected})
        if outcome == "conflict":
            assert expected is not None  # only a compare-and-set can conflict
            raise StateVersionConflict(key=params["key"], expected=expected, current=version,
                                       current_value=load_json(current))
        return StateWrite(params["key"], version=version, created=created, expires_at=expires_at, value=value)


def state_increment(*, scope: StateScope, key: Any, by: Any = 1, ttl: Any = None) -> StateWrite:
    """Add ``by`` to an integer value atomically; an absent key is created at ``by``."""
    step = parse_increment(by)
    params = {**_params(scope, key, ttl), "by": step}
    db = _db()
    with storage_errors("write"), _refusals(params["key"]):
        row = _with_limits(db, INCREMENT_SQL, params)
        if row is not None:
            return StateWrite(params["key"], version=row[1], created=row[3], expires_at=row[2], value=load_json(row[0]))
        # An expired row, a value that is not a whole number or would grow: the locked path.
        outcome, value, version, expires_at, created = _locked_write(
            db, {**params, "value": None, "expected": None}
        )
    if outcome == "not_integer":
        raise StateInvalidValue(
            f"State Increment needs a whole number, but '{params['key']}' holds "
            f"{json.dumps(load_json(value))[:60]}. Set it to a number first, or use another key.",
            field="key",
        )
    if outcome == "overflow":
        raise StateInvalidValue(
            f"Incrementing '{params['key']}' by {step} would pass ±2^53−1, beyond what JSON readers "
            "keep exactly. Reset the counter.",
            field="by",
        )
    return StateWrite(params["key"], version=version, created=created, expires_at=expires_at, value=load_json(value))


def state_delete(*, scope: StateScope, key: Any, expected_version: Any = None) -> StateDelete:
    """Delete a live key; with ``expected_version`` only if the live version equals it."""
    expected = parse_expected_version(expected_version)
    params = {**_params(scope, key, None), "expected": expected}
    db = _db()
    with storage_errors("delete"):
        row = _one(db, DELETE_SQL, params)
        if row is not None and row[0] is not None:
            return StateDelete(deleted=True, previous_version=row[0])
        if expected is not None:
            current, value = _live_version(db, params)
            if current != expected:
                raise StateVersionConflict(key=params["key"], expected=expected, current=current, current_value=value)
    return StateDelete(deleted=False, previous_version=0)


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
    write several keys, unless the run says it writes one at most (at_most_one_key)."""
    token = _whole_run.set(True)
    try:
        with transaction.atomic(), at_most_one_key(False):
            yield
    finally:
        _whole_run.reset(token)


@contextmanager
def at_most_one_key(one: bool) -> Iterator[None]:
    """Within the caller's transaction, whether it writes one key at most (``one``): then the
    store may use its fast usage check, as in one_key_transaction."""
    token = _one_key.set(one)
    try:
        yield
    finally:
        _one_key.reset(token)


def _db() -> BaseDatabaseWrapper:
    """This thread's connection, looked up once per operation and passed along: every attribute
    read through ``django.db.connection`` (a proxy) looks the connection up again, 2–4 µs each
    (measured), several times per write against a statement of 200–300 µs."""
    return connections[DEFAULT_DB_ALIAS]


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


def _locked_write(db: BaseDatabaseWrapper, params: dict[str, Any]) -> tuple[Any, ...]:
    """The locked path (keeperstate_write_locked): (outcome, value, version, expires_at, created).
    Near the budget (KS000), or inside a caller's transaction, it takes the exact path."""
    row = _with_limits(db, WRITE_LOCKED_SQL, params)
    assert row is not None  # the function always answers one row
    return row


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
        if state == _FOREIGN_KEY and names_constraint(cause, _WORKFLOW_FK):
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


# Deadlock detected (Postgres's, and Citus's for a distributed deadlock) and serialization failure:
# the database cancelled the statement, which changed nothing. A conflict among writers, never a
# storage error: sent again when it was the whole transaction; inside a caller's transaction,
# which the database may have cancelled whole, a StateWriteConflict.
_CANCELLED = ("40P01", "40001")
_ATTEMPTS = 3


def _one(db: BaseDatabaseWrapper, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    # Outside a transaction the statement commits on its own (one round trip); inside one, a
    # savepoint keeps a refused statement from aborting the caller's transaction, unless the
    # caller rolls back on a refusal anyway (whole_run_transaction).
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            with transaction.atomic(using=db.alias) if db.in_atomic_block and not _whole_run.get() else nullcontext():
                cursor = kept_cursor(db)
                cursor.execute(sql, params)
                return cursor.fetchone()
        except DatabaseError as exc:
            if _sqlstate(exc) not in _CANCELLED:
                raise
            logger.info("state write cancelled by the database (%s), attempt %d", _sqlstate(exc), attempt)
            if db.in_atomic_block or attempt == _ATTEMPTS:
                raise StateWriteConflict(
                    f"Other writers of '{params.get('key')}' got in the way and the database cancelled this write "
                    "before it changed anything. Run it again."
                ) from exc
    return None


def _live_version(db: BaseDatabaseWrapper, params: dict[str, Any]) -> tuple[int, Any]:
    row = _one(db, GET_SQL, params)
    return (0, None) if row is None else (row[1], load_json(row[0]))
