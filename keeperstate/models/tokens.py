"""API tokens, hashed at rest (django-rest-knox): the row holds a SHA-512 digest and the first
characters of the token (its prefix, for people to tell tokens apart), never the token."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from knox.models import AbstractAuthToken


class ApiToken(AbstractAuthToken):
    name: models.CharField = models.CharField(max_length=100, default="", blank=True)

    class Meta:
        db_table = "api_token"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name or 'token'} ({self.token_key}…)"

    @property
    def prefix(self) -> str:
        return self.token_key

    @property
    def audit_id(self) -> str:
        return self.token_key

    @property
    def expired(self) -> bool:
        return self.expiry is not None and self.expiry <= timezone.now()
