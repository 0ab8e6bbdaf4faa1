"""The services people use to keep secrets: create or replace, delete, list names. Values go
in and never come out here: a run's vault (vault.py) decrypts the ones its nodes use, and the
demo's alert sink (keeperstate.demo.feed) decrypts its own token to check a request's bearer."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from keeperstate.accounts.models import Organization
from keeperstate.audit.log import audit
from keeperstate.secrets.crypto import encrypt
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.names import MAX_SECRETS_PER_ORGANIZATION, SecretLimit, check_name, check_value


def secret_put(
    *, organization: Organization, name: Any, value: Any, user: Any = None
) -> tuple[OrganizationSecret, bool]:
    """Create or replace a secret; (the secret, whether it was created)."""
    name = check_name(name)
    ciphertext = encrypt(check_value(value))
    updated_by = user if getattr(user, "pk", None) else None
    with transaction.atomic():
        # Lock the organization: the per-organization ceiling holds under concurrent creators.
        Organization.objects.select_for_update(no_key=True).filter(pk=organization.pk).first()
        secret = OrganizationSecret.objects.filter(organization=organization, name=name).first()
        if secret is not None:
            secret.ciphertext = ciphertext
            secret.updated_by = updated_by
            secret.save(update_fields=["ciphertext", "updated_by", "updated_at"])
            audit("secret.replace", organization=organization, target=secret, details={"name": name}, actor=user)
            return secret, False
        if OrganizationSecret.objects.filter(organization=organization).count() >= MAX_SECRETS_PER_ORGANIZATION:
            raise SecretLimit(
                f"An organization keeps at most {MAX_SECRETS_PER_ORGANIZATION} secrets; delete one you no longer use.",
                field="name",
            )
        try:
            with transaction.atomic():
                secret = OrganizationSecret.objects.create(
                    organization=organization, name=name, ciphertext=ciphertext, updated_by=updated_by
                )
        except IntegrityError:  # pragma: no cover - the organization lock makes this a guard only
            secret = OrganizationSecret.objects.get(organization=organization, name=name)
            return secret, False
        audit("secret.create", organization=organization, target=secret, details={"name": name}, actor=user)
    return secret, True


def secret_delete(*, organization: Organization, name: str, user: Any = None) -> bool:
    with transaction.atomic():
        deleted, _ = OrganizationSecret.objects.filter(organization=organization, name=name).delete()
        if deleted:
            audit("secret.delete", organization=organization, details={"name": name}, actor=user)
    return deleted > 0


def secrets_of(organizations: Any) -> Any:
    """Names and dates of the secrets of these organizations (a queryset without ciphertexts)."""
    return (
        OrganizationSecret.objects.filter(organization__in=organizations)
        .select_related("organization")
        .defer("ciphertext")
        .order_by("organization__name", "name")
    )


def secret_names(organization_id: int) -> list[str]:
    return list(
        OrganizationSecret.objects.filter(organization_id=organization_id)
        .order_by("name")
        .values_list("name", flat=True)
    )
