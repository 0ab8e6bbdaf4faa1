"""Serializer fields for the JSON the API takes: graph nodes and edges, and free JSON objects.

The engine's validator judges what a graph means; these fields only hold the request to the
shape the validator can read (a node is an object, its ``data`` and ``config`` are objects)
and refuse U+0000, which Postgres cannot store in jsonb.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from keeperstate.core.text import has_nul

NODE_SCHEMA = {
    "type": "object",
    "description": "A React Flow node. Every node needs a unique id without spaces, ':', '<' or '>'; exactly one node "
    "of a workflow has type 'trigger'. Validation (not the schema) checks this and reports what is wrong.",
    "properties": {
        "id": {"type": "string", "example": "state-get-1"},
        "type": {"type": "string", "description": "'trigger' for the trigger node, else 'action'."},
        "position": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}},
        "data": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "example": "State Get"},
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

EDGE_SCHEMA = {
    "type": "object",
    "description": "A React Flow edge from one node (source) to another (target), both required; "
    "sourceHandle picks one of the source's branches. Validation (not the schema) checks edges.",
    "properties": {
        "id": {"type": "string", "example": "e1"},
        "source": {"type": "string", "example": "trigger"},
        "target": {"type": "string", "example": "state-get-1"},
        "sourceHandle": {
            "type": "string",
            "nullable": True,
            "description": "One of the source action's sourceHandles (GET /api/actions/), e.g. 'true' or "
            "'false' of a Condition, 'success' or 'conflict' of a State Set; null or absent: its defaultHandle.",
        },
    },
    "additionalProperties": True,
}


class StorableJSONMixin:
    """Refuses JSON that Postgres jsonb cannot hold."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)  # type: ignore[misc]
        if has_nul(value):
            raise serializers.ValidationError("Text in this field contains the character U+0000; remove it.")
        return value


@extend_schema_field({"type": "object", "additionalProperties": True})
class JSONObjectField(StorableJSONMixin, serializers.DictField):
    """Any JSON object, stored as given."""


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


class _ShapedObjectField(StorableJSONMixin, serializers.DictField):
    shape: dict[str, Any] = {}

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        for name, inner in self.shape["properties"].items():
            if name in value and (problem := shape_problem(value[name], inner, name)):
                raise serializers.ValidationError(problem)
        return value


@extend_schema_field(NODE_SCHEMA, component_name="WorkflowNode")
class NodeField(_ShapedObjectField):
    shape = NODE_SCHEMA


@extend_schema_field(EDGE_SCHEMA, component_name="WorkflowEdge")
class EdgeField(_ShapedObjectField):
    shape = EDGE_SCHEMA


def nodes_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=NodeField(), **kwargs)


def edges_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=EdgeField(), **kwargs)


class TextField(serializers.CharField):
    """Text that is text: DRF's CharField would turn 42 or 1.5 into "42" and "1.5"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 200, "description": "Not blank."})
class NameField(TextField):
    def __init__(self, **kwargs: Any):
        super().__init__(max_length=200, **kwargs)


@extend_schema_field(
    {
        "oneOf": [{"type": "string"}, {"type": "integer"}],
        "description": "The organization's slug or id; one you belong to. Default: your first organization.",
        "example": "acme",
    }
)
class OrganizationRefField(serializers.CharField):
    """An organization named by slug or id; the serializer resolves it among the user's own."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, str | int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only: DRF's BooleanField would also take 0, 1, "yes" and "on"."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data
