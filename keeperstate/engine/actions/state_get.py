"""State Get: read a key of this workflow's state."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import ConfigField
from keeperstate.engine.registry import ActionDefinition, OutputField, register
from keeperstate.state.errors import StateInvalidKey
from keeperstate.state.store import state_get
from keeperstate.state.values import normalize_key

KEY_FIELD = ConfigField(
    name="key",
    label="Key",
    kind="text",
    required=True,
    help="The name of the value in this workflow's state, e.g. cursor (1–256 characters). "
    "Type @ to build it from earlier nodes.",
    placeholder="cursor",
    check=normalize_key,
)


def run_key(config: dict[str, Any], ctx: RunContext) -> Any:
    """The resolved key of a state action, refused when it holds a secret this run resolved: a key
    is stored in plain text and shown in the State panel, admin and history (values are refused
    the same way, State Set)."""
    key = config.get("key")
    if ctx.secrets.contains_used(key):
        raise StateInvalidKey(
            "The key contains a secret of your organization; state keys are shown in the editor and admin, "
            "so a secret cannot be part of one. Build the key from an id or a name instead.",
            field="key",
        )
    return key


def run_state_get(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    # Scope comes from the run only: organizationId/workflowId in config are ignored.
    return state_get(scope=ctx.state_scope(), key=run_key(config, ctx)).as_output()


STATE_GET = register(
    ActionDefinition(
        id="State Get",
        label="State Get",
        group="System",
        description="Read a value this workflow stored in an earlier run.",
        icon="state-get",
        egress="none",
        side_effects=False,
        config_fields=(KEY_FIELD,),
        output_fields=(
            OutputField("value", "any", "The stored value with its JSON type; null when the key does not exist."),
            OutputField("exists", "boolean", "Whether the key exists and has not expired."),
            OutputField("version", "integer", "The key's version, 0 when it does not exist; feed it to "
                        "State Set's expectedVersion to write only if nobody changed it."),
            OutputField("expiresAt", "string", "When the key expires (ISO 8601), or null for no expiry."),
        ),
        handler=run_state_get,
        needs_workflow_context=True,
    )
)
