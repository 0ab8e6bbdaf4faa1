"""Audit rows for what no service call does: logins (Django's auth signals) and memberships,
which every writer (admin inline, shell, services) changes through the model."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from keeperstate.accounts.models import Membership
from keeperstate.audit.log import audit

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
