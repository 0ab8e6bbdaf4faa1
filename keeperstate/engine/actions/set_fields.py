"""Set Fields: compute named values with expressions (DESIGN.md §14), e.g. a cursor + 1 or a
decimal block number, for later nodes to reference like any output."""

from __future__ import annotations

from typing import Any

from keeperstate.core.errors import CodedError
from keeperstate.engine.context import RunContext
from keeperstate.engine.expressions import FUNCTION_NAMES, ExpressionInvalid, Known, evaluate, static_type
from keeperstate.engine.fields import ConfigField
from keeperstate.engine.references import BoundExpression, placeholders
from keeperstate.engine.registry import ActionDefinition, OutputField, register

FIELDS_FIELD = ConfigField(
    name="fields",
    label="Fields",
    kind="assignments",
    required=True,
    help="One field a line: name = expression, e.g. head = number(<<@head:Head.result>>), then "
    "start = head + 1. A field may use the names above it; later nodes pick each with @. Names are "
    "letters, digits and _ (1–64). Functions: " + ", ".join(FUNCTION_NAMES) + ".",
    placeholder="start = number(<<@…>>) + 1",
)


def run_set_fields(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    computed: dict[str, Any] = {}
    fields: list[tuple[str, BoundExpression]] = config.get("fields") or []
    for name, bound in fields:
        try:
            computed[name] = evaluate(bound.text, {**bound.bindings, **computed}, error=ExpressionInvalid)
        except ExpressionInvalid as exc:
            raise ExpressionInvalid(f"Field {name!r}: {exc.message}", field="fields") from None
    return computed


def outputs(config: dict[str, Any]) -> tuple[OutputField, ...]:
    """One output field per computed field, typed where the expression's type is known."""
    try:  # the config as stored, or as an unsaved editor holds it (text)
        fields = FIELDS_FIELD.parse(config.get("fields"))
    except CodedError:
        return ()
    if not isinstance(fields, list):
        return ()
    known: dict[str, Known] = {}
    found = []
    for assignment in fields:
        text, _refs = placeholders(assignment["expression"])
        known[assignment["name"]] = Known(static_type(text, known))
        found.append(OutputField(assignment["name"], known[assignment["name"]].type or "any",
                                 f"= {assignment['expression']}"))
    return tuple(found)


SET_FIELDS = register(
    ActionDefinition(
        id="Set Fields",
        label="Set Fields",
        group="Data",
        description="Compute values with expressions (cursor + 1, a decimal block number, a text) for later nodes.",
        icon="set-fields",
        egress="none",
        side_effects=False,
        config_fields=(FIELDS_FIELD,),
        output_fields=(),
        outputs=outputs,
        handler=run_set_fields,
    )
)
