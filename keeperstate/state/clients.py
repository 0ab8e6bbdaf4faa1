"""State read and written by people and programs outside runs: the API's ``…/state/`` routes and
the MCP tools (DESIGN.md §15, §16).

Each write is the store's own (keeperstate.state.store: versions, TTL, limits and history are
decided there, never here), then names its actor on the history event its version made and
appends an audit row, all three in one transaction: a write that cannot be audited is not made.
``one_key_transaction`` keeps the store's fast usage check, since the transaction writes one key.

Reads of one key or a page of keys add the row's metadata (updatedAt, the writing run) that a
run's State Get does not need; liveness is the ORM's one definition (WorkflowStateQuerySet).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from keeperstate.audit.log import audit
from keeperstate.state.db import storage_errors
from keeperstate.state.models import WorkflowState
from keeperstate.state.selectors import state_events
from keeperstate.state.shapes import ENTRY_COLUMNS, entry_json, event_json
from keeperstate.state.store import (
    StateDelete,
    StateScope,
    StateWrite,
    one_key_transaction,
    state_delete,
    state_increment,
    state_set,
)
from keeperstate.state.values import nfc, normalize_key

MAX_PAGE = 200
# The event the write's version made (along the history's primary key, organization, workflow,
# key, created_at, id: the shard key leads); a run's events name their execution and are never
# renamed.
NAME_WRITE_SQL = """
UPDATE workflow_state_event SET actor = %(actor)s
 WHERE organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s AND operation IN ('insert', 'update')
   AND new_version = %(version)s AND execution_id IS NULL
"""
NAME_DELETE_SQL = """
UPDATE workflow_state_event SET actor = %(actor)s
 WHERE organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s AND operation = 'delete'
   AND old_version = %(version)s AND execution_id IS NULL
"""


@dataclass(frozen=True)
class Client:
    """Who writes: the history's actor text (``api:alice (token ci)``) and the audit's channel."""

    user: Any
    channel: str  # "api" or "mcp"
    token_name: str | None = None

    @property
    def actor(self) -> str:
        name = f"{self.channel}:{self.user.get_username()}"
        return f"{name} (token {self.token_name})" if self.token_name else name


def _live(scope: StateScope) -> Any:
    return WorkflowState.objects.filter(organization_id=scope.organization_id, workflow_id=scope.workflow_id).live()


def key_entry(*, scope: StateScope, key: Any) -> dict[str, Any] | None:
    """One live key with its metadata, or None when it is absent or expired."""
    with storage_errors("read"):
        row = _live(scope).filter(key=normalize_key(key)).values(*ENTRY_COLUMNS).first()
    return entry_json(row) if row else None


def key_page(*, scope: StateScope, prefix: str = "", after: str | None = None, size: int = 50) -> tuple[
    list[dict[str, Any]], str | None
]:
    """Live keys in key order from after ``after``, at most ``size``; and the last key shown when
    more follow (the next page's ``after``), else None."""
    rows = _live(scope).order_by("key")
    if prefix:
        rows = rows.filter(key__startswith=nfc(prefix))  # keys are stored in NFC
    if after is not None:
        rows = rows.filter(key__gt=after)
    with storage_errors("read"):
        found = list(rows.values(*ENTRY_COLUMNS)[: size + 1])
    more = len(found) > size
    page = [entry_json(row) for row in found[:size]]
    return page, (page[-1]["key"] if more else None)


def key_history(*, scope: StateScope, key: Any, limit: int = 50) -> list[dict[str, Any]]:
    """The key's changes, newest first."""
    events = state_events(scope=scope, key=normalize_key(key), limit=min(limit, MAX_PAGE))
    return [event_json(event) for event in events]


def client_set(
    *, scope: StateScope, client: Client, key: Any, value: Any, ttl: Any = None, expected_version: Any = None
) -> StateWrite:
    """The store's Set (compare-and-set with ``expected_version``; 0 = create only)."""
    with one_key_transaction():
        write = state_set(scope=scope, key=key, value=value, ttl=ttl, expected_version=expected_version)
        _name(NAME_WRITE_SQL, scope, write.key, write.version, client)
        _audit("state.set", scope, client, write.key, write.version, created=write.created)
    return write


def client_increment(*, scope: StateScope, client: Client, key: Any, by: Any = 1, ttl: Any = None) -> StateWrite:
    """The store's Increment."""
    with one_key_transaction():
        write = state_increment(scope=scope, key=key, by=by, ttl=ttl)
        _name(NAME_WRITE_SQL, scope, write.key, write.version, client)
        _audit("state.increment", scope, client, write.key, write.version, created=write.created)
    return write


def client_delete(*, scope: StateScope, client: Client, key: Any, expected_version: Any = None) -> StateDelete:
    """The store's Delete (only at ``expected_version`` when given)."""
    with one_key_transaction():
        deleted = state_delete(scope=scope, key=key, expected_version=expected_version)
        if deleted.deleted:
            text = normalize_key(key)
            _name(NAME_DELETE_SQL, scope, text, deleted.previous_version, client)
            _audit("state.delete", scope, client, text, deleted.previous_version)
    return deleted


def _name(sql: str, scope: StateScope, key: str, version: int, client: Client) -> None:
    params: dict[str, Any] = {
        "actor": client.actor, "org": scope.organization_id, "wf": scope.workflow_id, "key": key, "version": version,
    }
    with storage_errors("write"), connection.cursor() as cursor:
        cursor.execute(sql, params)


def _audit(action: str, scope: StateScope, client: Client, key: str, version: int, **more: Any) -> None:
    audit(
        action,
        organization=scope.organization_id,
        actor=client.user,
        details={"workflow": str(scope.workflow_id), "key": key, "version": version, "via": client.channel,
                 "token": client.token_name, **more},
    )

