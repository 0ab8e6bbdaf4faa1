"""The JSON shapes of a workflow's state for people and programs: a live key with its metadata and
one change of a key's history. The API (DESIGN.md §15), the MCP tools and the editor's State panel
and chart (which read them from the API) answer these and nothing else.

Who made a change is ``actor``: null for a run's change (``execution`` names the run), else who
wrote outside a run (WorkflowStateEvent's ``actor_of``).
"""

from __future__ import annotations

from typing import Any

from keeperstate.state.db import iso
from keeperstate.state.models import WorkflowStateEvent, actor_of
from keeperstate.state.store import StateWrite

# The columns entry_json reads, for ``.values(*ENTRY_COLUMNS)``.
ENTRY_COLUMNS = ("key", "value", "version", "expires_at", "updated_at", "updated_by_execution_id")


def entry_json(row: dict[str, Any]) -> dict[str, Any]:
    """A live key: ``{"key", "value", "version", "expiresAt", "updatedAt", "updatedByExecution"}``."""
    execution = row["updated_by_execution_id"]
    return {
        "key": row["key"],
        "value": row["value"],
        "version": row["version"],
        "expiresAt": iso(row["expires_at"]),
        "updatedAt": iso(row["updated_at"]),
        "updatedByExecution": str(execution) if execution else None,
    }


def event_json(event: WorkflowStateEvent) -> dict[str, Any]:
    """One change of a key: ``{"operation", "oldValue", "newValue", "oldVersion", "newVersion",
    "execution", "actor", "at"}``."""
    return {
        "operation": event.operation,
        "oldValue": event.old_value,
        "newValue": event.new_value,
        "oldVersion": event.old_version,
        "newVersion": event.new_version,
        "execution": str(event.execution_id) if event.execution_id else None,
        "actor": actor_of(event.execution_id, event.actor),
        "at": iso(event.created_at),
    }


def increment_json(write: StateWrite) -> dict[str, Any]:
    """An increment's answer: ``{"key", "value", "version", "created"}`` (the value after it)."""
    return {"key": write.key, "value": write.value, "version": write.version, "created": write.created}
