"""What a node's run produced: succeeded with its data, failed with a coded error, or skipped.

The runner, the reference resolver and the execution record share these frozen types; as JSON
(``to_json``: an execution's ``nodeResults``, DESIGN.md §4) they are the shapes clients read, and
``result_from_json`` reads them back (a recorded run's results, a test's fixture).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from keeperstate.core.errors import CodedError


@dataclass(frozen=True)
class Succeeded:
    data: Any
    # The source handle the node's action chose (Condition: true or false); None: every edge.
    handle: str | None = field(default=None, compare=False)
    # The node did not run: its pinned data stood in for its output (keeperstate.engine.pins).
    pinned: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        if self.pinned:
            return {"success": True, "data": self.data, "pinned": True}
        return {"success": True, "data": self.data}


@dataclass(frozen=True)
class Failed:
    code: str
    error: str
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, exc: CodedError) -> Failed:
        return cls(exc.code, exc.message, exc.details)

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"success": False, "error": self.error, "code": self.code}
        if self.details:
            result["details"] = self.details
        return result


@dataclass(frozen=True)
class Skipped:
    """A node on a branch not taken."""

    def to_json(self) -> dict[str, Any]:
        return {"skipped": True}


SKIPPED = Skipped()
ITERATIONS_KEPT = 100  # a body node's results recorded in full; iterationCount counts them all


@dataclass(frozen=True)
class Iterated:
    """A For Each body node's results: the last iteration's (what later nodes read), the first
    ITERATIONS_KEPT in full, and how many iterations ran it."""

    last: Succeeded | Failed | Skipped
    iterations: tuple[Succeeded | Failed | Skipped, ...]
    count: int

    def then(self, result: Succeeded | Failed | Skipped) -> Iterated:
        kept = self.iterations if len(self.iterations) >= ITERATIONS_KEPT else (*self.iterations, result)
        return Iterated(result, kept, self.count + 1)

    def to_json(self) -> dict[str, Any]:
        return {**self.last.to_json(), "iterations": [r.to_json() for r in self.iterations],
                "iterationCount": self.count}


NodeResult = Succeeded | Failed | Skipped | Iterated


def settled(result: NodeResult) -> Succeeded | Failed | Skipped:
    """What a result says to the nodes after it: a body node's, its last iteration's."""
    return result.last if isinstance(result, Iterated) else result


def iterated(previous: NodeResult | None, result: Succeeded | Failed | Skipped) -> Iterated:
    """A body node's results once it ran (or was skipped) once more."""
    if isinstance(previous, Iterated):
        return previous.then(result)
    return Iterated(result, (result,), 1)


def result_from_json(value: Any) -> NodeResult:
    """A result from its JSON shape (a node result already typed is returned as it is)."""
    if isinstance(value, Succeeded | Failed | Skipped | Iterated):
        return value
    if not isinstance(value, dict) or value.get("skipped"):
        return SKIPPED
    if value.get("success"):
        return Succeeded(value.get("data"), pinned=value.get("pinned") is True)
    return Failed(str(value.get("code") or ""), str(value.get("error") or ""), value.get("details") or {})


def results_to_json(results: dict[str, NodeResult]) -> dict[str, dict[str, Any]]:
    return {node_id: result.to_json() for node_id, result in results.items()}


class EdgeState(Enum):
    """What an edge delivers to its target once its source has settled."""

    LIVE = "live"  # the source succeeded on this edge's branch: the target may run
    DEAD = "dead"  # the source was skipped or took another branch: not this way
    BLOCKED = "blocked"  # the source failed or did not run: the target's branch stopped


def edge_state(result: NodeResult | None, wanted: str | None) -> EdgeState:
    """The state of an edge leaving a node with ``result`` from handle ``wanted`` (None: any)."""
    source = settled(result) if result is not None else None
    if source is None or isinstance(source, Failed):
        return EdgeState.BLOCKED
    if isinstance(source, Skipped):
        return EdgeState.DEAD
    if wanted is None or source.handle is None or wanted == source.handle:
        return EdgeState.LIVE
    return EdgeState.DEAD
