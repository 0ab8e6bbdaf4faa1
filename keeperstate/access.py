"""Who may see and change what: every API view and builder page asks here.

A user sees the workflows of the organizations it belongs to; anything else is reported as
not found (404), never as forbidden, so ids cannot be probed.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404

from keeperstate.models import Membership, Organization, Workflow, WorkflowExecution


def organizations_of(user: Any) -> Any:
    if not getattr(user, "is_authenticated", False):
        return Organization.objects.none()
    return Organization.objects.filter(memberships__user=user)


def workflows_visible_to(user: Any) -> Any:
    """Workflows of the user's organizations, soft-deleted ones excluded."""
    return Workflow.objects.alive().filter(organization__in=organizations_of(user))


def get_workflow_for(user: Any, workflow_id: Any) -> Workflow:
    try:
        return workflows_visible_to(user).get(pk=uuid.UUID(str(workflow_id)))
    except (ValueError, Workflow.DoesNotExist) as exc:
        raise Http404("No such workflow.") from exc


def get_execution_for(user: Any, execution_id: Any) -> WorkflowExecution:
    try:
        return WorkflowExecution.objects.select_related("workflow").get(
            pk=uuid.UUID(str(execution_id)), workflow__in=workflows_visible_to(user)
        )
    except (ValueError, WorkflowExecution.DoesNotExist) as exc:
        raise Http404("No such execution.") from exc


def role_in(user: Any, organization_id: int) -> str | None:
    membership = Membership.objects.filter(user=user, organization_id=organization_id).only("role").first()
    return membership.role if membership else None


def can_hard_delete(user: Any, workflow: Workflow) -> bool:
    return role_in(user, workflow.organization_id) in (Membership.Role.OWNER, Membership.Role.ADMIN)


def default_organization(user: Any) -> Organization | None:
    """The organization a new workflow goes to when the user does not name one."""
    return organizations_of(user).order_by("memberships__created_at", "pk").first()


ADMIN_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)


def administered_organizations(user: Any) -> Any:
    """Organizations where the user is an owner or admin: their audit log, and in Django admin
    (for staff who are not superusers) everything of theirs."""
    if not getattr(user, "is_authenticated", False):
        return Organization.objects.none()
    return Organization.objects.filter(memberships__user=user, memberships__role__in=ADMIN_ROLES)
