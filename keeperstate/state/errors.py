"""State failures, each with its stable code (DESIGN.md §7)."""

from __future__ import annotations

from typing import Any

from keeperstate.core.errors import Code, CodedError


class StateError(CodedError):
    """Any refusal of the state store (each subclass has its code)."""


class StateInvalidKey(StateError):
    error = Code.STATE_INVALID_KEY


class StateInvalidValue(StateError):
    error = Code.STATE_INVALID_VALUE


class StateValueTooLarge(StateError):
    error = Code.STATE_VALUE_TOO_LARGE


class StateInvalidTTL(StateError):
    error = Code.STATE_INVALID_TTL


class StateInvalidExpectedVersion(StateError):
    error = Code.STATE_INVALID_EXPECTED_VERSION


class StateKeyLimit(StateError):
    error = Code.STATE_KEY_LIMIT


class StateNoWorkflowContext(StateError):
    error = Code.STATE_NO_WORKFLOW_CONTEXT


class StateStorageError(StateError):
    error = Code.STATE_STORAGE_ERROR


class StateWriteConflict(StateError):
    """The database cancelled the write to break a deadlock among writers (on Citus, its detector
    of distributed deadlocks) inside a caller's transaction, which cannot be retried here."""

    error = Code.STATE_WRITE_CONFLICT


class StateVersionConflict(StateError):
    error = Code.STATE_VERSION_CONFLICT

    def __init__(self, *, key: str, expected: int, current: int, current_value: Any = None):
        current_text = "the key does not exist" if current == 0 else f"its current version is {current}"
        super().__init__(
            f"State key '{key}' was changed by another run: expected version {expected}, but "
            f"{current_text}. Read it again with State Get and retry with the new version.",
            details={"expected": expected, "current": current},
            field="expectedVersion",
        )
        self.expected = expected
        self.current = current
        # For State Set's conflict branch; kept out of details so a failure message never
        # carries the stored value.
        self.current_value = current_value


class StateOrgBudget(StateError):
    error = Code.STATE_ORG_BUDGET
