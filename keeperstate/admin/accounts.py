"""Organizations with their members, memberships, and API tokens (by name and prefix only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from keeperstate.accounts.models import ApiToken, Membership, Organization
from keeperstate.admin.charts import CHART_MEDIA, gauges
from keeperstate.admin.scoping import TenantScopedAdmin, TenantScopedInline
from keeperstate.audit.log import audit
from keeperstate.state.selectors import org_usage


class MembershipInline(TenantScopedInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(TenantScopedAdmin):
    tenant_path = "pk"

    list_display = ["name", "slug", "state_usage", "created_at"]
    readonly_fields = ["state_usage"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    @property
    def media(self) -> Any:
        return super().media + CHART_MEDIA

    def has_add_permission(self, request: Any) -> bool:
        # A new organization would have no admin yet: only superusers create them.
        return self.sees_every_tenant(request) and super().has_add_permission(request)

    @admin.display(description="state budget")
    def state_usage(self, obj: Organization) -> str:
        return gauges(org_usage(obj.pk)) if obj.pk else "—"


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role", "organization"]
    search_fields = ["user__username", "organization__name"]
    autocomplete_fields = ["user", "organization"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by name and prefix only (the table holds no token). Created through the API or
    ``create_api_token``, where the token can be shown once; revoked here by deleting. Staff who
    are not superusers see their own tokens."""

    list_display = ["name", "token_key", "user", "created", "expiry"]
    list_filter = ["expiry"]
    search_fields = ["name", "token_key", "user__username"]
    fields = ["name", "token_key", "user", "created", "expiry"]
    readonly_fields = ["token_key", "user", "created"]

    def get_queryset(self, request: Any) -> Any:
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def delete_model(self, request: Any, obj: ApiToken) -> None:
        audit("token.revoke", target=obj, details={"name": obj.name, "prefix": obj.token_key, "via": "admin"})
        super().delete_model(request, obj)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        for token in queryset:
            audit("token.revoke", target=token, details={"name": token.name, "prefix": token.token_key,
                                                         "via": "admin"})
