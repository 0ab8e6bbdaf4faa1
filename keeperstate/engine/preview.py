"""The live preview of a config field: the value the runner would compute for it now, against
earlier results (the last run's, with pinned data over them), by the runner's own parser,
resolver and evaluator. Nothing runs: no action, no state, no network, and no secret is read
(a field that names one has no preview).

The answer is a node result (keeperstate.engine.results): ``Succeeded(value)`` or ``Failed`` with
the code and sentence the run would give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.expressions import evaluate
from keeperstate.engine.fields import MISSING, texts_of
from keeperstate.engine.graph import Graph, GraphInvalid
from keeperstate.engine.pins import pinned_outputs
from keeperstate.engine.references import SECRETS_NODE_ID, BoundExpression, Resolver, find_references, system_values
from keeperstate.engine.registry import get_action
from keeperstate.engine.results import Failed, NodeResult, Succeeded, result_from_json
from keeperstate.engine.scope import scope_of


def preview_field(
    *, nodes: Any, edges: Any, node_id: str, field_name: str, value: Any, results: Mapping[str, Any]
) -> Succeeded | Failed:
    """``value`` as field ``field_name`` of node ``node_id`` would be computed, reading the results
    of the nodes that run before it (``results``: a run's, in their JSON shape; the trigger's is
    that run's input) and the pinned data of the graph's nodes over them."""
    try:
        graph = Graph.parse(nodes, edges)
        if node_id not in graph.nodes:
            raise CodedError.of(Code.NODE_NOT_FOUND, f"The graph has no node '{node_id}'.", field="node")
        definition = get_action(graph.action_type(node_id) or "")
        config_field = definition.config_field(field_name) if definition is not None else None
        if config_field is None:
            raise CodedError.of(Code.CONFIG_INVALID, f"'{graph.label(node_id)}' has no field '{field_name}' to "
                                "preview; the previews are of an action's fields.", field="field")
        parsed = config_field.parse(value)
        if parsed is MISSING:
            return Succeeded(None)
        if any(ref.node_id == SECRETS_NODE_ID for text in texts_of(parsed) for ref in find_references(text)):
            raise CodedError.of(Code.TEMPLATE_UNRESOLVED, "This field names a secret, whose value is never shown: "
                                "it has no preview. Test step or Run sends it.", field=field_name)
        earlier = set(scope_of(graph).sources(node_id))  # what runs before it, as the runner decides
        visible: dict[str, NodeResult] = {nid: result_from_json(r) for nid, r in results.items() if nid in earlier}
        for pinned_id, data in pinned_outputs(nodes).items():
            if pinned_id in earlier:
                visible[pinned_id] = Succeeded(data, pinned=True)
        resolver = Resolver(results=visible, labels=graph.labels(), system=system_values(), secrets=None)
        resolved = resolver.resolve_config({field_name: parsed}, (config_field,))[field_name]
        return Succeeded(_computed(resolved, config_field.expression_error))
    except (CodedError, GraphInvalid) as exc:
        return Failed.of(exc)


def _computed(resolved: Any, error: Any) -> Any:
    """What the action would receive: an expression evaluated, named expressions in order (each
    seeing those above it), any other value as resolved."""
    if isinstance(resolved, BoundExpression):
        return evaluate(resolved.text, resolved.bindings, error=error)
    if isinstance(resolved, list) and all(isinstance(item, tuple) for item in resolved):
        computed: dict[str, Any] = {}
        for name, bound in resolved:
            try:
                computed[name] = evaluate(bound.text, {**bound.bindings, **computed}, error=error)
            except CodedError as exc:
                raise CodedError.of(exc.error, f"Field {name!r}: {exc.message}", field=exc.field) from None
        return computed
    return resolved
