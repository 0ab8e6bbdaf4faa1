"""Adapters translate; they never re-spell a domain's JSON or map exceptions on their own.

* A resource's JSON is its domain's (keeperstate.workflows.shapes, keeperstate.executions.shapes,
  keeperstate.state.shapes). An adapter that builds a dict literal from three or more fields of one
  object (``{"id": str(w.id), "name": w.name, "active": w.active}``) spells a shape of its own.
* An exception becomes an answer in keeperstate.core.failures. An adapter that tests for Django's
  or the database's exceptions (``except Http404``, ``isinstance(exc, DatabaseError)``) maps them on
  its own. (The API's handler maps DRF's own exceptions, which only DRF raises; those are not
  Django's.)

Read with ``ast`` from the source, like tests/test_layers.py, and proven on planted violations.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The adapters of docs/design.md §1 that answer JSON or pages: the API (and its webhook), the MCP
# endpoint and the builder.
ADAPTER_FOLDERS = ("keeperstate/api", "keeperstate/mcp", "builder")
# Whose exceptions keeperstate.core.failures maps.
MAPPED_MODULES = ("django.http", "django.core.exceptions", "django.db")
FIELDS_OF_ONE_OBJECT = 3
# Objects that are not a domain's resource: the HTTP request (the MCP builds an ASGI scope of it).
NOT_RESOURCES = {"request", "http_request"}


def adapter_sources(root: Path) -> list[Path]:
    return [path for folder in ADAPTER_FOLDERS for path in sorted((root / folder).rglob("*.py"))
            if "migrations" not in path.parts]


def _root_name(node: ast.AST) -> str | None:
    """The object a value is read from: ``w`` for ``w.id``, ``str(w.id)``, ``row["key"]``,
    ``when(w.next_run_at)``, ``w.x.username if w.x else None``."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and node.args:
            node = node.args[0]
        elif isinstance(node, ast.IfExp):
            node = node.body
        else:
            return node.id if isinstance(node, ast.Name) else None


def _reads_a_field(node: ast.AST) -> bool:
    inner = node
    while isinstance(inner, ast.Call | ast.IfExp):
        inner = inner.args[0] if isinstance(inner, ast.Call) and inner.args else getattr(inner, "body", None)
    return isinstance(inner, ast.Attribute | ast.Subscript)


def own_shapes(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Dict):
            continue
        roots: dict[str, int] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and _reads_a_field(value):
                if (name := _root_name(value)) is not None:
                    roots[name] = roots.get(name, 0) + 1
        for name, count in roots.items():
            if count >= FIELDS_OF_ONE_OBJECT and name not in NOT_RESOURCES:
                found.append(f"{path.relative_to(root)}:{node.lineno} spells {count} fields of {name!r} as JSON: "
                             "answer its domain's shape (keeperstate/*/shapes.py)")
    return found


def _django_exception_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MAPPED_MODULES):
            names |= {alias.asname or alias.name for alias in node.names
                      if alias.name.endswith(("Error", "404", "Denied", "Operation", "TooBig"))}
    return names


def _named(node: ast.AST | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, ast.Tuple):
        return [name for element in node.elts for name in _named(element)]
    return [node.id] if isinstance(node, ast.Name) else []


def own_mappings(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    django = _django_exception_names(tree)
    found = []
    for node in ast.walk(tree):
        tested: list[str] = []
        if isinstance(node, ast.ExceptHandler):
            tested = _named(node.type)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            tested = _named(node.args[1])
        for name in sorted(set(tested) & django):
            found.append(f"{path.relative_to(root)}:{node.lineno} maps {name} itself: "
                         "answer keeperstate.core.failures.failure_of(exc)")
    return found


def violations(root: Path = ROOT) -> list[str]:
    return [v for path in adapter_sources(root) for v in own_shapes(path, root) + own_mappings(path, root)]


def test_no_adapter_spells_a_domain_shape_or_maps_an_exception_itself():
    assert violations() == []


PLANTED = {
    "shape": ("keeperstate/mcp/tools.py", '''

def planted(workflow):
    return {"id": str(workflow.id), "name": workflow.name, "active": workflow.active}
'''),
    "row shape": ("keeperstate/api/state.py", '''

def planted(row):
    return {"key": row["key"], "value": row["value"], "version": row["version"]}
'''),
    "except": ("builder/views.py", '''
from django.http import Http404 as Missing


def planted(view):
    try:
        return view()
    except Missing:
        return {"code": "NOT_FOUND"}
'''),
    "isinstance": ("keeperstate/api/webhooks.py", '''
from django.db import DatabaseError


def planted(exc):
    return 503 if isinstance(exc, (ValueError, DatabaseError)) else 500
'''),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_the_check_catches_a_planted_violation(tmp_path, kind):
    # given: a copy of the adapters where one module gains a shape or a mapping of its own
    for path in adapter_sources(ROOT):
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    source, code = PLANTED[kind]
    planted = tmp_path / source
    planted.write_text(planted.read_text() + code)

    # then
    found = violations(tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith(source)
