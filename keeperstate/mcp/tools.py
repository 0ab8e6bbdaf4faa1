"""The tools of §16, each a thin adapter over a service the API uses too:

* the catalogue and the validator (keeperstate.engine.registry, keeperstate.engine.validation),
* workflows through keeperstate.workflows.services (validated like every save, audited there),
* runs through keeperstate.executions.service.run_now (Idempotency-Key, the organization's
  runs per minute, as few commits as the run needs),
* state through keeperstate.state.clients (the store, with the user and token as the actor).

Who calls is the token's user (``Caller``, set by keeperstate.mcp.http for the request), and
every object is looked up through keeperstate.accounts.access: another organization's id is
NOT_FOUND, as in the API. A refusal raises; keeperstate.mcp.server turns it into ``isError``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, StrictBool

from keeperstate.accounts.access import get_execution_for, get_workflow_for, organization_for, workflows_visible_to
from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.registry import catalogue
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.selectors import of_workflow
from keeperstate.executions.service import check_idempotency_key, run_now
from keeperstate.executions.shapes import execution_json
from keeperstate.state.clients import Client, client_set, key_entry, key_page
from keeperstate.state.store import StateScope
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_create, workflow_update
from keeperstate.workflows.shapes import workflow_brief_json, workflow_json

MAX_EXECUTIONS = 200
DEFAULT_EXECUTIONS = 20


@dataclass
class Caller:
    """The token's user for one MCP request, and the organization a tool acted in (for the audit)."""

    user: Any
    token_name: str | None
    organization_id: int | None = None

    def client(self) -> Client:
        return Client(user=self.user, channel="mcp", token_name=self.token_name)


current_caller: ContextVar[Caller] = ContextVar("keeperstate_mcp_caller")


def _caller() -> Caller:
    return current_caller.get()


def _workflow(workflow_id: str) -> Workflow:
    caller = _caller()
    workflow = get_workflow_for(caller.user, workflow_id)  # Http404 for another organization's
    caller.organization_id = workflow.organization_id
    return workflow


def _organization(reference: str | int | None) -> Any:
    return organization_for(_caller().user, reference)


# --- argument types (the tools' input schema) ---------------------------------------------------

WorkflowId = Annotated[str, Field(description="The workflow's id (a UUID), from list_workflows or create_workflow.")]
Nodes = Annotated[list[dict[str, Any]], Field(description="The graph's nodes, as in the API's workflow JSON: "
                                              "{id, type, position, data: {label, type, config}}.")]
Edges = Annotated[list[dict[str, Any]], Field(description="The graph's edges: {id, source, target, sourceHandle?}.")]
# Typed for the schema, read by the store: its codes (STATE_INVALID_TTL…) answer a bad one, as in the API.
_WHOLE_OR_NULL: dict[str, Any] = {"type": ["integer", "null"]}
Organization = Annotated[str | None, Field(description="An organization's slug or id; default: your first.")]


# --- the tools ------------------------------------------------------------------------------------


def list_actions() -> dict[str, Any]:
    """The action catalogue and the trigger kinds (GET /api/actions/): each action's config fields,
    output fields, handles, egress and group. Read it before building a graph."""
    return catalogue()


def list_workflows(organization: Organization = None) -> dict[str, Any]:
    """Your workflows (soft-deleted ones excluded), newest change first: id, name, active, nextRunAt."""
    workflows = workflows_visible_to(_caller().user).order_by("-updated_at", "id")
    if organization is not None:
        workflows = workflows.filter(organization=_organization(organization))
    return {"workflows": [workflow_brief_json(w) for w in workflows[:MAX_EXECUTIONS]]}


def get_workflow(workflowId: WorkflowId) -> dict[str, Any]:
    """One workflow as the API shows it (GET /api/workflows/<id>/), graph included."""
    return workflow_json(_workflow(workflowId))


def validate_workflow(nodes: Nodes, edges: Edges) -> dict[str, Any]:
    """Check a graph without saving it (POST /api/workflows/validate/): {valid, errors, warnings},
    each finding with nodeId, field, code and message."""
    return validate_graph(nodes, edges).as_dict()


def create_workflow(name: str, nodes: Nodes, edges: Edges, organization: Organization = None) -> dict[str, Any]:
    """Create a workflow (validated like every save: WORKFLOW_INVALID carries the report). New
    workflows are inactive; activate one with update_workflow."""
    org = _organization(organization)
    _caller().organization_id = org.pk
    workflow = workflow_create(organization=org, user=_caller().user, name=name, nodes=nodes, edges=edges)
    return workflow_json(workflow)


def update_workflow(
    workflowId: WorkflowId,
    name: str | None = None,
    nodes: Nodes | None = None,
    edges: Edges | None = None,
    active: Annotated[StrictBool | None, Field(description="Run on its schedule or by webhook.")] = None,
) -> dict[str, Any]:
    """Change a workflow's name, graph and/or active flag (PATCH /api/workflows/<id>/); a graph change
    is validated first."""
    changes: dict[str, Any] = {k: v for k, v in {"name": name, "nodes": nodes, "edges": edges, "active": active}.items()
                               if v is not None}
    # As the API's PATCH: a change of name or graph is kept as a version by the token's user.
    return workflow_json(workflow_update(_workflow(workflowId), user=_caller().user, **changes))


def run_workflow(
    workflowId: WorkflowId,
    input: Annotated[dict[str, Any] | None, Field(description="The run input, the trigger's output.")] = None,
    idempotencyKey: Annotated[str | None, Field(description="Up to 200 characters, kept 24 h: a retry with "
                                                "the same key answers the first execution instead of running "
                                                "again.")] = None,
) -> dict[str, Any]:
    """Run a workflow now and answer the finished execution (POST /api/workflows/<id>/execute/). A node's
    failure is status "error" with the node's code in nodeResults, not a tool error."""
    workflow = _workflow(workflowId)
    started = run_now(
        workflow,
        input if input is not None else {},
        trigger=WorkflowExecution.Trigger.API,
        user=_caller().user,
        idempotency_key=check_idempotency_key(idempotencyKey),
    )
    return execution_json(started.execution)


def get_execution(executionId: Annotated[str, Field(description="The execution's id.")]) -> dict[str, Any]:
    """One execution (GET /api/executions/<id>/): status, error, each node's result."""
    execution = get_execution_for(_caller().user, executionId)
    _caller().organization_id = execution.workflow.organization_id
    return execution_json(execution)


def list_executions(
    workflowId: WorkflowId,
    status: Annotated[str | None, Field(description="Only executions with this status: queued, running, "
                                        "success, error, interrupted or skipped.")] = None,
    limit: Annotated[int, Field(ge=1, le=MAX_EXECUTIONS, description="How many, newest first.")] = DEFAULT_EXECUTIONS,
) -> dict[str, Any]:
    """A workflow's executions, newest first."""
    executions = of_workflow(_workflow(workflowId)).select_related("triggered_by").order_by("-queued_at", "id")
    if status is not None:
        if status not in WorkflowExecution.Status.values:
            choices = ", ".join(WorkflowExecution.Status.values)
            raise CodedError.of(Code.INVALID_CHOICE, f"status takes one of {choices}.", field="status")
        executions = executions.filter(status=status)
    return {"executions": [execution_json(e) for e in executions[:limit]]}


def get_state(
    workflowId: WorkflowId,
    key: Annotated[str | None, Field(description="One key; left out: every live key.")] = None,
) -> dict[str, Any]:
    """A workflow's state (GET /api/workflows/<id>/state/…): one live key with value, version, expiresAt,
    updatedAt and updatedByExecution (STATE_KEY_NOT_FOUND when absent or expired), or all live keys."""
    workflow = _workflow(workflowId)
    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    if key is None:
        # A workflow holds at most KEEPERSTATE_MAX_KEYS_PER_WORKFLOW (100) live keys: one page is all.
        page, _more = key_page(scope=scope, size=200)
        return {"results": page}
    entry = key_entry(scope=scope, key=key)
    if entry is None:
        raise CodedError.of(Code.STATE_KEY_NOT_FOUND, f"There is no live state key '{key.strip()}' in this workflow.")
    return entry


def set_state(
    workflowId: WorkflowId,
    key: str,
    value: Annotated[Any, Field(description="Any JSON but null, at most 8 KB.")],
    expectedVersion: Annotated[Any, Field(json_schema_extra=_WHOLE_OR_NULL,
                                          description="Write only if the live version is this (0: only "
                                          "if absent); else STATE_VERSION_CONFLICT with the current version.")] = None,
    ttl: Annotated[Any, Field(json_schema_extra=_WHOLE_OR_NULL,
                              description="Seconds until the key expires; left out: no expiry.")] = None,
) -> dict[str, Any]:
    """Write a state key through the store (PUT /api/workflows/<id>/state/<key>/): {key, version, created,
    expiresAt}. The history names you and your token."""
    workflow = _workflow(workflowId)
    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    write = client_set(scope=scope, client=_caller().client(), key=key, value=value, ttl=ttl,
                       expected_version=expectedVersion)
    return write.as_output()


TOOLS: list[Callable[..., dict[str, Any]]] = [
    list_actions, list_workflows, get_workflow, validate_workflow, create_workflow, update_workflow, run_workflow,
    get_execution, list_executions, get_state, set_state,
]
