"""Condition: evaluate an expression and follow the ``true`` or ``false`` branch."""

from __future__ import annotations

from typing import Any

from keeperstate.engine.context import RunContext
from keeperstate.engine.expressions import FUNCTION_NAMES, ConditionInvalid, evaluate
from keeperstate.engine.fields import ConfigField
from keeperstate.engine.references import BoundExpression
from keeperstate.engine.registry import ActionDefinition, OutputField, register


def run_condition(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    expression = config.get("condition")
    if isinstance(expression, BoundExpression):
        return {"result": bool(evaluate(expression.text, expression.bindings))}
    return {"result": bool(evaluate(str(expression or "")))}


CONDITION = register(
    ActionDefinition(
        id="Condition",
        label="Condition",
        group="System",
        description="Continue on the true or the false branch depending on an expression.",
        icon="condition",
        egress="none",
        side_effects=False,
        config_fields=(
            ConfigField(
                name="condition",
                label="Condition",
                kind="expression",
                required=True,
                expression_error=ConditionInvalid,
                help="A comparison such as number(<<@trigger:Trigger.block>>) > 100. Allowed: == != < > <= >=, "
                "and, or, not, + - * / %, numbers, 'text', true, false, null, @ references (typed values), "
                "x['name'] and x[0], and the functions " + ", ".join(FUNCTION_NAMES) + ". Text that reads as a "
                "number is compared by order only inside number().",
                placeholder="<<@…>> > 100",
            ),
        ),
        output_fields=(OutputField("result", "boolean", "Whether the condition held; true follows the true branch."),),
        handler=run_condition,
        source_handles=("true", "false"),
        route=lambda data: "true" if data["result"] else "false",
    )
)
