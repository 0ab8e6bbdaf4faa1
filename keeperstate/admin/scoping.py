"""Admin per tenant: staff who are not superusers see and change only the organizations they
own or administer (Membership role owner/admin), and everything of those organizations.

``TenantScopedAdmin`` is the one mixin every tenant model's admin uses (organizations,
memberships, workflows, executions, state, audit log; secrets when they land): it scopes the
queryset (so lists, searches, autocompletes and object pages alike), limits organization and
user choices in forms, and lists only those organizations in filters. Django's model permissions
still decide *which kinds* of objects a staff user may view or change; this decides *whose*.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model

from keeperstate.accounts.access import administered_organizations
from keeperstate.accounts.models import Organization
from keeperstate.admin.users import users_in_view


class TenantScopedAdmin(admin.ModelAdmin):
    # The path from the model to its Organization ("pk" for Organization itself).
    tenant_path = "organization"

    @staticmethod
    def sees_every_tenant(request: Any) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def get_queryset(self, request: Any) -> Any:
        queryset = super().get_queryset(request)
        if self.sees_every_tenant(request):
            return queryset
        return queryset.filter(**{f"{self.tenant_path}__in": administered_organizations(request.user)})

    def formfield_for_foreignkey(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        kwargs.update(scoped_choices(db_field, request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request: Any) -> Any:
        filters = list(super().get_list_filter(request))
        if self.sees_every_tenant(request):
            return filters
        # A plain related filter lists every organization by name; list only those in view.
        return [
            (item, admin.RelatedOnlyFieldListFilter)
            if isinstance(item, str) and item.split("__")[-1] == "organization"
            else item
            for item in filters
        ]


class TenantScopedInline(admin.TabularInline):
    """Inlines under a scoped parent: organization and user choices limited the same way."""

    def formfield_for_foreignkey(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        kwargs.update(scoped_choices(db_field, request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


def scoped_choices(db_field: Any, request: Any) -> dict[str, Any]:
    """For staff who are not superusers, a foreign key to an organization offers theirs, and one to
    a user the users in their view (keeperstate.admin.users): a membership cannot bring an account
    of another organization, or a superuser, under them."""
    if TenantScopedAdmin.sees_every_tenant(request):
        return {}
    if db_field.related_model is Organization:
        return {"queryset": administered_organizations(request.user)}
    if db_field.related_model is get_user_model():
        return {"queryset": users_in_view(request.user)}
    return {}
