"""Imports run one way (docs/design.md §1): adapters → domain services → engine → state, secrets,
egress → audit → core and ops; every domain's models sit at the bottom. A lower layer never
imports a higher one, no domain imports an adapter, and adapters never import each other.

Read from the source with ``ast`` (imports inside functions and under TYPE_CHECKING count too),
so the rule holds for what a module could import, not only for what a test happened to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Highest first. A module may import its own layer and any layer below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # the project's wiring: settings, URLs, the app's config and the WSGI/ASGI entry points
    ("project", ("keeperstate.settings", "keeperstate.urls", "keeperstate.wsgi", "keeperstate.asgi",
                 "keeperstate.apps")),
    ("adapters", ("keeperstate.api", "builder", "keeperstate.admin", "keeperstate.management", "keeperstate.demo",
                  "keeperstate.web", "keeperstate.mcp")),
    ("services", ("keeperstate.workflows", "keeperstate.executions", "keeperstate.accounts")),
    ("engine", ("keeperstate.engine",)),
    ("stores", ("keeperstate.state", "keeperstate.secrets", "keeperstate.egress", "keeperstate.ratelimits")),
    ("audit", ("keeperstate.audit",)),
    ("foundation", ("keeperstate.core", "keeperstate.ops")),
]
ADAPTERS = dict(LAYERS)["adapters"]
# The app registry imports every domain's models (keeperstate/models.py), and a model may name
# another domain's model (a foreign key); models import nothing else of ours but core.
MODELS_LAYER = "models"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_models(name: str) -> bool:
    return name == "keeperstate.models" or name.endswith(".models") or ".models." in name


def owner(name: str, prefixes: tuple[str, ...]) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def layer_of(name: str) -> tuple[int, str] | None:
    if is_models(name):
        return len(LAYERS), MODELS_LAYER  # below every layer but foundation (see violations)
    for index, (layer, prefixes) in enumerate(LAYERS):
        if owner(name, prefixes):
            return index, layer
    return None


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.startswith(("keeperstate", "builder"))]


def sources() -> list[Path]:
    return [
        path for folder in ("keeperstate", "builder") for path in sorted((ROOT / folder).rglob("*.py"))
        if "migrations" not in path.parts and module_name(path) not in ("keeperstate", "builder")
    ]


def resolve(name: str) -> str:
    """An imported name as the module it comes from (``a.b.C`` → ``a.b`` when a.b is a module)."""
    candidate = name
    while candidate:
        path = ROOT / Path(*candidate.split("."))
        if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
            return candidate
        candidate = candidate.rpartition(".")[0]
    return name


def violations() -> list[str]:
    found = []
    for path in sources():
        here = module_name(path)
        mine = layer_of(here)
        assert mine is not None, f"{here} belongs to no layer of tests/test_layers.py: add it where it belongs"
        for line, raw in imports_of(path):
            target = resolve(raw)
            theirs = layer_of(target)
            if theirs is None or target == here:
                continue
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if mine[1] == MODELS_LAYER:
                if theirs[1] not in (MODELS_LAYER, "foundation"):
                    found.append(f"{where}: models import only models and core")
            elif theirs[1] == MODELS_LAYER:
                continue  # everything above may read models
            elif theirs[0] < mine[0]:
                found.append(f"{where}: {mine[1]} may not import {theirs[1]}")
            elif mine[1] == "adapters" and theirs[1] == "adapters" and owner(here, ADAPTERS) != owner(target, ADAPTERS):
                found.append(f"{where}: adapters do not import each other")
    return sorted(set(found))


def test_imports_run_one_way():
    assert violations() == []


@pytest.mark.parametrize(
    ("source", "target", "rule"),
    [
        ("keeperstate/state/store.py", "keeperstate.api.views", "stores may not import adapters"),
        ("keeperstate/engine/runner.py", "keeperstate.workflows.services", "engine may not import services"),
        ("builder/views.py", "keeperstate.api.serializers", "adapters do not import each other"),
        ("keeperstate/mcp/tools.py", "keeperstate.api.serializers", "adapters do not import each other"),
        ("keeperstate/api/views.py", "keeperstate.mcp.tools", "adapters do not import each other"),
        ("keeperstate/workflows/shapes.py", "keeperstate.mcp.server", "services may not import adapters"),
        ("keeperstate/state/models.py", "keeperstate.state.store", "models import only models and core"),
    ],
)
def test_the_check_catches_an_import_against_the_direction(tmp_path, monkeypatch, source, target, rule):
    # given: a copy of the tree where one module gains an import against the rule
    copy = tmp_path / "tree"
    for path in sources():
        destination = copy / path.relative_to(ROOT)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(path.read_text())
    planted = copy / source
    planted.write_text(planted.read_text() + f"\nimport {target}  # planted by the test\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", copy)

    # then
    found = [v for v in violations() if source in v and target in v]
    assert found, f"{source} → {target} was not reported ({rule})"
