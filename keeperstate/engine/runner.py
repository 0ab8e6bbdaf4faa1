"""The workflow runner: from the trigger along the edges, one node at a time.

A node runs once every incoming edge has settled and at least one delivered; a node whose
incoming edges were all on branches not taken is recorded as ``{"skipped": true}``. Each
node's references are resolved first, so an unresolvable reference fails the node before its
action can write anything. A failed node stops its branch and marks the run ``error``; other
branches go on. The runner never retries an action: a state write is never replayed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from keeperstate.engine.context import RunContext
from keeperstate.engine.graph import Graph
from keeperstate.engine.references import Resolver, system_values
from keeperstate.engine.registry import get_action
from keeperstate.errors import CodedError
from keeperstate.inputs import has_nul
from keeperstate.models import Workflow, WorkflowExecution
from keeperstate.ratelimits import check_org_run_rate

logger = logging.getLogger(__name__)


class RunInputInvalid(CodedError):
    code = "INPUT_INVALID"


class UnknownAction(CodedError):
    code = "UNKNOWN_ACTION"


@dataclass
class RunOutcome:
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_workflow(workflow: Workflow, run_input: Any = None, *, triggered_by: Any = None) -> WorkflowExecution:
    """Run a saved workflow and return its finished, stored execution."""
    check_org_run_rate(workflow.organization_id)  # 429 THROTTLED past the organization's runs per minute
    run_input = _check_input(run_input)
    execution = WorkflowExecution.objects.create(
        workflow=workflow, input=run_input, triggered_by=triggered_by if getattr(triggered_by, "pk", None) else None
    )
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id, execution_id=execution.id)
    outcome = run_graph(workflow.nodes, workflow.edges, run_input, ctx)
    execution.node_results = outcome.results
    execution.status = WorkflowExecution.Status.SUCCESS if outcome.ok else WorkflowExecution.Status.ERROR
    execution.error = outcome.error
    execution.finished_at = timezone.now()
    execution.save(update_fields=["node_results", "status", "error", "finished_at"])
    return execution


def run_graph(nodes: Any, edges: Any, run_input: dict[str, Any], ctx: RunContext) -> RunOutcome:
    outcome = RunOutcome()
    try:
        graph = Graph.parse(nodes, edges)
        trigger = graph.trigger_id()
        order = graph.topological_order()
    except CodedError as exc:
        outcome.error = exc.message
        return outcome

    labels = graph.labels()
    taken: dict[str, str | None] = {}  # the source handle each finished node followed
    defaults = {nid: _default_handle(graph, nid) for nid in graph.nodes}
    for node_id in order:
        if node_id == trigger:
            outcome.results[node_id] = {"success": True, "data": run_input}
            continue
        incoming = graph.incoming(node_id)
        states = [_edge_state(e, outcome.results, taken, defaults) for e in incoming]
        if not incoming or "blocked" in states:
            continue  # unconnected, or behind a failure: the branch stopped before it
        if "live" not in states:
            outcome.results[node_id] = {"skipped": True}
            continue
        result, handle = run_node(graph, node_id, outcome.results, labels, ctx)
        outcome.results[node_id] = result
        taken[node_id] = handle
        if not result["success"] and outcome.error is None:
            outcome.error = f"Node '{labels[node_id]}' ({node_id}) failed: {result['error']}"
    return outcome


def run_node(
    graph: Graph, node_id: str, results: dict[str, dict[str, Any]], labels: dict[str, str], ctx: RunContext
) -> tuple[dict[str, Any], str | None]:
    """Resolve one node's config and run its action: (node result, handle it follows)."""
    return run_action(graph.action_type(node_id), graph.config(node_id), ctx, results=results, labels=labels)


def run_action(
    action_type: str | None,
    config: dict[str, Any],
    ctx: RunContext,
    *,
    results: dict[str, dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Run one action with a resolved config; also the entry point of a direct node execution."""
    try:
        definition = get_action(action_type or "")
        if definition is None:
            raise UnknownAction(f"Unknown action type '{action_type}'. Pick an action from the palette.")
        resolver = Resolver(results=results or {}, labels=labels or {}, system=system_values())
        kinds = {f.name: f.kind for f in definition.config_fields}
        settings = {k: v for k, v in config.items() if k != "actionType"}
        data = definition.handler(resolver.resolve_config(settings, kinds), ctx)
    except CodedError as exc:
        return exc.as_result(), None
    except Exception:
        logger.exception("action %r failed unexpectedly", action_type)
        return {
            "success": False,
            "code": "ACTION_FAILED",
            "error": "The action failed unexpectedly; the error was logged for the administrators. Try again.",
        }, None
    handle = definition.route(data) if definition.route else None
    return {"success": True, "data": data}, handle


def _edge_state(
    edge: Any, results: dict[str, dict[str, Any]], taken: dict[str, str | None], defaults: dict[str, str | None]
) -> str:
    source = results.get(edge.source)
    if source is None or (not source.get("skipped") and not source.get("success")):
        return "blocked"
    if source.get("skipped"):
        return "dead"
    handle = taken.get(edge.source)
    wanted = edge.source_handle or defaults.get(edge.source)
    if wanted is None or handle is None or wanted == handle:
        return "live"
    return "dead"


def _default_handle(graph: Graph, node_id: str) -> str | None:
    definition = get_action(graph.action_type(node_id) or "")
    return definition.default_handle if definition else None


def _check_input(run_input: Any) -> dict[str, Any]:
    if run_input is None:
        return {}
    if not isinstance(run_input, dict):
        raise RunInputInvalid('The run input must be a JSON object, for example {"block": 100}.', field="input")
    if has_nul(run_input):
        # Checked here rather than in each adapter: the input is stored in jsonb, which cannot hold it.
        raise RunInputInvalid("The run input contains the character U+0000; remove it.", field="input")
    return run_input
