"""The audit log's one writer: ``audit(action, ...)``, called by the services where things
happen (workflows, tokens, secrets, memberships, state repairs) and by the login signals.

Who and from where default to the current request (keeperstate.security.context), so a service
shared by the API, the builder and admin records the same row whichever called it; a worker or
a management command records no address.

Actions (stable names, for filters and the API):
  login, login_failed, logout,
  token.create, token.revoke,
  workflow.create, workflow.update, workflow.delete (soft), workflow.hard_delete,
  workflow.activate, workflow.deactivate,
  secret.create, secret.replace, secret.delete,
  membership.add, membership.change, membership.remove,
  state.update, state.delete (admin repairs).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from keeperstate.models import AuditEvent, Membership
from keeperstate.security.client import client_address
from keeperstate.security.context import current_actor


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


# --- logins -----------------------------------------------------------------------------


@receiver(user_logged_in, dispatch_uid="audit_login")
def _logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    audit("login", actor=user, request=request)


@receiver(user_logged_out, dispatch_uid="audit_logout")
def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None:
        audit("logout", actor=user, request=request)


@receiver(user_login_failed, dispatch_uid="audit_login_failed")
def _login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    # The username tried, never the password (Django already masks it in ``credentials``).
    tried = str(credentials.get("username", ""))[:150]
    audit("login_failed", request=request, actor_name=tried, details={"username": tried})


# --- memberships: every writer (admin inline, shell, services) passes through the model ---


@receiver(pre_save, sender=Membership, dispatch_uid="audit_membership_before")
def _membership_before(sender: Any, instance: Membership, **kwargs: Any) -> None:
    previous = Membership.objects.filter(pk=instance.pk).values_list("role", flat=True).first() if instance.pk else None
    instance._audit_previous_role = previous  # type: ignore[attr-defined]


@receiver(post_save, sender=Membership, dispatch_uid="audit_membership_saved")
def _membership_saved(sender: Any, instance: Membership, created: bool, **kwargs: Any) -> None:
    previous = getattr(instance, "_audit_previous_role", None)
    if not created and previous == instance.role:
        return
    audit(
        "membership.add" if created else "membership.change",
        organization=instance.organization_id,
        target=instance,
        details={"user": instance.user.get_username(), "role": instance.role, "previousRole": previous},
    )


@receiver(post_delete, sender=Membership, dispatch_uid="audit_membership_removed")
def _membership_removed(sender: Any, instance: Membership, **kwargs: Any) -> None:
    audit(
        "membership.remove",
        organization=instance.organization_id,
        target=instance,
        details={"user": instance.user.get_username(), "role": instance.role},
    )
