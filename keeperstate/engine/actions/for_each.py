"""For Each: run the nodes of its ``each`` branch once per item of a list, then ``done``
(DESIGN.md §14; the runner runs the loop, keeperstate.engine.runner)."""

from __future__ import annotations

from typing import Any

from keeperstate.core.numbers import parse_whole_number
from keeperstate.engine.context import RunContext
from keeperstate.engine.expressions import ExpressionInvalid, evaluate, kind_of
from keeperstate.engine.fields import ConfigField, ConfigInvalid
from keeperstate.engine.references import BoundExpression
from keeperstate.engine.registry import ActionDefinition, OutputField, register

DEFAULT_MAX_ITEMS = 100
MAX_ITEMS = 1000


def check_max_items(value: Any) -> int:
    return parse_whole_number(
        value, field="maxItems", minimum=1, maximum=MAX_ITEMS, error=ConfigInvalid,
        message=f"Most items is a whole number from 1 to {MAX_ITEMS} (got {value!r}); the rest wait for the next run.",
    )


def run_for_each(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """The items to loop over and how many of them this run takes (the runner does the loop)."""
    bound = config.get("items")
    if not isinstance(bound, BoundExpression):
        raise ExpressionInvalid("For Each needs an expression that gives a list, e.g. range(1, 10).", field="items")
    items = evaluate(bound.text, bound.bindings, error=ExpressionInvalid)
    if not isinstance(items, list):
        raise ExpressionInvalid(
            f"For Each's items must be a list, not {kind_of(items)}: use range(a, b), or a list such as an "
            "answer's body.result.transactions.",
            field="items",
        )
    limit = DEFAULT_MAX_ITEMS if config.get("maxItems") is None else check_max_items(config["maxItems"])
    return {"items": items, "maxItems": limit}


FOR_EACH = register(
    ActionDefinition(
        id="For Each",
        label="For Each",
        group="Data",
        description="Run the nodes of its each branch once per item of a list, in order; then its done branch.",
        icon="for-each",
        egress="none",
        side_effects=False,
        loop=True,
        config_fields=(
            ConfigField(
                name="items",
                label="Items",
                kind="expression",
                required=True,
                help="An expression that gives a list, e.g. range(number(<<@cursor:Cursor.value>>) + 1, "
                "number(<<@head:Head.result>>)) for the blocks since the cursor, or a list field picked with @. "
                "Inside the each branch, pick the current item and its index with @.",
                placeholder="range(<<@…>> + 1, <<@…>>)",
            ),
            ConfigField(
                name="maxItems",
                label="Most items per run",
                kind="integer",
                accepts_references=False,
                default=DEFAULT_MAX_ITEMS,
                advanced=True,
                help=f"Run at most this many items (1–{MAX_ITEMS}, default {DEFAULT_MAX_ITEMS}); the rest are "
                "counted in remaining and wait for the next run.",
                placeholder=str(DEFAULT_MAX_ITEMS),
                check=check_max_items,
            ),
        ),
        output_fields=(
            OutputField("item", "any", "The current item (inside the each branch).", loop_scope="body"),
            OutputField("index", "integer", "The current item's position, from 0 (inside the each branch).",
                        loop_scope="body"),
            OutputField("count", "integer", "How many items ran (after the loop).", loop_scope="after"),
            OutputField("truncated", "boolean", "Whether more than Most items were given (after the loop).",
                        loop_scope="after"),
            OutputField("remaining", "integer", "How many items were not run (after the loop).",
                        loop_scope="after"),
            OutputField("stopped", "boolean", "Whether a Stop Loop in its body ended it before its last item "
                        "(after the loop).", loop_scope="after"),
        ),
        handler=run_for_each,
        source_handles=("each", "done"),
        route=lambda data: "done",
    )
)
