"""Serializer fields for the JSON the API takes: graph nodes and edges, and free JSON objects.

The engine's validator judges what a graph means; these fields only hold the request to the
shape the validator can read (keeperstate.engine.shapes, which every other way in meets in the
validator) and refuse U+0000, which Postgres cannot store in jsonb.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from keeperstate.core.numbers import whole_number
from keeperstate.core.text import has_nul
from keeperstate.engine.shapes import EDGE_SCHEMA, NODE_SCHEMA, shape_problem


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


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 200,
                     "description": "Not blank; visible text: no control, invisible or direction-changing characters "
                     "(Unicode Cc, Cf, Cs, Zl, Zp) and no U+0000 (400 INVALID_NAME)."})
class NameField(TextField):
    def __init__(self, **kwargs: Any):
        super().__init__(max_length=200, **kwargs)


@extend_schema_field(
    {
        "oneOf": [{"type": "string"}, {"type": "integer"}],
        # No example: any slug a schema could name is refused for a caller who is not its member.
        "description": "The organization's slug or id (e.g. acme); one you belong to. Default: your first "
        "organization.",
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


class WholeNumberField(serializers.IntegerField):
    """A whole number read by the one parser (keeperstate.core.numbers): DRF's IntegerField would
    read Unicode digits ("٣" as 3) and integral text with a decimal point."""

    def to_internal_value(self, data: Any) -> int:
        number = whole_number(data)
        if number is None:
            self.fail("invalid")
        return super().to_internal_value(number)
