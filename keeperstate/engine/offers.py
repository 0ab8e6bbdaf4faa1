"""Autocomplete metadata for the editor's @ menu (DESIGN.md §8).

Computed from the unsaved graph in the editor: every node that runs before the edited node
(keeperstate.engine.scope's answer, which the validator and the runner share: its upstream nodes
nearest first, then the bodies of the loops done before it), each with the output fields the
registry declares for its action (a trigger: the fields of its sample input), then the system
built-ins. Every field carries its ready token. An action never falls back to a generic ``data``
field, and downstream or unconnected nodes are never offered: referencing them fails at run time.
"""

from __future__ import annotations

import json
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.expressions import json_type
from keeperstate.engine.graph import Graph
from keeperstate.engine.references import (
    SECRETS_LABEL,
    SECRETS_NODE_ID,
    SYSTEM_FIELDS,
    SYSTEM_LABEL,
    SYSTEM_NODE_ID,
    make_token,
)
from keeperstate.engine.registry import TRIGGERS, get_action
from keeperstate.engine.results import Succeeded, result_from_json
from keeperstate.engine.scope import Scope, is_trigger, scope_of
from keeperstate.engine.secret_places import secret_fields

MAX_SAMPLE_DEPTH = 3
_UNSAFE_KEY_CHARS = set(".[]<>")


class NodeNotFound(CodedError):
    error = Code.NODE_NOT_FOUND


def reference_options(
    nodes: Any,
    edges: Any,
    node_id: Any,
    *,
    secret_names: list[str] | None = None,
    last_results: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"nodeId", "sources": [{"nodeId", "label", "kind", "type", "fields", "hint"}]}``.

    With ``last_results`` (the node results of the workflow's last run) an output that held an
    object (an HTTP answer's body, a stored value) also offers that object's fields; with
    ``secret_names`` (the organization's) the secrets are offered last, to a node that has a field
    they may stand in.
    Raises a CodedError (a 400 for the view) for a graph no workflow can have, a cycle, or a
    node id that is not in the graph.
    """
    graph = Graph.parse(nodes, edges)  # GraphInvalid: duplicate ids, edges to missing nodes, ...
    if not isinstance(node_id, str) or node_id not in graph.nodes:
        raise NodeNotFound(
            f"There is no node '{node_id}' in this graph; select a node of the workflow.", details={"nodeId": node_id}
        )
    scope = scope_of(graph)  # GraphCycle: no node of a cycle runs before another
    sources = [_source(graph, source_id, last_results or {}, scope, node_id) for source_id in scope.sources(node_id)]
    sources.append(system_source())
    # Secrets only for a node with a field they may stand in (an HTTP Request's URL, headers,
    # body; keeperstate.engine.secret_places): anywhere else a save would refuse them.
    if secret_names is not None and secret_fields(get_action(graph.action_type(node_id) or "")):
        sources.append(secrets_source(secret_names))
    return {"nodeId": node_id, "sources": sources}


def _field(node_id: str, label: str, path: str, type_: str, description: str) -> dict[str, str]:
    return {"field": path, "type": type_, "description": description, "token": make_token(node_id, label, path)}


def _source(graph: Graph, node_id: str, last_results: dict[str, Any], scope: Scope, reader: str) -> dict[str, Any]:
    label = graph.label(node_id)
    config = graph.config(node_id)
    if is_trigger(graph, node_id):
        trigger_type = str(config.get("triggerType") or "Manual")
        trigger = TRIGGERS.get(trigger_type)
        if trigger is not None and trigger.output_fields:  # a run input of fixed shape (Schedule)
            fields = [_field(node_id, label, f.name, f.type, f.description) for f in trigger.output_fields]
        else:
            sample = _sample(trigger, config.get("sampleInput"))
            fields = [_field(node_id, label, path, t, d) for path, t, d in sample_fields(sample)]
        hint = None if fields else (
            'Give the trigger a sample input (e.g. {"block": 100}) to pick the fields of the run input here.'
        )
        return {"nodeId": node_id, "label": label, "kind": "trigger", "type": trigger_type,
                "icon": trigger.icon if trigger else None, "fields": fields, "hint": hint}
    action_type = graph.action_type(node_id)
    definition = get_action(action_type or "")
    if definition is None:
        return {"nodeId": node_id, "label": label, "kind": "action", "type": action_type, "icon": None,
                "fields": [], "hint": f"Unknown action '{action_type}': it has no fields to offer."}
    fields = []
    last = _last_data(last_results, node_id)
    inside = reader in scope.bodies.get(node_id, frozenset())
    for output in definition.outputs_of(config):
        if output.loop_scope is not None and (output.loop_scope == "body") != inside:
            continue  # a loop's item and index inside its body; its count and the rest after it
        fields.append(_field(node_id, label, output.name, output.type, output.description))
        if output.type in ("any", "object") and output.name != "headers" and isinstance(last.get(output.name), dict):
            seen = sample_fields(last[output.name], prefix=output.name + ".", origin="From the last run")
            fields.extend(_field(node_id, label, path, t, d) for path, t, d in seen)
    return {"nodeId": node_id, "label": label, "kind": "action", "type": definition.id, "icon": definition.icon,
            "fields": fields, "hint": None}


def _last_data(last_results: dict[str, Any], node_id: str) -> dict[str, Any]:
    result = result_from_json(last_results.get(node_id))
    data = result.data if isinstance(result, Succeeded) else None
    return data if isinstance(data, dict) else {}


def secrets_source(names: list[str]) -> dict[str, Any]:
    fields = [
        _field(SECRETS_NODE_ID, SECRETS_LABEL, name, "string",
               "An organization secret: sent where you use it, shown as •••• everywhere else.")
        for name in names
    ]
    hint = None if fields else "Your organization has no secrets yet: add API keys and tokens under Secrets."
    return {"nodeId": SECRETS_NODE_ID, "label": SECRETS_LABEL, "kind": "secrets", "type": None, "icon": None,
            "fields": fields, "hint": hint}


def system_source() -> dict[str, Any]:
    fields = [_field(SYSTEM_NODE_ID, SYSTEM_LABEL, name, t, d) for name, (t, d) in SYSTEM_FIELDS.items()]
    return {"nodeId": SYSTEM_NODE_ID, "label": SYSTEM_LABEL, "kind": "system", "type": None, "icon": None,
            "fields": fields, "hint": None}


def _sample(trigger: Any, raw: Any) -> Any:
    """The sample input as its field parses it: the editor's unsaved graph may hold the text being
    typed. None while it is not a valid sample."""
    config_field = trigger.config_field("sampleInput") if trigger is not None else None
    if config_field is None:
        return None
    try:
        return config_field.parse(raw)
    except CodedError:
        return None


def sample_fields(
    sample: Any, prefix: str = "", depth: int = 1, origin: str = "From the trigger's sample input"
) -> list[tuple[str, str, str]]:
    """(path, type, description) of every field of a sample object, nested objects included."""
    if not isinstance(sample, dict):
        return []
    found = []
    for key, value in sample.items():
        if not isinstance(key, str) or not key.strip() or _UNSAFE_KEY_CHARS & set(key):
            continue  # a key a path cannot name
        path = f"{prefix}{key}"
        found.append((path, json_type(value), f"{origin}, e.g. {_preview(value)}."))
        if isinstance(value, dict) and depth < MAX_SAMPLE_DEPTH:
            found.extend(sample_fields(value, prefix=path + ".", depth=depth + 1, origin=origin))
    return found


def _preview(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "…"
