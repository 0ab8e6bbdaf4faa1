"""The workflow runner: from the trigger along the edges, one node at a time.

A node runs once every incoming edge has settled and at least one delivered; a node whose
incoming edges were all on branches not taken is recorded as ``{"skipped": true}``. Each
node's references are resolved first, so an unresolvable reference fails the node before its
action can write anything. A failed node stops its branch and marks the run ``error``; other
branches go on. The runner never retries an action: a state write is never replayed.

A loop (For Each, DESIGN.md §14) runs its **body**, the nodes reached from its ``each`` handle,
once per item in order, in the same order and with the same rules, then follows ``done``. Inside
an iteration the loop's ``item`` and ``index`` and the body's own results of that iteration are
what references read; after the loop a body node reads as its last iteration, and its result
records the iterations (keeperstate.engine.results.Iterated). A body node's write and its record
commit together, like any node's, so a run that dies mid-loop leaves its cursor at the last item
it finished. A failing body node stops the loop, which fails with LOOP_ITEM_FAILED; a Stop Loop that
runs in the body ends it after the current item (the rest of that item's nodes still run), and the
loop goes on to ``done`` with ``stopped``. Loops nest two deep (the validator refuses more), and a
run makes at most MAX_NODE_RUNS node runs (RUN_TOO_LONG).
"""

from __future__ import annotations

import json
import logging
from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import DatabaseError

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import has_nul
from keeperstate.engine.context import RunContext
from keeperstate.engine.graph import Graph, GraphInvalid
from keeperstate.engine.pins import pinned_result
from keeperstate.engine.references import Resolver, system_values
from keeperstate.engine.registry import get_action
from keeperstate.engine.results import (
    SKIPPED,
    EdgeState,
    Failed,
    NodeResult,
    Succeeded,
    edge_state,
    iterated,
    results_to_json,
    settled,
)
from keeperstate.engine.scope import Scope, is_trigger, scope_of, trigger_of
from keeperstate.engine.secret_places import misplaced_in_config, secret_fields
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


MAX_NODE_RUNS = 10_000


def run_graph(
    nodes: Any,
    edges: Any,
    run_input: dict[str, Any],
    ctx: RunContext,
    *,
    on_progress: ProgressHook | None = None,
    node_transaction: TransactionFactory | None = None,
    outcome: RunOutcome | None = None,
    pins: Mapping[str, dict[str, Any]] | None = None,
) -> RunOutcome:
    """Run the graph; ``node_transaction`` wraps each node that may change something together with
    its ``on_progress`` call. The results go into ``outcome`` as they come (a new one if not
    given), so a caller holding it sees what ran when something escapes the run. A node in
    ``pins`` does not run: its pinned data is its output (keeperstate.engine.pins; the execution
    service says which runs may use them)."""
    outcome = RunOutcome() if outcome is None else outcome
    try:
        graph = Graph.parse(nodes, edges)
        trigger = trigger_of(graph)
        scope = scope_of(graph)
    except CodedError as exc:
        outcome.error, outcome.error_code = exc.message, exc.code
        return outcome
    run = _Run(graph, scope, ctx, outcome, on_progress, node_transaction, pins or {})
    outcome.results[trigger] = Succeeded(run_input)
    top = [node_id for node_id in scope.level(None) if node_id != trigger]
    run.scope(top, outcome.results, final=top[-1] if top else None)
    return outcome


class _Run:
    """One run's walk: the graph, where each loop's body is, and how many nodes ran."""

    def __init__(self, graph: Graph, scope: Scope, ctx: RunContext, outcome: RunOutcome,
                 on_progress: ProgressHook | None, node_transaction: TransactionFactory | None,
                 pins: Mapping[str, dict[str, Any]]):
        self.graph, self.loops, self.ctx, self.outcome = graph, scope, ctx, outcome
        self.on_progress, self.node_transaction = on_progress, node_transaction
        self.pins = pins
        self.labels = graph.labels()
        self.definitions = {nid: get_action(graph.action_type(nid) or "") for nid in graph.nodes}
        self.defaults = {nid: d.default_handle if d else None for nid, d in self.definitions.items()}
        self.node_runs = 0
        self.stopping: set[str] = set()  # loops a Stop Loop ended: they finish their current item

    def scope(self, node_ids: list[str], view: MutableMapping[str, NodeResult], *, final: str | None,
              iteration: dict[str, NodeResult] | None = None) -> Failed | None:
        """Run these nodes (a top level, or one iteration of a body) in order; ``view`` is what
        their references and edges read. The first body node that fails, if it is an iteration."""
        for node_id in node_ids:
            incoming = self.graph.incoming(node_id)
            states = {edge_state(view.get(e.source), e.source_handle or self.defaults[e.source]) for e in incoming}
            if not incoming or EdgeState.BLOCKED in states:
                continue  # unconnected, or behind a failure: the branch stopped before it
            if EdgeState.LIVE not in states:
                self.record(node_id, SKIPPED, iteration)
                continue
            definition = self.definitions[node_id]
            if definition is not None and definition.loop:
                result = self.loop(node_id, view, iteration)
                writes = False
            elif node_id in self.pins:
                result = pinned_result(self.labels[node_id], self.pins[node_id], definition)
                self.record(node_id, result, iteration)
                if self.on_progress is not None and node_id == final:
                    self.on_progress(self.outcome, True)
            else:
                writes = definition.side_effects if definition else True
                scope = self.node_transaction() if self.node_transaction is not None and writes else nullcontext()
                with scope:
                    result = self.run_one(node_id, view)
                    if definition is not None and definition.stops_loop and isinstance(result, Succeeded):
                        result = self.stop_loop(node_id)
                    self.record(node_id, result, iteration)
                    if self.on_progress is not None and (writes or node_id == final):
                        self.on_progress(self.outcome, node_id == final)
            if isinstance(result, Failed) and iteration is not None:
                return result
            if definition is not None and definition.loop and node_id == final and self.on_progress is not None:
                self.on_progress(self.outcome, True)
        return None

    def run_one(self, node_id: str, view: Mapping[str, NodeResult]) -> NodeResult:
        self.node_runs += 1
        if self.node_runs > MAX_NODE_RUNS:
            return Failed.of(CodedError.of(
                Code.RUN_TOO_LONG, f"The run reached {MAX_NODE_RUNS:,} node runs, the most one run may make; "
                "loop over fewer items (For Each's maxItems) or split the work over runs."))
        return run_node(self.graph, node_id, view, self.labels, self.ctx)

    def stop_loop(self, node_id: str) -> NodeResult:
        """A Stop Loop ran: its innermost loop ends after the current item."""
        owner = self.loops.owners.get(node_id)
        if owner is None:  # the validator refuses it at save; a graph that skipped it still fails clearly
            return Failed(Code.LOOP_BODY_INVALID.name, "Stop Loop ends the For Each whose each branch holds it; "
                          "this one is in no loop's body. Connect it on a For Each's each branch.")
        self.stopping.add(owner)
        return Succeeded({})

    def record(self, node_id: str, result: NodeResult, iteration: dict[str, NodeResult] | None) -> None:
        """The result where later nodes read it, and in the outcome: a body node's as one more
        iteration of it (Iterated), the first failure as the run's error."""
        if iteration is not None:
            iteration[node_id] = result
            self.outcome.results[node_id] = iterated(self.outcome.results.get(node_id), settled(result))
        else:
            self.outcome.results[node_id] = result
        if isinstance(result, Failed) and self.outcome.error is None:
            self.outcome.error = f"Node '{self.labels[node_id]}' ({node_id}) failed: {result.error}"
            self.outcome.error_code = result.code

    def loop(self, loop_id: str, view: MutableMapping[str, NodeResult], outer: dict[str, NodeResult] | None) -> (
        NodeResult
    ):
        """A For Each: its items, then its body once per item, then its summary (``done``)."""
        started = self.run_one(loop_id, view)
        if not isinstance(started, Succeeded):
            self.record(loop_id, started, outer)
            return started
        items, limit = started.data["items"], started.data["maxItems"]
        body = self.loops.level(loop_id)
        ran, stopped = 0, False
        for index, item in enumerate(items[:limit]):
            current: dict[str, NodeResult] = {loop_id: Succeeded({"item": item, "index": index}, "each")}
            failed = self.scope(body, ChainMap(current, view), final=None, iteration=current)
            ran += 1
            stopped = loop_id in self.stopping
            self.stopping.discard(loop_id)
            if failed is not None:
                result: NodeResult = Failed(
                    Code.LOOP_ITEM_FAILED.name,
                    f"The loop stopped at item {index} ({_short(item)}): {failed.error}",
                    {"index": index, "item": item, "code": failed.code},
                )
                self.record(loop_id, result, outer)
                return result
            if stopped:
                break
        result = Succeeded({"count": ran, "truncated": len(items) > limit, "remaining": max(0, len(items) - ran),
                            "stopped": stopped}, "done")
        self.record(loop_id, result, outer)
        return result


def run_node(
    graph: Graph, node_id: str, results: Mapping[str, NodeResult], labels: dict[str, str], ctx: RunContext
) -> NodeResult:
    """Resolve one node's config and run its action."""
    return execute_action(graph.action_type(node_id), graph.config(node_id), replace(ctx, node_id=node_id),
                          results=results, labels=labels)


def reaches_outside(nodes: Any) -> bool:
    """Whether a run of these nodes may act outside the database: an action node whose egress is
    not ``none`` (HTTP Request), or one whose action the registry does not know (it is taken as
    such, to be safe). What a run that does not can change is all in its own transaction."""
    try:
        graph = Graph.parse(nodes, [])
    except GraphInvalid:
        return False  # no run: the graph is refused before any node runs
    for node_id in graph.nodes:
        if is_trigger(graph, node_id):
            continue
        definition = get_action(graph.action_type(node_id) or "")
        if definition is None or definition.egress != "none":
            return True
    return False


def writes_at_most_once(nodes: Any) -> bool:
    """Whether a run of these nodes makes one write at most: one action node with side effects at
    most, and no loop (whose body may run it again)."""
    try:
        graph = Graph.parse(nodes, [])
    except GraphInvalid:
        return True  # no run: the graph is refused before any node runs
    writers = 0
    for node_id in graph.nodes:
        if is_trigger(graph, node_id):
            continue
        definition = get_action(graph.action_type(node_id) or "")
        if definition is None or definition.loop:
            return False
        writers += definition.side_effects
    return writers <= 1


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "…"


def execute_action(
    action_type: str | None,
    config: dict[str, Any],
    ctx: RunContext,
    *,
    results: Mapping[str, NodeResult] | None = None,
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
    results: Mapping[str, NodeResult] | None,
    labels: dict[str, str] | None,
) -> NodeResult:
    try:
        definition = get_action(action_type or "")
        if definition is None:
            raise UnknownAction(f"Unknown action type '{action_type}'. Pick an action from the palette.")
        settings = {k: v for k, v in config.items() if k != "actionType"}
        if misplaced := misplaced_in_config(settings, definition):
            raise misplaced[0]  # before any reference resolves: no secret is read for it
        system = system_values(execution_id=ctx.execution_id)
        resolver = Resolver(results=results or {}, labels=labels or {}, system=system, secrets=ctx.secrets,
                            secret_fields=secret_fields(definition))
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


def check_input(run_input: Any) -> dict[str, Any]:
    if run_input is None:
        return {}
    if not isinstance(run_input, dict):
        raise RunInputInvalid('The run input must be a JSON object, for example {"block": 100}.', field="input")
    if has_nul(run_input):
        # Checked here rather than in each adapter: the input is stored in jsonb, which cannot hold it.
        raise RunInputInvalid("The run input contains the character U+0000; remove it.", field="input")
    return run_input
