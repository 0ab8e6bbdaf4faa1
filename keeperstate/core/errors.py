"""The one exception shape every user-facing failure takes: a stable code, a sentence that says
what to do, and structured details. The runner, the API's exception handler and the builder's
forms turn it into their own responses; nothing else needs to know the subclasses."""

from __future__ import annotations

from typing import Any


class CodedError(Exception):
    code: str = "ERROR"
    status_code: int = 400  # used by the HTTP layers

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.field = field

    def as_result(self) -> dict[str, Any]:
        """The failed node-result shape of DESIGN.md §4."""
        result: dict[str, Any] = {"success": False, "error": self.message, "code": self.code}
        if self.details:
            result["details"] = self.details
        return result
