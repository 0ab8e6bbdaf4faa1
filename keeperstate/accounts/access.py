"""Who may see and change what: every API view and builder page asks here.

A user sees the workflows of the organizations it belongs to; anything else is reported as
not found (404), never as forbidden, so ids cannot be probed.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection
from django.http import Http404

from keeperstate.accounts.models import Membership, Organization
from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import whole_number
from keeperstate.core.rows import Columns
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow, WorkflowQuerySet


def organizations_of(user: Any) -> Any:
    if not getattr(user, "is_authenticated", False):
        return Organization.objects.none()
    return Organization.objects.filter(memberships__user=user)


def workflows_visible_to(user: Any) -> WorkflowQuerySet:
    """Workflows of the user's organizations, soft-deleted ones excluded (WorkflowQuerySet.visible_to)."""
    return Workflow.objects.visible_to(user)


# workflows_visible_to(user).get(pk=…) as one statement written once, with the rule's SQL form
# (WorkflowQuerySet.visible_to_sql): every API call on a workflow (a run above all) reads it, and
# Django would compile the queryset each time, which costs more than the statement
# (keeperstate.core.rows). tests/api/test_access.py holds the two equal.
_WORKFLOW = Columns(Workflow, "w")
_WORKFLOW_FOR_USER_SQL = f"""
SELECT {_WORKFLOW.sql} FROM {_WORKFLOW.table}
 WHERE w."id" = %s AND {WorkflowQuerySet.visible_to_sql("w")}
"""


def get_workflow_for(user: Any, workflow_id: Any) -> Workflow:
    """The workflow if it is alive and in one of the user's organizations; else 404."""
    try:
        pk = uuid.UUID(str(workflow_id))
    except ValueError as exc:
        raise Http404("No such workflow.") from exc
    if not getattr(user, "is_authenticated", False):
        raise Http404("No such workflow.")
    with connection.cursor() as cursor:
        cursor.execute(_WORKFLOW_FOR_USER_SQL, [pk, user.pk])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such workflow.")
    return _WORKFLOW.instance(row)


# Workflow.objects.alive().filter(pk=…, active=True).first() as one statement written once: the
# webhook's only read before it records a run (tests/api/test_access.py holds the two equal).
_HOOKED_WORKFLOW_SQL = f"""
SELECT {_WORKFLOW.sql} FROM {_WORKFLOW.table}
 WHERE w."id" = %s AND w."active" AND {WorkflowQuerySet.alive_sql("w")}
"""


def hooked_workflow(workflow_id: Any) -> Workflow | None:
    """The workflow a webhook at ``workflow_id`` runs: alive and active, whichever organization
    it is in (the caller checks the webhook's secret); None for anything else, a malformed id
    included."""
    try:
        pk = uuid.UUID(str(workflow_id))
    except ValueError:
        return None
    with connection.cursor() as cursor:
        cursor.execute(_HOOKED_WORKFLOW_SQL, [pk])
        row = cursor.fetchone()
    return None if row is None else _WORKFLOW.instance(row)


def get_execution_for(user: Any, execution_id: Any) -> WorkflowExecution:
    """The execution if its workflow is alive and in one of the user's organizations; else 404.

    Two reads, each on one table: the execution by id among the user's organizations (on
    docs/scaling.md's fan-out list), then its workflow by its key. A join of the two on the
    workflow's id alone is what a sharded database refuses."""
    try:
        pk = uuid.UUID(str(execution_id))
    except ValueError as exc:
        raise Http404("No such execution.") from exc
    if not getattr(user, "is_authenticated", False):
        raise Http404("No such execution.")
    mine = Membership.objects.filter(user=user).values("organization_id")
    execution = WorkflowExecution.objects.filter(pk=pk, organization_id__in=mine).first()
    workflow = None if execution is None else (
        Workflow.objects.alive().filter(organization_id=execution.organization_id, pk=execution.workflow_id).first()
    )
    if execution is None or workflow is None:
        raise Http404("No such execution.")
    execution.workflow = workflow
    return execution


def role_in(user: Any, organization_id: int) -> str | None:
    membership = Membership.objects.filter(user=user, organization_id=organization_id).only("role").first()
    return membership.role if membership else None


def can_hard_delete(user: Any, workflow: Workflow) -> bool:
    return role_in(user, workflow.organization_id) in (Membership.Role.OWNER, Membership.Role.ADMIN)


def default_organization(user: Any) -> Organization | None:
    """The organization a new workflow goes to when the user does not name one."""
    return organizations_of(user).order_by("memberships__created_at", "pk").first()


MAX_ORGANIZATION_ID = 2**63 - 1  # a larger number cannot be a bigint id; its text can still be a slug


def organization_id(reference: str | int) -> int | None:
    """The organization id a reference names, when it is one (digits only)."""
    number = whole_number(str(reference))
    return number if number is not None and 0 < number <= MAX_ORGANIZATION_ID else None


def organization_for(user: Any, reference: str | int | None) -> Organization:
    """Among the user's organizations, the one named by slug or id; the first one (default_organization)
    when none is named. Anything else is BAD_REQUEST on ``organization``, the same whether the
    organization exists or not, so ids cannot be probed."""
    if reference is None:
        found = default_organization(user)
        if found is None:
            raise CodedError.of(Code.BAD_REQUEST, "You belong to no organization; ask an administrator to add you "
                                "to one.", field="organization")
        return found
    mine = organizations_of(user)
    found = mine.filter(slug=str(reference)).first()
    if found is None and (pk := organization_id(reference)) is not None:
        found = mine.filter(pk=pk).first()
    if found is None:
        raise CodedError.of(Code.BAD_REQUEST, f"You are not a member of an organization '{reference}'.",
                            field="organization")
    return found


ADMIN_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)


def administered_organizations(user: Any) -> Any:
    """Organizations where the user is an owner or admin: their audit log, and in Django admin
    (for staff who are not superusers) everything of theirs."""
    if not getattr(user, "is_authenticated", False):
        return Organization.objects.none()
    return Organization.objects.filter(memberships__user=user, memberships__role__in=ADMIN_ROLES)
