"""The API's OpenAPI schema as /api/schema/ serves it, for both fuzz modules."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

RAW_SCHEMA: dict[str, Any] = json.loads(
    OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True))
)
METHODS = ("get", "post", "put", "patch", "delete")


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) for every operation of the schema."""
    return [(method.upper(), path, operation) for path, item in RAW_SCHEMA["paths"].items()
            for method, operation in item.items() if method in METHODS]


def body_fields(operation: dict[str, Any]) -> list[str]:
    """The property names of an operation's JSON request body (empty when it takes none)."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    shape = content.get("schema", {})
    if ref := shape.get("$ref"):
        shape = RAW_SCHEMA["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    return sorted(shape.get("properties", {}))


def parameters(operation: dict[str, Any], where: str) -> list[str]:
    return [p["name"] for p in operation.get("parameters", []) if p["in"] == where]
