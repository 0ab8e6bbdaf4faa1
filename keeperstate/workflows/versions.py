"""Workflow versions: every save that changes a workflow's name or graph keeps one, with who
saved it and a one-line summary of what changed (DESIGN.md §8, the editor's history after a
reload). Restoring a version saves its graph again through workflow_update, so the restore is
itself validated, audited and kept as a new version; nothing is ever rewritten in place. Only the
newest MAX_VERSIONS of a workflow are kept: a graph may hold up to 1 MB, and every save keeps one."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Max

from keeperstate.workflows.models import Workflow, WorkflowVersion

MAX_SUMMARY = 300
MAX_VERSIONS = 100  # kept per workflow (DESIGN.md §8); older ones are deleted as new ones come
NAMES_SHOWN = 3


def _by_id(items: Any) -> dict[str, dict[str, Any]]:
    return {str(item["id"]): item for item in items or [] if isinstance(item, dict) and "id" in item}


def _label(node: dict[str, Any]) -> str:
    data = node.get("data")
    label = data.get("label") if isinstance(data, dict) else None
    return str(label or node["id"])


def _edge(edge: dict[str, Any]) -> dict[str, Any]:
    return {"id": edge["id"], "source": edge.get("source"), "target": edge.get("target"),
            "sourceHandle": edge.get("sourceHandle")}


VALUE_CHARS = 120


def _shown(value: Any) -> str | None:
    """A field's value as the versions page shows it: text as it is, anything else as compact
    JSON, cut to VALUE_CHARS; None when the field is not there."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def field_changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Each field of a node that differs, old → new: its label, type, each config field, its
    pinned data and a note's text (``{"field", "from", "to"}``, null where there was none)."""
    def fields(node: dict[str, Any]) -> dict[str, Any]:
        data: dict[str, Any] = node["data"] if isinstance(node.get("data"), dict) else {}
        config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
        found = {"label": data.get("label"), "type": node.get("type"), "pinned data": data.get("pinnedData"),
                 "text": data.get("text")}
        found.update({f"config.{key}": value for key, value in config.items()})
        return found

    before, after = fields(old), fields(new)
    return [{"field": key, "from": _shown(before.get(key)), "to": _shown(after.get(key))}
            for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]


def graph_diff(before: WorkflowVersion | None, name: str, nodes: Any, edges: Any) -> dict[str, Any]:
    """What changed from ``before`` (None: the first version) to this name and graph. A node is
    *changed* when its label, type or config differ (with each field old → new), *moved* when only
    its position does."""
    old_nodes = _by_id(before.nodes) if before else {}
    old_edges = _by_id(before.edges) if before else {}
    new_nodes, new_edges = _by_id(nodes), _by_id(edges)

    def brief(node: dict[str, Any]) -> dict[str, str]:
        return {"id": node["id"], "label": _label(node)}

    def without_position(node: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in node.items() if k != "position"}

    common = [nid for nid in new_nodes if nid in old_nodes]
    changed = [nid for nid in common if without_position(new_nodes[nid]) != without_position(old_nodes[nid])]
    moved = [nid for nid in common if nid not in changed and new_nodes[nid] != old_nodes[nid]]
    return {
        "renamed": {"from": before.name, "to": name} if before and before.name != name else None,
        "nodes": {
            "added": [brief(new_nodes[nid]) for nid in new_nodes if nid not in old_nodes],
            "removed": [brief(old_nodes[nid]) for nid in old_nodes if nid not in new_nodes],
            "changed": [{**brief(new_nodes[nid]), "fields": field_changes(old_nodes[nid], new_nodes[nid])}
                        for nid in changed],
            "moved": [brief(new_nodes[nid]) for nid in moved],
        },
        "edges": {
            "added": [_edge(new_edges[eid]) for eid in new_edges if eid not in old_edges],
            "removed": [_edge(old_edges[eid]) for eid in old_edges if eid not in new_edges],
        },
    }


def _names(nodes: list[dict[str, str]]) -> str:
    shown = ", ".join(n["label"] for n in nodes[:NAMES_SHOWN])
    return shown + (f" and {len(nodes) - NAMES_SHOWN} more" if len(nodes) > NAMES_SHOWN else "")


def summarize(diff: dict[str, Any], *, first: bool) -> str:
    """One line: "added Head, Cursor; changed Condition; 2 connections added"."""
    if first:
        return f"First version: {len(diff['nodes']['added'])} node(s)"
    parts = []
    if diff["renamed"]:
        parts.append(f"renamed to {diff['renamed']['to']}")
    for verb in ("added", "removed", "changed"):
        if diff["nodes"][verb]:
            parts.append(f"{verb} {_names(diff['nodes'][verb])}")
    if diff["nodes"]["moved"]:
        parts.append(f"moved {len(diff['nodes']['moved'])} node(s)")
    for verb in ("added", "removed"):
        if count := len(diff["edges"][verb]):
            parts.append(f"{count} connection{'s' if count != 1 else ''} {verb}")
    line = "; ".join(parts) or "saved unchanged"
    line = line[0].upper() + line[1:]
    return line if len(line) <= MAX_SUMMARY else line[: MAX_SUMMARY - 1] + "…"


def record_version(workflow: Workflow, *, user: Any = None, summary_prefix: str = "") -> WorkflowVersion | None:
    """Keep the workflow's current name and graph as its next version, unless they equal the last
    one's. Call inside the saving transaction: the workflow row is locked, so two saves number apart."""
    # By its key, (organization, id): a lock by id alone is refused on a sharded database.
    Workflow.objects.select_for_update().filter(organization_id=workflow.organization_id, pk=workflow.pk).first()
    last = of_workflow(workflow).order_by("-number").first()
    if last is not None and (last.name, last.nodes, last.edges) == (workflow.name, workflow.nodes, workflow.edges):
        return None
    diff = graph_diff(last, workflow.name, workflow.nodes, workflow.edges)
    number = (of_workflow(workflow).aggregate(top=Max("number"))["top"] or 0) + 1
    version = WorkflowVersion.objects.create(
        workflow=workflow,
        number=number,
        name=workflow.name,
        nodes=workflow.nodes,
        edges=workflow.edges,
        changes=diff,
        summary=(summary_prefix + summarize(diff, first=last is None))[:MAX_SUMMARY],
        created_by=user if getattr(user, "pk", None) else None,
    )
    # Numbers are never reused: the newest keeps counting up while the oldest go.
    of_workflow(workflow).filter(number__lte=number - MAX_VERSIONS).delete()
    return version


def keep_unversioned(workflow: Workflow) -> None:
    """A workflow saved before it had versions (made by another path, or before versions began)
    keeps the graph it has now as version 1, so the save about to change it can be undone too."""
    if workflow.pk is None or of_workflow(workflow).exists():
        return
    nodes = workflow.nodes if isinstance(workflow.nodes, list) else []
    WorkflowVersion.objects.create(
        workflow=workflow, number=1, name=workflow.name, nodes=workflow.nodes, edges=workflow.edges, changes={},
        summary=f"The graph before versions were kept: {len(nodes)} node(s)", created_by=workflow.created_by,
        created_at=workflow.updated_at,
    )


def of_workflow(workflow: Workflow) -> Any:
    """The workflow's versions, by the key (organization, workflow, number) that finds them: the
    related manager names the workflow alone, which no index leads with (Postgres before 18 read
    every version of every workflow for it, on each save)."""
    return WorkflowVersion.objects.filter(organization_id=workflow.organization_id, workflow_id=workflow.pk)


def versions_of(workflow: Workflow) -> Any:
    """The workflow's versions, newest first."""
    return of_workflow(workflow).select_related("created_by").order_by("-number")
