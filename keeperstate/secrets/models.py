"""Organization secrets: named values (API keys, tokens, RPC URLs) a workflow may use but nobody
can read back. Only the Fernet ciphertext is stored; see keeperstate.secrets."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from keeperstate.accounts.models import Organization


class OrganizationSecret(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="secrets")
    name = models.CharField(max_length=64)
    ciphertext = models.TextField(help_text="Fernet token of the value; the plaintext is never stored.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        db_table = "organization_secret"
        ordering = ["organization", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="organization_secret_unique_name"),
            models.CheckConstraint(
                condition=models.Q(name__regex=r"^[A-Za-z0-9_]{1,64}$"), name="organization_secret_name_format"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.organization})"
