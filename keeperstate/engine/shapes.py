"""The shape of a workflow graph's JSON (React Flow's nodes and edges), described once.

The API documents and enforces it as field errors (keeperstate.api.fields); the validator
enforces it for every other way in (an import, the demo, a command), so no way in stores a label
of 5 or a position of "abc". Only types are checked here: what a graph means (required ids, edges
between existing nodes) is the validator's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

NODE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A React Flow node. Every node needs a unique id without spaces, ':', '<' or '>'; exactly one node "
    "of a workflow has type 'trigger'. Validation (not the schema) checks this and reports what is wrong.",
    "properties": {
        "id": {"type": "string", "description": "e.g. state-get-1"},
        "type": {"type": "string", "description": "'trigger' for the trigger node, else 'action'."},
        "position": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}},
        "data": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "description": "e.g. State Get"},
                "type": {"type": "string", "description": "The same as the node's type."},
                "config": {
                    "type": "object",
                    "description": "actionType (an id from GET /api/actions/) and that action's config "
                    "fields; a trigger has triggerType and sampleInput instead.",
                    "properties": {"actionType": {"type": "string"}, "triggerType": {"type": "string"}},
                    "additionalProperties": True,
                },
            },
            "additionalProperties": True,
        },
    },
    "additionalProperties": True,
}

EDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A React Flow edge from one node (source) to another (target), both required; "
    "sourceHandle picks one of the source's branches. Validation (not the schema) checks edges.",
    "properties": {
        # No examples of ids: one node's id and an edge's ends could not agree, and the graph they
        # made would be refused (the operations carry whole graphs as their examples).
        "id": {"type": "string", "description": "e.g. e1"},
        "source": {"type": "string", "description": "The source node's id, e.g. trigger."},
        "target": {"type": "string", "description": "The target node's id, e.g. state-get-1."},
        "sourceHandle": {
            "type": "string",
            "nullable": True,
            "description": "One of the source action's sourceHandles (GET /api/actions/), e.g. 'true' or "
            "'false' of a Condition, 'success' or 'conflict' of a State Set; null or absent: its defaultHandle.",
        },
    },
    "additionalProperties": True,
}


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
}
_TYPE_NAMES = {"string": "text", "object": "a JSON object", "number": "a number", "integer": "a whole number"}


def shape_problem(value: Any, schema: dict[str, Any], where: str) -> str | None:
    """Where a value breaks the types its (documented) schema declares, or None.

    Only types are checked, so the schema above stays the single description of the shape:
    what a graph means (required ids, edges between existing nodes) is the validator's job.
    """
    if value is None:
        return None if schema.get("nullable") else f"'{where}' may not be null."
    expected = schema.get("type")
    if expected is not None:
        wrong_bool = isinstance(value, bool) and expected != "boolean"
        if wrong_bool or not isinstance(value, _TYPES[expected]):
            return f"'{where}' must be {_TYPE_NAMES.get(expected, expected)}."
    for name, inner in schema.get("properties", {}).items():
        if isinstance(value, dict) and name in value:
            if problem := shape_problem(value[name], inner, f"{where}.{name}"):
                return problem
    return None


@dataclass(frozen=True)
class ShapeProblem:
    node_id: str | None
    message: str


def shape_problems(nodes: Any, edges: Any) -> Iterator[ShapeProblem]:
    """Where the nodes and edges break their documented types (lists of objects included)."""
    for items, schema, kind in ((nodes, NODE_SCHEMA, "node"), (edges, EDGE_SCHEMA, "edge")):
        if not isinstance(items, list):
            continue  # the graph's own check says a workflow needs lists
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                continue  # the graph's own check names it (Graph.parse)
            node_id = item.get("id") if kind == "node" and isinstance(item.get("id"), str) else None
            # A config's keys are judged by the validator itself (the trigger or action type, and
            # each field by its parser), with codes of their own.
            for name, inner in _without_config(schema)["properties"].items():
                if name in item and (problem := shape_problem(item[name], inner, name)):
                    yield ShapeProblem(node_id, f"{kind.capitalize()} #{index + 1}: {problem}")


def _without_config(schema: dict[str, Any]) -> dict[str, Any]:
    data = schema["properties"].get("data")
    if data is None or "config" not in data.get("properties", {}):
        return schema
    inner = {**data, "properties": {k: v for k, v in data["properties"].items() if k != "config"}}
    return {**schema, "properties": {**schema["properties"], "data": inner}}
