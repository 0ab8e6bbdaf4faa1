"""State failures, each with its stable code (DESIGN.md §7)."""

from __future__ import annotations

from typing import Any

from keeperstate.core.errors import CodedError


class StateError(CodedError):
    code = "STATE_ERROR"


class StateInvalidKey(StateError):
    code = "STATE_INVALID_KEY"


class StateInvalidValue(StateError):
    code = "STATE_INVALID_VALUE"


class StateValueTooLarge(StateError):
    code = "STATE_VALUE_TOO_LARGE"
    status_code = 413


class StateInvalidTTL(StateError):
    code = "STATE_INVALID_TTL"


class StateInvalidExpectedVersion(StateError):
    code = "STATE_INVALID_EXPECTED_VERSION"


class StateKeyLimit(StateError):
    code = "STATE_KEY_LIMIT"
    status_code = 409


class StateNoWorkflowContext(StateError):
    code = "STATE_NO_WORKFLOW_CONTEXT"


class StateStorageError(StateError):
    code = "STATE_STORAGE_ERROR"
    status_code = 503


class StateVersionConflict(StateError):
    code = "STATE_VERSION_CONFLICT"
    status_code = 409

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
    code = "STATE_ORG_BUDGET"
    status_code = 409
