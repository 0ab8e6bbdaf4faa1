"""State Delete: remove a key of this workflow's state, optionally only at a known version."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.actions.state_get import KEY_FIELD, run_key
from keeperstate.engine.actions.state_set import EXPECTED_VERSION_FIELD
from keeperstate.engine.context import RunContext
from keeperstate.engine.registry import ActionDefinition, OutputField, register
from keeperstate.state.store import state_delete


def run_state_delete(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    result = state_delete(
        scope=ctx.state_scope(), key=run_key(config, ctx), expected_version=config.get("expectedVersion")
    )
    return result.as_output()


STATE_DELETE = register(
    ActionDefinition(
        id="State Delete",
        label="State Delete",
        group="System",
        description="Forget a stored key; its version numbers are never reused.",
        icon="state-delete",
        egress="none",
        config_fields=(KEY_FIELD, EXPECTED_VERSION_FIELD),
        output_fields=(
            OutputField("deleted", "boolean", "Whether a live key was deleted (false when it did not exist)."),
            OutputField("previousVersion", "integer", "The deleted key's version, 0 when nothing was deleted."),
        ),
        handler=run_state_delete,
        needs_workflow_context=True,
    )
)
