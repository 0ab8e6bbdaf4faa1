"""State Increment: add to an integer in this workflow's state, atomically."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.actions.state_get import KEY_FIELD, run_key
from keeperstate.engine.actions.state_set import TTL_FIELD
from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import ConfigField
from keeperstate.engine.registry import ActionDefinition, OutputField, register
from keeperstate.state.store import state_increment
from keeperstate.state.values import parse_increment

BY_FIELD = ConfigField(
    name="by",
    label="By",
    kind="integer",
    default=1,
    help="The whole number to add (negative subtracts), or one @ reference. Empty: 1.",
    placeholder="1",
    check=parse_increment,
)


def run_state_increment(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    write = state_increment(
        scope=ctx.state_scope(), key=run_key(config, ctx), by=config.get("by"), ttl=config.get("ttl")
    )
    return {"value": write.value, "version": write.version, "created": write.created}


STATE_INCREMENT = register(
    ActionDefinition(
        id="State Increment",
        label="State Increment",
        group="System",
        description="Add to a stored counter in one atomic step: no lost updates, no compare-and-set loop.",
        icon="state-increment",
        egress="none",
        config_fields=(KEY_FIELD, BY_FIELD, TTL_FIELD),
        output_fields=(
            OutputField("value", "integer", "The counter after the increment."),
            OutputField("version", "integer", "The key's new version."),
            OutputField("created", "boolean", "True when the key did not exist (or had expired) and started at By."),
        ),
        handler=run_state_increment,
        needs_workflow_context=True,
    )
)
