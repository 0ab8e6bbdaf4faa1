"""What a run may read of its organization's secrets.

A vault belongs to one run (its RunContext): it resolves ``<<@__secrets:Secrets.NAME>>`` only
in the run's own organization, loads the organization's ciphertexts once, decrypts only what is
asked for, and remembers every value it handed out, which is what the run redacts.
"""

from __future__ import annotations

from typing import Any

from keeperstate.secrets.crypto import decrypt
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.redaction import contains_secret, redact


class SecretUnavailable(Exception):
    """Why a secret reference cannot resolve (the resolver turns it into TEMPLATE_UNRESOLVED)."""


class SecretVault:
    def __init__(self, organization_id: int | None):
        self.organization_id = organization_id
        self._ciphertexts: dict[str, str] | None = None
        self.used: set[str] = set()

    def value(self, name: str) -> str:
        if self.organization_id is None:
            raise SecretUnavailable(
                "secrets belong to an organization and this action runs outside a workflow; run it in a workflow"
            )
        if self._ciphertexts is None:
            self._ciphertexts = dict(
                OrganizationSecret.objects.filter(organization_id=self.organization_id).values_list(
                    "name", "ciphertext"
                )
            )
        ciphertext = self._ciphertexts.get(name)
        if ciphertext is None:
            raise SecretUnavailable(
                f"your organization has no secret '{name}' (add it under Secrets, or check the spelling)"
            )
        value = decrypt(ciphertext, name=name)
        self.used.add(value)
        return value

    def redact(self, value: Any) -> Any:
        return redact(value, self.used)

    def contains_used(self, value: Any) -> bool:
        return contains_secret(value, self.used)
