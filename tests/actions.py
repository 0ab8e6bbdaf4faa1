"""One action run through the runner's action step (engine.runner.execute_action), for tests of
the actions themselves: its result in its JSON shape, and the handle it chose. A run's nodes and
a node run alone go through keeperstate.executions.service; this is the step under both."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.context import RunContext
from keeperstate.engine.results import Succeeded, result_from_json
from keeperstate.engine.runner import execute_action


def run_action(action_type: str | None, config: dict[str, Any], ctx: RunContext, *,
               results: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> (
    tuple[dict[str, Any], str | None]
):
    """``results``: earlier nodes' results, typed or in their JSON shape."""
    typed = {node_id: result_from_json(result) for node_id, result in (results or {}).items()}
    result = execute_action(action_type, config, ctx, results=typed, labels=labels)
    return result.to_json(), result.handle if isinstance(result, Succeeded) else None
