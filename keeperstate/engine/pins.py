"""Pinned data: a node's output fixed by its author while building (a run's answer, or typed
sample data), kept in the node as ``data.pinnedData`` and saved with the workflow.

It stands in for the node's output only where a person is trying the workflow out: Test step and
the runs started from the editor (trigger ``manual``). A scheduled, webhook, API or error-workflow
run always runs every node; keeperstate.executions.service is where that is decided, once.
"""

from __future__ import annotations

from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.registry import ActionDefinition
from keeperstate.engine.results import Failed, Succeeded

PINNED_KEY = "pinnedData"


def pinned_outputs(nodes: Any) -> dict[str, dict[str, Any]]:
    """The pinned data of the nodes that carry one, by node id (the validator has checked each)."""
    pins: dict[str, dict[str, Any]] = {}
    for node in nodes if isinstance(nodes, list) else []:
        data = node.get("data") if isinstance(node, dict) else None
        if isinstance(data, dict) and isinstance(data.get(PINNED_KEY), dict) and isinstance(node.get("id"), str):
            pins[node["id"]] = data[PINNED_KEY]
    return pins


def pinned_result(label: str, data: dict[str, Any], definition: ActionDefinition | None) -> Succeeded | Failed:
    """The result a pinned node gives instead of running: its pinned data, on the branch that data
    chooses (a pinned Condition's ``result``)."""
    handle = None
    if definition is not None and definition.route is not None:
        try:
            handle = definition.route(data)
        except (KeyError, TypeError, ValueError):
            return Failed.of(CodedError.of(
                Code.PINNED_DATA_INVALID,
                f"The pinned data of '{label}' does not say which branch to take (a {definition.label} needs "
                f"{', '.join(f.name for f in definition.output_fields)}); pin its output from a run, or unpin it."))
    return Succeeded(data, handle, pinned=True)
