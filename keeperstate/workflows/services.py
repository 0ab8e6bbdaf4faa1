"""Workflow services: create, update, duplicate and import, each validated the same way.

Every way in (the API, which the editor uses too; the builder's workflow list; the demo; the
commands; admin's actions) calls these, and none saves a Workflow's graph on its own. A graph is
validated and every config field parsed into its one stored form (ConfigField.parse, through
validate_graph) before it is stored, so what is stored does not depend on the way in. State is
never copied: a duplicate or an import is a new workflow id and so starts with empty state.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from keeperstate.accounts.models import Organization
from keeperstate.audit.log import audit
from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import text_problem
from keeperstate.engine.graph import check_size
from keeperstate.engine.secret_places import holds_secret, not_allowed
from keeperstate.engine.validation import ValidationReport, validate_graph
from keeperstate.executions.scheduling import refresh_schedule
from keeperstate.workflows.models import Workflow, new_webhook_secret
from keeperstate.workflows.settings import clean_settings
from keeperstate.workflows.versions import keep_unversioned, of_workflow, record_version

MAX_NAME_LENGTH = 200


class WorkflowNameInvalid(CodedError):
    error = Code.INVALID_NAME


class WorkflowInvalid(CodedError):
    error = Code.WORKFLOW_INVALID

    def __init__(self, report: ValidationReport):
        first = report.errors[0]
        super().__init__(
            f"The workflow has {len(report.errors)} error(s); the first: {first.message}",
            details=report.as_dict(),
        )
        self.report = report


def default_graph() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What a new empty workflow starts with: one Manual trigger."""
    trigger = {
        "id": "trigger",
        "type": "trigger",
        "position": {"x": 0, "y": 0},
        "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual", "sampleInput": {}}},
    }
    return [trigger], []


def clean_name(name: Any) -> str:
    """A workflow name: 1–200 characters after trimming, all of them visible (the same text
    rules as node labels and state keys, wherever the name arrives from)."""
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > MAX_NAME_LENGTH:
        raise WorkflowNameInvalid(f"Give the workflow a name of 1 to {MAX_NAME_LENGTH} characters.", field="name")
    if problem := text_problem(text):
        raise WorkflowNameInvalid(f"The workflow name {problem}.", field="name")
    if holds_secret(text):
        raise not_allowed("the workflow's name", field="name")
    return text


def _validated(nodes: Any, edges: Any) -> tuple[list[Any], list[Any]]:
    """The graph as it is stored: within the size limits (WORKFLOW_TOO_LARGE), validated, with
    every config field parsed."""
    if not nodes and not edges:
        return default_graph()
    check_size(nodes, edges)
    report = validate_graph(nodes, edges)
    if not report.valid:
        raise WorkflowInvalid(report)
    return report.nodes, edges


def workflow_create(
    *,
    organization: Organization,
    user: Any,
    name: str,
    description: str = "",
    nodes: Any = None,
    edges: Any = None,
    active: bool = False,
    settings: Any = None,
) -> Workflow:
    name = clean_name(name)
    nodes, edges = _validated(nodes or [], edges or [])
    settings = clean_settings(settings or {}, organization_id=organization.pk, workflow_id=None)
    with transaction.atomic():
        workflow = Workflow.objects.create(
            organization=organization,
            name=name,
            description=description,
            nodes=nodes,
            edges=edges,
            active=active,
            settings=settings,
            created_by=user if getattr(user, "pk", None) else None,
        )
        audit("workflow.create", organization=organization, target=workflow,
              details={"active": True} if active else None)
        record_version(workflow, user=user)
    refresh_schedule(workflow)
    return workflow


@transaction.atomic
def workflow_update(workflow: Workflow, *, user: Any = None, version_note: str = "", **changes: Any) -> Workflow:
    """Change name, description, nodes, edges, active and/or settings; a graph change is validated
    first, and the schedule's next due time follows the new graph and flag. A change of name or
    graph is kept as a new version by ``user`` (its summary starts with ``version_note``)."""
    allowed = {"name", "description", "nodes", "edges", "active", "settings"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"Cannot update {sorted(unknown)}")
    if "name" in changes:
        changes["name"] = clean_name(changes["name"])
    if "settings" in changes:
        changes["settings"] = clean_settings(changes["settings"], organization_id=workflow.organization_id,
                                             workflow_id=workflow.pk)
    if "nodes" in changes or "edges" in changes:
        nodes, edges = _validated(changes.get("nodes", workflow.nodes), changes.get("edges", workflow.edges))
        changes["nodes"], changes["edges"] = nodes, edges
    changed = sorted(name for name, value in changes.items() if getattr(workflow, name) != value)
    if {"name", "nodes", "edges"} & set(changed):
        keep_unversioned(workflow)  # the graph before this save, when it has no version yet
    for name, value in changes.items():
        setattr(workflow, name, value)
    with transaction.atomic():
        workflow.save(update_fields=[*changes, "updated_at"])
        if changed:  # a save that changes nothing is not an event
            audit("workflow.update", organization=workflow.organization_id, target=workflow,
                  details={"fields": changed})
        if "active" in changed:
            audit("workflow.activate" if workflow.active else "workflow.deactivate",
                  organization=workflow.organization_id, target=workflow)
        if {"name", "nodes", "edges"} & set(changed):
            record_version(workflow, user=user, summary_prefix=version_note)
    if {"nodes", "active"} & set(changes):
        refresh_schedule(workflow)
    return workflow


def workflow_set_active(workflow: Workflow, active: bool) -> Workflow:
    """Switch scheduled and webhook runs on or off."""
    return workflow_update(workflow, active=active)


def rotate_webhook_secret(workflow: Workflow) -> str:
    """A new webhook secret; the old one stops working at once."""
    workflow.webhook_secret = new_webhook_secret()
    with transaction.atomic():
        workflow.save(update_fields=["webhook_secret", "updated_at"])
        audit("workflow.webhook_secret_rotate", organization=workflow.organization_id, target=workflow)
    return workflow.webhook_secret


def workflow_restore_version(workflow: Workflow, number: int, *, user: Any) -> Workflow:
    """Save version ``number``'s name and graph again: validated like any save, and itself a new
    version ("Restored version 3: …"). A missing number raises WorkflowVersion.DoesNotExist."""
    version = of_workflow(workflow).get(number=number)
    return workflow_update(workflow, user=user, version_note=f"Restored version {number}: ",
                           name=version.name, nodes=version.nodes, edges=version.edges)


def workflow_duplicate(workflow: Workflow, *, user: Any, name: str | None = None) -> Workflow:
    """A copy under a new id; its state starts empty (a cloned monitor must not inherit a cursor)."""
    check_size(workflow.nodes, workflow.edges)  # a graph stored before the limits is not copied
    with transaction.atomic():
        copy = Workflow.objects.create(
            organization=workflow.organization,
            name=clean_name(name or f"{workflow.name} (copy)"[:MAX_NAME_LENGTH]),
            description=workflow.description,
            nodes=workflow.nodes,
            edges=workflow.edges,
            settings=workflow.settings,
            created_by=user if getattr(user, "pk", None) else None,
        )
        audit("workflow.create", organization=copy.organization_id, target=copy,
              details={"duplicateOf": str(workflow.id)})
        record_version(copy, user=user)
    return copy


def workflow_export(workflow: Workflow) -> dict[str, Any]:
    """The portable form of a workflow: its graph, never its state."""
    return {
        "name": workflow.name,
        "description": workflow.description,
        "nodes": workflow.nodes,
        "edges": workflow.edges,
    }


def workflow_import(*, organization: Organization, user: Any, document: dict[str, Any]) -> Workflow:
    return workflow_create(
        organization=organization,
        user=user,
        name=str(document.get("name") or "Imported workflow"),
        description=str(document.get("description") or ""),
        nodes=document.get("nodes") or [],
        edges=document.get("edges") or [],
    )


def workflow_soft_delete(workflow: Workflow) -> None:
    """Hide the workflow everywhere; its state is kept (an admin may restore it)."""
    with transaction.atomic():
        workflow.soft_delete()
        audit("workflow.delete", organization=workflow.organization_id, target=workflow)


# The workflow by its key; the database deletes the rest on the workflow's shard (the foreign keys
# of its state, usage counters, executions and versions are ON DELETE CASCADE; a trigger deletes
# its history, tombstones and due marks). Django's collector would read and delete each related
# table by the workflow's id alone, which a sharded database sends to every shard.
HARD_DELETE_SQL = "DELETE FROM workflow WHERE organization_id = %(org)s AND id = %(wf)s"


@transaction.atomic
def workflow_hard_delete(workflow: Workflow, *, details: dict[str, Any] | None = None) -> None:
    """Delete the workflow with its executions, versions and state."""
    audit("workflow.hard_delete", organization=workflow.organization_id, target=workflow, details=details)
    with connection.cursor() as cursor:
        cursor.execute(HARD_DELETE_SQL, {"org": workflow.organization_id, "wf": workflow.pk})
