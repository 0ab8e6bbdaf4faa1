"""Stop Loop: end the For Each whose body holds it after the current item, like ``break``
(the runner ends the loop, keeperstate.engine.runner; DESIGN.md §14 and docs/workflows.md)."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.context import RunContext
from keeperstate.engine.registry import ActionDefinition, register


def run_stop_loop(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    return {}  # the runner reads the definition's stops_loop; nothing to compute


STOP_LOOP = register(
    ActionDefinition(
        id="Stop Loop",
        label="Stop Loop",
        group="Data",
        description="End the For Each whose each branch holds it after the current item; its done branch "
        "runs next, with stopped true.",
        icon="stop-loop",
        egress="none",
        side_effects=False,
        stops_loop=True,
        config_fields=(),
        output_fields=(),
        handler=run_stop_loop,
    )
)
