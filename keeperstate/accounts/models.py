"""Organizations, who belongs to them, and their API tokens.

API tokens are hashed at rest (django-rest-knox): the row holds a SHA-512 digest and the first
characters of the token (its prefix, for people to tell tokens apart), never the token."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from knox.models import AbstractAuthToken


class Organization(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "organization"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "membership"
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="membership_unique_user_org")]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"

    @property
    def can_hard_delete(self) -> bool:
        return self.role in (self.Role.OWNER, self.Role.ADMIN)


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
