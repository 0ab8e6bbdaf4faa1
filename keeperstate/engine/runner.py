"""The workflow runner: from the trigger along the edges, one node at a time.

A node runs once every incoming edge has settled and at least one delivered; a node whose
incoming edges were all on branches not taken is recorded as ``{"skipped": true}``. Each
node's references are resolved first, so an unresolvable reference fails the node before its
action can write anything. A failed node stops its branch and marks the run ``error``; other
branches go on. The runner never retries an action: a state write is never replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import has_nul
from keeperstate.engine.context import RunContext
from keeperstate.engine.graph import Graph
from keeperstate.engine.references import Resolver, system_values
from keeperstate.engine.registry import get_action
from keeperstate.engine.results import (
    SKIPPED,
    EdgeState,
    Failed,
    NodeResult,
    Succeeded,
    edge_state,
    result_from_json,
    results_to_json,
)
from keeperstate.secrets.redaction import redacting

logger = logging.getLogger(__name__)


class RunInputInvalid(CodedError):
    error = Code.INPUT_INVALID


class UnknownAction(CodedError):
    error = Code.UNKNOWN_ACTION


@dataclass
class RunOutcome:
    results: dict[str, NodeResult] = field(default_factory=dict)
    error: str | None = None
    error_code: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def results_json(self) -> dict[str, dict[str, Any]]:
        """The results as an execution records them (nodeResults)."""
        return results_to_json(self.results)


# Called inside the node's transaction (see run_graph) with the outcome so far, after each node
# that may have changed something and after the last node (``final``): the execution service
# records it there, so a node's write and the record of it commit together, or neither does.
ProgressHook = Callable[[RunOutcome, bool], None]
TransactionFactory = Callable[[], AbstractContextManager[Any]]


def run_graph(
    nodes: Any,
    edges: Any,
    run_input: dict[str, Any],
    ctx: RunContext,
    *,
    on_progress: ProgressHook | None = None,
    node_transaction: TransactionFactory | None = None,
) -> RunOutcome:
    """Run the graph; ``node_transaction`` wraps each node that may change something together with
    its ``on_progress`` call."""
    outcome = RunOutcome()
    try:
        graph = Graph.parse(nodes, edges)
        trigger = graph.trigger_id()
        order = graph.topological_order()
    except CodedError as exc:
        outcome.error, outcome.error_code = exc.message, exc.code
        return outcome

    labels = graph.labels()
    defaults = {nid: _default_handle(graph, nid) for nid in graph.nodes}
    for node_id in order:
        if node_id == trigger:
            outcome.results[node_id] = Succeeded(run_input)
            continue
        incoming = graph.incoming(node_id)
        states = {edge_state(outcome.results.get(e.source), e.source_handle or defaults[e.source]) for e in incoming}
        if not incoming or EdgeState.BLOCKED in states:
            continue  # unconnected, or behind a failure: the branch stopped before it
        if EdgeState.LIVE not in states:
            outcome.results[node_id] = SKIPPED
            continue
        writes, final = _has_side_effects(graph, node_id), node_id == order[-1]
        scope = node_transaction() if node_transaction is not None and writes else nullcontext()
        with scope:
            result = run_node(graph, node_id, outcome.results, labels, ctx)
            outcome.results[node_id] = result
            if isinstance(result, Failed) and outcome.error is None:
                outcome.error = f"Node '{labels[node_id]}' ({node_id}) failed: {result.error}"
                outcome.error_code = result.code
            if on_progress is not None and (writes or final):
                on_progress(outcome, final)
    return outcome


def run_node(
    graph: Graph, node_id: str, results: dict[str, NodeResult], labels: dict[str, str], ctx: RunContext
) -> NodeResult:
    """Resolve one node's config and run its action."""
    return execute_action(graph.action_type(node_id), graph.config(node_id), ctx, results=results, labels=labels)


def run_action(
    action_type: str | None,
    config: dict[str, Any],
    ctx: RunContext,
    *,
    results: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """A direct node execution: the action's result in its JSON shape, and the handle it chose.
    ``results`` are earlier nodes' results, typed or in their JSON shape."""
    typed = {node_id: result_from_json(result) for node_id, result in (results or {}).items()}
    result = execute_action(action_type, config, ctx, results=typed, labels=labels)
    return result.to_json(), result.handle if isinstance(result, Succeeded) else None


def execute_action(
    action_type: str | None,
    config: dict[str, Any],
    ctx: RunContext,
    *,
    results: dict[str, NodeResult] | None = None,
    labels: dict[str, str] | None = None,
) -> NodeResult:
    """Run one action with its config's references resolved against earlier results.

    Secret values the run has used are redacted from the result (and from log records written
    meanwhile), whatever the action put there."""
    with redacting(ctx.secrets.used):
        result = _execute_action(action_type, config, ctx, results=results, labels=labels)
        if isinstance(result, Succeeded):
            return Succeeded(ctx.secrets.redact(result.data), result.handle)
        if isinstance(result, Failed):
            return Failed(result.code, ctx.secrets.redact(result.error), ctx.secrets.redact(result.details))
        return result


def _execute_action(
    action_type: str | None,
    config: dict[str, Any],
    ctx: RunContext,
    *,
    results: dict[str, NodeResult] | None,
    labels: dict[str, str] | None,
) -> NodeResult:
    try:
        definition = get_action(action_type or "")
        if definition is None:
            raise UnknownAction(f"Unknown action type '{action_type}'. Pick an action from the palette.")
        resolver = Resolver(results=results or {}, labels=labels or {}, system=system_values(), secrets=ctx.secrets)
        settings = {k: v for k, v in config.items() if k != "actionType"}
        data = definition.handler(resolver.resolve_config(settings, definition.config_fields), ctx)
        # Routing is the action's code too: a bug there fails the node, not the run's record.
        handle = definition.route(data) if definition.route else None
    except CodedError as exc:
        return Failed.of(exc)
    except DatabaseError:
        raise  # the run itself cannot go on; the execution service decides what the record says
    except Exception:
        logger.exception("action %r failed unexpectedly", action_type)
        return Failed.of(CodedError.of(Code.ACTION_FAILED))
    return Succeeded(data, handle)


def _has_side_effects(graph: Graph, node_id: str) -> bool:
    definition = get_action(graph.action_type(node_id) or "")
    return definition.side_effects if definition else True


def _default_handle(graph: Graph, node_id: str) -> str | None:
    definition = get_action(graph.action_type(node_id) or "")
    return definition.default_handle if definition else None


def check_input(run_input: Any) -> dict[str, Any]:
    if run_input is None:
        return {}
    if not isinstance(run_input, dict):
        raise RunInputInvalid('The run input must be a JSON object, for example {"block": 100}.', field="input")
    if has_nul(run_input):
        # Checked here rather than in each adapter: the input is stored in jsonb, which cannot hold it.
        raise RunInputInvalid("The run input contains the character U+0000; remove it.", field="input")
    return run_input
