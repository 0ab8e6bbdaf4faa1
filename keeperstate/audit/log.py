"""The audit log's one writer: ``audit(action, ...)``, called by the services where things
happen (workflows, tokens, secrets, memberships, state repairs) and by the login signals.

Who and from where default to the current request (keeperstate.audit.context), so a service
shared by the API, the builder and admin records the same row whichever called it; a worker or
a management command records no address.

Actions (stable names, for filters and the API):
  login, login_failed, logout,
  token.create, token.revoke,
  workflow.create, workflow.update, workflow.delete (soft), workflow.hard_delete,
  workflow.move (one row in each organization: keeperstate.workflows.move),
  workflow.activate, workflow.deactivate,
  secret.create, secret.replace, secret.delete,
  membership.add, membership.change, membership.remove,
  state.update, state.delete (admin repairs; state.delete also over HTTP and MCP),
  state.set, state.increment (over HTTP and MCP: keeperstate.state.clients).
"""

from __future__ import annotations

from typing import Any

from keeperstate.audit.context import current_actor
from keeperstate.audit.models import AuditEvent
from keeperstate.core.clients import client_address


def audit(
    action: str,
    *,
    organization: Any = None,
    target: Any = None,
    details: dict[str, Any] | None = None,
    actor: Any = None,
    request: Any = None,
    actor_name: str | None = None,
) -> AuditEvent:
    """Append one row. ``organization`` is an Organization or its id; ``target`` a model
    instance (type, id and text are kept, not a reference); ``details`` names what changed —
    never a secret's value or a token."""
    context = current_actor()
    if actor is None:
        actor = getattr(request, "user", None) if request is not None else (context.user if context else None)
        if not getattr(actor, "is_authenticated", False):
            actor = None
    address = client_address(request) if request is not None else (context.address if context else None)
    organization_id = getattr(organization, "pk", organization)
    return AuditEvent.objects.create(
        action=action,
        actor_id=getattr(actor, "pk", None),
        actor_name=actor_name if actor_name is not None else (actor.get_username() if actor is not None else ""),
        organization_id=organization_id,
        target_type=target._meta.model_name if target is not None else "",
        # A model may name itself for the log (a token by its prefix, never its digest).
        target_id=str(getattr(target, "audit_id", target.pk))[:100] if target is not None else "",
        target_repr=str(target)[:200] if target is not None else "",
        address=address,
        details=details or {},
    )
