"""State Set: write a key of this workflow's state, optionally as a compare-and-set."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.actions.state_get import KEY_FIELD, run_key
from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import ConfigField, ConfigInvalid
from keeperstate.engine.registry import ActionDefinition, OutputField, register
from keeperstate.state.errors import StateInvalidValue, StateVersionConflict
from keeperstate.state.store import state_set
from keeperstate.state.values import (
    check_storable,
    coerce_editor_text,
    normalize_key,
    parse_expected_version,
    parse_ttl,
)

VALUE_FIELD = ConfigField(
    name="value",
    label="Value",
    kind="json",
    required=True,
    help="Text, a number or JSON (at most 8 KB). 4219 is stored as a number, true as a boolean, "
    '{"a": 1} as an object, "4219" in quotes as text. A single @ reference keeps its type.',
    check=check_storable,
    read_text=coerce_editor_text,
)
TTL_FIELD = ConfigField(
    name="ttl",
    label="TTL (seconds)",
    kind="integer",
    help="Optional. Forget the key after this many seconds (a whole number ≥ 1, at most 365 days), "
    "or one @ reference. Empty: keep it until it is overwritten.",
    placeholder="e.g. 3600",
    check=parse_ttl,
)
EXPECTED_VERSION_FIELD = ConfigField(
    name="expectedVersion",
    label="Expected version",
    kind="integer",
    advanced=True,
    help="Optional compare-and-set. Pick State Get's version with @ to write only if no other run "
    "changed the key since; 0 writes only if the key does not exist. A mismatch fails with "
    "STATE_VERSION_CONFLICT and writes nothing.",
    placeholder="<<@state-get-1:State Get.version>>",
    check=parse_expected_version,
)


def _on_conflict(value: Any) -> str:
    mode = value or "fail"
    if mode not in ("fail", "branch"):
        raise ConfigInvalid(f"On conflict must be 'fail' or 'branch' (got {value!r}).", field="onConflict")
    return str(mode)


ON_CONFLICT_FIELD = ConfigField(
    name="onConflict",
    label="On conflict",
    kind="select",
    choices=("fail", "branch"),
    default="fail",
    accepts_references=False,
    advanced=True,
    help="What a compare-and-set mismatch does. fail: the node fails with STATE_VERSION_CONFLICT. "
    "branch: the node succeeds with conflict: true, currentVersion and currentValue, and follows its "
    "conflict handle, so you can re-read and retry, or alert.",
    check=_on_conflict,
)


def run_state_set(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    # The value arrives typed (VALUE_FIELD.resolve): text read as JSON by coerce_editor_text, a
    # whole-field reference with its own JSON type.
    branch = _on_conflict(config.get("onConflict")) == "branch"
    if ctx.secrets.contains_used(config.get("value")):
        raise StateInvalidValue(
            "The value contains a secret of your organization; state is shown in the editor and admin, so "
            "secrets cannot be stored in it. Store a marker or an id instead, and reference the secret "
            "where it is used."
        )
    try:
        write = state_set(
            scope=ctx.state_scope(),
            key=run_key(config, ctx),
            value=config.get("value"),
            ttl=config.get("ttl"),
            expected_version=config.get("expectedVersion"),
        )
    except StateVersionConflict as conflict:
        if not branch:
            raise
        return {
            "key": normalize_key(config.get("key")),
            "version": None,
            "created": False,
            "expiresAt": None,
            "conflict": True,
            "currentVersion": conflict.current,
            "currentValue": conflict.current_value,
        }
    data = write.as_output()
    if branch:
        data.update(conflict=False, currentVersion=write.version, currentValue=write.value)
    return data


STATE_SET = register(
    ActionDefinition(
        id="State Set",
        label="State Set",
        group="System",
        description="Store a value for later runs of this workflow, with optional TTL and compare-and-set.",
        icon="state-set",
        egress="none",
        config_fields=(KEY_FIELD, VALUE_FIELD, TTL_FIELD, EXPECTED_VERSION_FIELD, ON_CONFLICT_FIELD),
        output_fields=(
            OutputField("key", "string", "The key that was written (trimmed)."),
            OutputField("version", "integer", "The key's new version."),
            OutputField("created", "boolean", "True when the key did not exist (or had expired) before."),
            OutputField("expiresAt", "string", "When the key expires (ISO 8601), or null for no expiry."),
            OutputField("conflict", "boolean", "On conflict = branch: whether the compare-and-set lost (the "
                        "conflict handle was followed)."),
            OutputField("currentVersion", "integer", "On conflict = branch: the key's version now (0 = absent)."),
            OutputField("currentValue", "any", "On conflict = branch: the key's value now (null = absent)."),
        ),
        handler=run_state_set,
        needs_workflow_context=True,
        source_handles=("success", "conflict"),
        route=lambda data: "conflict" if data.get("conflict") else "success",
        default_handle="success",
    )
)
